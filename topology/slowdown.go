package topology

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
)

// Slowdown is the placement slowdown S(G) of Themis' equation 1: the factor,
// at least 1, by which a job's iteration time grows when its GPUs are spread
// out. Index it by Locality. The zero value is not usable; start from
// DefaultSlowdown() and override the levels an app has profiled.
type Slowdown [3]float64

// DefaultSlowdown returns Themis' crude starting estimates (footnote 3): 1
// on one machine, 1.1 across machines, 1.3 across racks. Profiled values
// replace them per app.
func DefaultSlowdown() Slowdown { return Slowdown{1, 1.1, 1.3} }

// ErrSlowdown reports a Slowdown that Validate refuses.
var ErrSlowdown = errors.New("topology: invalid slowdown")

// Validate reports a level that is NaN, infinite or below 1, or a level
// below a more local one (spreading out never speeds a job up), with an
// error wrapping ErrSlowdown and gpufair.ErrValue (and ErrInvalid, as
// before ErrSlowdown was added).
func (s Slowdown) Validate() error {
	bad := func(format string, args ...any) error {
		return wrapAll(fmt.Sprintf("%v: "+format, append([]any{ErrSlowdown}, args...)...), ErrSlowdown, gpufair.ErrValue, ErrInvalid)
	}
	for l, x := range s {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 1 {
			return bad("%v at %v is not finite and at least 1", x, Locality(l))
		}
		if l > 0 && x < s[l-1] {
			return bad("%v at %v is below %v at %v", x, Locality(l), s[l-1], Locality(l-1))
		}
	}
	return nil
}

// At returns the slowdown at locality l. A level beyond CrossRack counts as
// CrossRack, one below SameServer as SameServer (Locality.Valid tells them
// apart).
func (s Slowdown) At(l Locality) float64 { return s[min(max(l, SameServer), CrossRack)] }

// OfCounts returns S(G) for an allocation of counts[s] GPUs on Servers[s],
// a negative count taken as 0. It returns the error of
// Cluster.LocalityOfCounts if len(counts) differs from len(c.Servers).
func (s Slowdown) OfCounts(c Cluster, counts []int) (float64, error) {
	l, err := c.LocalityOfCounts(counts)
	if err != nil {
		return 0, err
	}
	return s[l], nil
}
