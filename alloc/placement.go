package alloc

import (
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// Unconsolidated is the suffix of the worker type that runs a gang spread
// over servers, as in Gavel's data ("v100_unconsolidated").
const Unconsolidated = "_unconsolidated"

// PlacementProblem is a Problem made placement-sensitive (Gavel §3.1): each
// GPU type k is split into two worker types, k itself for gangs consolidated
// on as few servers as possible (rates of the original Problem) and
// k+Unconsolidated for gangs spread over servers (rates from the
// unconsolidated matrix, usually lower for communication-bound jobs). The
// consolidated pool holds Consolidated[k] of the Count_k GPUs (for example
// the GPUs in servers with enough free slots), the unconsolidated pool the
// rest; a pool of zero GPUs is left out.
//
// Every policy works on the expanded Problem unchanged (its time fractions,
// Σ over both worker types ≤ 1, and its capacity rows per pool are Gavel's
// "two different worker types"), and Fold maps the allocation back to the
// physical types. Properties are those of the policy on the expanded
// problem; the split of a type into pools is the caller's decision.
type PlacementProblem struct {
	*Problem
	physical Capacity
	of       []int // of[w] is the physical type of worker type w
}

// NewPlacementProblem returns the placement-sensitive form of p.
// unconsolidated must have p's rows and types; consolidated has one entry
// per type in [0, Count_k].
func NewPlacementProblem(p *Problem, unconsolidated *speedup.Matrix, consolidated []float64) (*PlacementProblem, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if unconsolidated == nil {
		return nil, gpufair.Invalid("Placement.Unconsolidated", "", gpufair.ErrEmpty, "no throughput matrix")
	}
	rows, types := unconsolidated.Dims()
	if rows != len(p.Jobs) || types != p.Capacity.NumTypes() {
		return nil, gpufair.Invalid("Placement.Unconsolidated", "", gpufair.ErrShape, "%d×%d rates for %d jobs × %d types", rows, types, len(p.Jobs), p.Capacity.NumTypes())
	}
	if err := checkAligned("Placement.Consolidated", consolidated, p.typeNames(), nonNegative); err != nil {
		return nil, err
	}
	pp := &PlacementProblem{physical: p.Capacity}
	var wtypes []topology.GPUType
	var count []float64
	var cols [][2]int // (matrix 0 consolidated / 1 unconsolidated, type)
	for k, t := range p.Capacity.Types {
		c := consolidated[k]
		if c > p.Capacity.Count[k] {
			return nil, gpufair.Invalid("Placement.Consolidated", string(t), gpufair.ErrValue, "%v GPUs of %v", c, p.Capacity.Count[k])
		}
		for side, n := range []float64{c, p.Capacity.Count[k] - c} {
			if n <= 0 {
				continue
			}
			name := t
			if side == 1 {
				name += Unconsolidated
			}
			wtypes, count, cols = append(wtypes, name), append(count, n), append(cols, [2]int{side, k})
			pp.of = append(pp.of, k)
		}
	}
	values := make([][]float64, len(p.Jobs))
	for i := range values {
		values[i] = make([]float64, len(cols))
		for w, c := range cols {
			m := p.Throughputs
			if c[0] == 1 {
				m = unconsolidated
			}
			values[i][w] = m.At(i, c[1])
		}
	}
	tp, err := speedup.New(p.JobIDs(), wtypes, values)
	if err != nil {
		return nil, err
	}
	// The jobs' own Rates, if set, follow the physical types: give them
	// the worker types' rows.
	jobs := slices.Clone(p.Jobs)
	for i := range jobs {
		if jobs[i].Rates != nil {
			jobs[i].Rates = values[i]
		}
	}
	ep, err := NewProblem(Capacity{Types: wtypes, Count: count}, p.Tenants, jobs, tp)
	if err != nil {
		return nil, err
	}
	pp.Problem = ep
	return pp, nil
}

// Fold returns a, an allocation over the worker types, as GPUs of the
// physical types (consolidated and unconsolidated pools summed). A nil
// PlacementProblem, or one not made by NewPlacementProblem, is an
// *gpufair.InputError wrapping gpufair.ErrEmpty.
func (pp *PlacementProblem) Fold(a *Allocation) (*Allocation, error) {
	if pp == nil || pp.Problem == nil || len(pp.of) != len(pp.Capacity.Types) {
		return nil, gpufair.Invalid("PlacementProblem", "", gpufair.ErrEmpty, "not made by NewPlacementProblem")
	}
	if err := a.Validate(pp.Capacity); err != nil {
		return nil, err
	}
	out := NewAllocation(a.Rows, pp.physical)
	for i, b := range a.GPUs {
		for w, x := range b {
			out.GPUs[i][pp.of[w]] += math.Max(x, 0)
		}
	}
	return out, nil
}
