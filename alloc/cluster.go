package alloc

import (
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// Capacity is the capacity of a heterogeneous cluster: Count[k] GPUs of
// Types[k]. Counts are float64 so that a cluster may also be a slice of time
// (for example 2.5 GPUs of a type for one round); each must be positive and
// finite.
type Capacity struct {
	Types []topology.GPUType `json:"types"`
	Count []float64          `json:"count"`
}

// NewCapacity returns a validated Capacity. It copies its arguments.
func NewCapacity(types []topology.GPUType, count []float64) (Capacity, error) {
	c := Capacity{
		Types: append([]topology.GPUType(nil), types...),
		Count: append([]float64(nil), count...),
	}
	return c, c.Validate()
}

// MaxCount is the largest GPU count of a type that a Capacity accepts:
// far beyond any cluster, and far enough below the float64 range that sums
// and products of counts and rates stay finite.
const MaxCount = 1e12

// MinCount is the smallest GPU count of a type that a Capacity accepts: a
// billionth of a GPU's time. Counts of 1e-300 broke sharing incentive in
// max-min and water filling, and 5e-197 reached CLP as a bound of 1e196.
const MinCount = 1e-9

// Validate reports an empty cluster, mismatched lengths, duplicate or empty
// type names, and counts that are not positive and finite or outside
// [MinCount, MaxCount].
func (c Capacity) Validate() error {
	if len(c.Types) == 0 {
		return gpufair.Invalid("Capacity.Types", "", gpufair.ErrEmpty, "no GPU types")
	}
	if len(c.Types) != len(c.Count) {
		return gpufair.Invalid("Capacity.Count", "", gpufair.ErrShape, "%d counts for %d GPU types", len(c.Count), len(c.Types))
	}
	seen := make(map[topology.GPUType]bool, len(c.Types))
	for k, t := range c.Types {
		if t == "" {
			return gpufair.Invalid("Capacity.Types", "", gpufair.ErrValue, "type %d has an empty name", k)
		}
		if seen[t] {
			return gpufair.Invalid("Capacity.Types", string(t), gpufair.ErrDuplicate, "listed twice")
		}
		seen[t] = true
		if n := c.Count[k]; !(n > 0) || math.IsInf(n, 0) {
			return gpufair.Invalid("Capacity.Count", string(t), gpufair.ErrValue, "count %v is not positive and finite", n)
		}
		if n := c.Count[k]; n > MaxCount {
			return gpufair.Invalid("Capacity.Count", string(t), gpufair.ErrTooLarge, "count %v is above %v", n, MaxCount)
		}
		if n := c.Count[k]; n < MinCount {
			return gpufair.Invalid("Capacity.Count", string(t), gpufair.ErrValue, "count %v is below %v", n, MinCount)
		}
	}
	return nil
}

// NumTypes returns the number of GPU types.
func (c Capacity) NumTypes() int { return len(c.Types) }

// Total returns the number of GPUs of all types.
func (c Capacity) Total() float64 {
	var s float64
	for _, n := range c.Count {
		s += n
	}
	return s
}

// TypeIndex returns the column of GPU type t.
func (c Capacity) TypeIndex(t topology.GPUType) (int, bool) {
	for k, x := range c.Types {
		if x == t {
			return k, true
		}
	}
	return -1, false
}

// CapacityOf returns the capacity of physical cluster c over types: the GPUs
// of c of each of types, in that order. A nil types means every type of c,
// in order of first appearance among its servers. It returns an
// *gpufair.InputError on Field "Cluster" for an invalid c, wrapping
// gpufair.ErrEmpty for no servers and gpufair.ErrValue otherwise, and c's
// validation error (so topology.ErrInvalid too); and an *gpufair.InputError
// wrapping gpufair.ErrUnknownType for a type c lacks (and the errors of
// Validate, such as a type listed twice).
func CapacityOf(c topology.Cluster, types []topology.GPUType) (Capacity, error) {
	if err := c.Validate(); err != nil {
		sentinel := gpufair.ErrValue
		if len(c.Servers) == 0 {
			sentinel = gpufair.ErrEmpty
		}
		return Capacity{}, gpufair.Invalid("Cluster", "", sentinel, "%w", err)
	}
	ct, cc := c.Capacity()
	if types == nil {
		types = ct
	}
	count := make([]float64, len(types))
	for k, t := range types {
		i := slices.Index(ct, t)
		if i < 0 {
			return Capacity{}, gpufair.Invalid("Types", string(t), gpufair.ErrUnknownType, "the cluster has no %q GPUs", t)
		}
		count[k] = float64(cc[i])
	}
	return NewCapacity(types, count)
}
