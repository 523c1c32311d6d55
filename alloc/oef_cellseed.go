package alloc

import (
	"context"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// cellSeedTolerances are the ε cellSeedRows tries, finest first: the
// cells of the first that halves the classes seed the exact model. At
// 2,000 jobs of 20 job types with 2% noise, 0.01 leaves over 1,000 cells
// and 0.02 about 220 to 460; one level of cells seeded at 0.02 or 0.03
// gave 6 to 10 s, at 0.05 (81 cells) 16 to 28 s, one run each on a loaded
// machine. Distinct rows (speedups 1 to 10 drawn independently) form no
// cells at any of them.
var cellSeedTolerances = []float64{0.005, 0.01, 0.02, 0.04, 0.08, 0.16}

// cellProbe is how many classes, from the first, ratioCells tries before
// all of them: on distinct rows every ε fails on the probe, at a cost of
// O(cellProbe²·K) each instead of O(C²·K).
const cellProbe = 1024

// ratioCells groups the rows speed into cells, in order: row v joins the
// first cell whose leader (its first member) has speedups within a factor
// √(1+ε) of v's on every type and same(leader, v) (nil: always), and leads
// a new cell otherwise. It gives up, returning false, once more than limit
// cells have formed.
//
// Cost: O(V·L·K) for V rows, L cells and K types.
func ratioCells(speed [][]float64, eps float64, same func(lead, v int) bool, limit int) (rowClasses, bool) {
	h := math.Log1p(eps) / 2 // log of √(1+ε)
	rc := rowClasses{of: make([]int, len(speed))}
	var lead [][]float64
	for v, s := range speed {
		lv := make([]float64, len(s))
		for k, r := range s {
			lv[k] = math.Log(max(r, 1e-300)) // a zero speedup matches zero only
		}
		c := -1
		for i, l := range lead {
			if same != nil && !same(rc.rep[i], v) {
				continue
			}
			near := true
			for k, x := range l {
				if math.Abs(x-lv[k]) > h {
					near = false
					break
				}
			}
			if near {
				c = i
				break
			}
		}
		if c < 0 {
			if len(lead) == limit {
				return rc, false
			}
			c = len(lead)
			lead = append(lead, lv)
			rc.rep = append(rc.rep, v)
			rc.size = append(rc.size, 0)
		}
		rc.of[v] = c
		rc.size[c]++
	}
	return rc, true
}

// cellSeedRows returns envy rows for exact cooperative OEF (without caps)
// from the solution of a coarser instance: the classes are grouped into
// cells (ratioCells) of the finest of cellSeedTolerances, from q.cellFloor
// on, that halves them, the cells' LP is solved by row generation (seeded
// the same way by cells of at least twice that ε, and so on while cells
// form), and each of its envy rows with a multiplier, cell A against cell
// B, becomes a row for every class of A against B's leader. It returns nil
// where no ε halves the classes, or where the cells' LP fails (a seed is
// only a start; row generation stays exact without it).
//
// Why. On noisy profiles (every row distinct, but near one of a few job
// types) the rows that carry the optimum's multipliers are mostly between
// classes of different job types: at 2,000 jobs of 20 job types with 2%
// noise, 1,827 of 2,818 are between classes more than 100 apart in
// distance order, which the near-neighbour seed does not hold. Without
// them the first relaxation is 24% above the optimum and row generation
// takes 70 rounds to close it; the cells' solution says which job types
// envy which. On BenchmarkOEFCooperativeScale's noisy instance the cells
// go 2,000 → 225 (ε = 0.02) → 44 → 20, the seed gives a first relaxation
// 0.012% above the optimum, and the exact solve takes 8.3 to 9.5 s of CPU
// against 18.6 to 20.4 s without it (docs/benchmarks/oef.md). Rows
// against the leader alone, not every member of B, keep the seed small:
// rows against a weighted mean of B's bundles (one row, implied by B's
// envy rows) made a tighter first relaxation whose cold solve took 70 s.
func (q *oefLP) cellSeedRows(ctx context.Context, set *lp.Settings) ([]envyPair, error) {
	if q.cap != nil {
		return nil, nil
	}
	var cells rowClasses
	eps, ok := 0.0, false
	for _, eps = range cellSeedTolerances {
		if eps < q.cellFloor {
			continue
		}
		probe := q.s[:min(len(q.s), cellProbe)]
		if _, ok = ratioCells(probe, eps, nil, len(probe)/2); !ok {
			continue
		}
		if cells, ok = ratioCells(q.s, eps, nil, len(q.s)/2); ok {
			break
		}
	}
	if !ok {
		return nil, nil
	}
	sub := &oefLP{s: make([][]float64, cells.numClasses()), w: make([]float64, cells.numClasses()), count: q.count, cellFloor: 2 * eps}
	members := make([][]int, cells.numClasses())
	for c, v := range cells.rep {
		sub.s[c] = q.s[v]
	}
	for v, c := range cells.of {
		sub.w[c] += q.w[v]
		members[c] = append(members[c], v)
	}
	_, d, err := sub.coopRowGen(ctx, set)
	if err != nil {
		return nil, ctx.Err()
	}
	var rows []envyPair
	for _, f := range d.flows {
		for _, c := range members[f.c] {
			rows = append(rows, envyPair{c, cells.rep[f.d]})
		}
	}
	return rows, nil
}
