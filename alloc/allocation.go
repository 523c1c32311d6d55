package alloc

import (
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// FeasTol is the absolute slack allowed when checking that an allocation
// stays within capacity (Σ_i GPUs[i][k] ≤ Count[k]) and non-negative. LP
// solvers return vertices accurate to about 1e-9 relative; this leaves room
// for that and no more.
const FeasTol = 1e-7

// Allocation is a fractional allocation of a cluster to rows (users or jobs).
// GPUs[i][k] is the number of GPUs of Types[k] that row Rows[i] holds,
// averaged over time: 0.5 means one GPU half of the time, or half a GPU's
// time share. Gavel's time fractions X_mk convert as GPUs = X_mk · gang_m.
//
// In JSON it is {"rows": [...], "types": [...], "gpus": [[...], ...]}.
type Allocation struct {
	Rows  []string           `json:"rows"`
	Types []topology.GPUType `json:"types"`
	GPUs  [][]float64        `json:"gpus"`
}

// NewAllocation returns a zero allocation of len(rows) rows over the types of c.
func NewAllocation(rows []string, c Capacity) *Allocation {
	a := &Allocation{
		Rows:  append([]string(nil), rows...),
		Types: append([]topology.GPUType(nil), c.Types...),
		GPUs:  make([][]float64, len(rows)),
	}
	for i := range a.GPUs {
		a.GPUs[i] = make([]float64, len(c.Types))
	}
	return a
}

// Bundle returns row i's GPUs per type, or nil if there is no row i (or a
// is nil). The slice is the allocation's own.
func (a *Allocation) Bundle(i int) []float64 {
	if a == nil || i < 0 || i >= len(a.GPUs) {
		return nil
	}
	return a.GPUs[i]
}

// RowIndex returns the index of the row labelled r, or −1 and false when
// there is none (or a is nil).
func (a *Allocation) RowIndex(r string) (int, bool) {
	if a == nil {
		return -1, false
	}
	for i, x := range a.Rows {
		if x == r {
			return i, true
		}
	}
	return -1, false
}

// Used returns the GPUs of each type allocated in total, nil for a nil
// allocation. Amounts beyond Types in a malformed row (which Validate
// refuses) are not counted.
func (a *Allocation) Used() []float64 {
	if a == nil {
		return nil
	}
	used := make([]float64, len(a.Types))
	for _, b := range a.GPUs {
		for k, x := range b[:min(len(b), len(used))] {
			used[k] += x
		}
	}
	return used
}

// Utilities returns each row's value for its own bundle under vals[i]. A
// nil allocation has no rows. It panics if len(vals) differs from the
// number of rows, as the signature has no error to report it with.
func (a *Allocation) Utilities(vals []Valuation) []float64 {
	if a == nil {
		if len(vals) != 0 {
			panic(fmt.Sprintf("alloc: %d valuations for a nil allocation", len(vals)))
		}
		return nil
	}
	if len(vals) != len(a.GPUs) {
		panic(fmt.Sprintf("alloc: %d valuations for %d rows", len(vals), len(a.GPUs)))
	}
	u := make([]float64, len(vals))
	for i, v := range vals {
		u[i] = v.Value(a.GPUs[i])
	}
	return u
}

// Validate checks the allocation against c: matching types, a bundle of the
// right length per row, finite non-negative amounts (within FeasTol) and no
// type used beyond its count (within FeasTol, relative to the count).
func (a *Allocation) Validate(c Capacity) error {
	if a == nil {
		return gpufair.Invalid("Allocation", "", gpufair.ErrEmpty, "nil allocation")
	}
	if err := c.Validate(); err != nil {
		return err
	}
	if len(a.Types) != len(c.Types) {
		return gpufair.Invalid("Allocation.Types", "", gpufair.ErrShape, "%d types for a cluster of %d", len(a.Types), len(c.Types))
	}
	for k, t := range a.Types {
		if t != c.Types[k] {
			return gpufair.Invalid("Allocation.Types", string(t), gpufair.ErrShape, "column %d is %q, the cluster's is %q", k, t, c.Types[k])
		}
	}
	if err := a.checkRows(); err != nil {
		return err
	}
	for k, u := range a.Used() {
		if u > c.Count[k]*(1+FeasTol)+FeasTol {
			return gpufair.Invalid("Allocation.GPUs", string(c.Types[k]), gpufair.ErrValue, "%v GPUs allocated of %v", u, c.Count[k])
		}
	}
	return nil
}

// ValidateFor checks a as Validate does against p's capacity, and that it
// has one row per job of p, in p's order as every Policy returns them. A
// scheduler calls it on what a Policy it did not write returns, before
// indexing the rows by p's jobs. A nil p is an *gpufair.InputError
// wrapping gpufair.ErrEmpty.
func (a *Allocation) ValidateFor(p *Problem) error {
	if p == nil {
		return gpufair.Invalid("Problem", "", gpufair.ErrEmpty, "nil problem")
	}
	if err := a.Validate(p.Capacity); err != nil {
		return err
	}
	if len(a.GPUs) != len(p.Jobs) {
		return gpufair.Invalid("Allocation.GPUs", "", gpufair.ErrShape, "%d rows for %d jobs", len(a.GPUs), len(p.Jobs))
	}
	return nil
}

// checkRows checks one label and one finite, non-negative (within FeasTol)
// amount per type of a.Types for every row.
func (a *Allocation) checkRows() error {
	if len(a.Rows) != len(a.GPUs) {
		return gpufair.Invalid("Allocation.GPUs", "", gpufair.ErrShape, "%d rows for %d labels", len(a.GPUs), len(a.Rows))
	}
	for i, b := range a.GPUs {
		if len(b) != len(a.Types) {
			return gpufair.Invalid("Allocation.GPUs", a.Rows[i], gpufair.ErrShape, "%d amounts for %d types", len(b), len(a.Types))
		}
		for k, x := range b {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < -FeasTol {
				return gpufair.Invalid("Allocation.GPUs", a.Rows[i], gpufair.ErrValue, "%v GPUs of %q", x, a.Types[k])
			}
		}
	}
	return nil
}
