package alloc

import (
	"context"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// cellSeedTolerance is the ε of the cells whose solution seeds exact
// cooperative OEF (cellSeedRows): classes whose speedups agree within a
// factor √1.05 on every type. At 2,000 jobs of 20 job types with 2% noise
// it gives 81 cells, solved in about 50 ms.
const cellSeedTolerance = 0.05

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
// cells of cellSeedTolerance (ratioCells), the cells' LP is solved by row
// generation, and each of its envy rows with a multiplier, cell A against
// cell B, becomes a row for every class of A against B's leader. It
// returns nil where the cells would not halve the classes, or where the
// cells' LP fails (a seed is only a start; row generation stays exact
// without it).
//
// Why. On noisy profiles (every row distinct, but near one of a few job
// types) the rows that carry the optimum's multipliers are mostly between
// classes of different job types: at 2,000 jobs of 20 job types with 2%
// noise, 1,827 of 2,818 are between classes more than 100 apart in
// distance order, which the near-neighbour seed does not hold. Without
// them the first relaxation is 24% above the optimum and row generation
// takes 70 rounds to close it; the cells' solution says which job types
// envy which, and with its rows the first relaxation is within 0.2%. Rows
// against the leader alone, not every member of B, keep the seed small
// (4,020 rows here): rows against a weighted mean of B's bundles (one row
// implied by B's envy rows) made a first relaxation within 0.04% whose
// cold solve took 70 s.
func (q *oefLP) cellSeedRows(ctx context.Context, set *lp.Settings) ([]envyPair, error) {
	if q.cap != nil {
		return nil, nil
	}
	cells, ok := ratioCells(q.s, cellSeedTolerance, nil, len(q.s)/2)
	if !ok {
		return nil, nil
	}
	sub := &oefLP{s: make([][]float64, cells.numClasses()), w: make([]float64, cells.numClasses()), count: q.count}
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
