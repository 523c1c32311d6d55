package alloc

import (
	"context"
	"fmt"
	"sort"

	"github.com/gpufair/gpufair/lp"
)

const (
	// envyTol is the envy, relative to max(1, own value), above which an
	// envy row is added to the model.
	envyTol = 1e-9
	// envyRowsPerClass bounds the envy rows added for one class in one
	// round: its most violated ones.
	envyRowsPerClass = 4
	// maxEnvyRounds bounds the rounds of row generation.
	maxEnvyRounds = 1000
)

// solveCoopRowGen solves cooperative OEF by row generation: it starts from
// the capacity rows alone and, in rounds, adds for each class its most
// violated envy rows s_c·y_c ≥ s_c·y_d, re-solving warm (lp.Incremental),
// until no envy row outside the model is violated. The optimum of a
// relaxation that satisfies every row is the optimum of the full model.
func (q *oefLP) solveCoopRowGen(ctx context.Context, set *lp.Settings) ([][]float64, error) {
	m := lp.NewModel(lp.Maximize)
	y := q.addBundles(m)
	q.setThroughputObjective(m, y)
	in, err := lp.NewIncremental(m, set)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	added := make(map[[2]int]bool)
	for range maxEnvyRounds {
		sol, err := in.Solve(ctx)
		if err != nil {
			return nil, err
		}
		x := y.Values(sol)
		rows := q.violatedEnvy(x, added)
		if len(rows) == 0 {
			return x, nil
		}
		for _, r := range rows {
			added[r] = true
			in.AddConstraint("envy", q.envyTerms(y, r[0], r[1]), lp.GE, 0)
		}
	}
	return nil, fmt.Errorf("%w: envy rows still violated after %d rounds", lp.ErrIterationLimit, maxEnvyRounds)
}

// violatedEnvy returns, for each class c, up to envyRowsPerClass pairs
// (c, d) not in skip whose envy s_c·y_d - s_c·y_c exceeds envyTol, the
// most violated first, in class order.
func (q *oefLP) violatedEnvy(y [][]float64, skip map[[2]int]bool) [][2]int {
	var rows [][2]int
	type envy struct {
		d int
		v float64
	}
	var worst []envy
	for c, s := range q.s {
		own := dot(s, y[c])
		tol := envyTol * max(1, own)
		worst = worst[:0]
		for d := range y {
			if d == c {
				continue
			}
			if v := dot(s, y[d]) - own; v > tol && !skip[[2]int{c, d}] {
				worst = append(worst, envy{d, v})
			}
		}
		sort.SliceStable(worst, func(i, j int) bool { return worst[i].v > worst[j].v })
		for _, e := range worst[:min(len(worst), envyRowsPerClass)] {
			rows = append(rows, [2]int{c, e.d})
		}
	}
	return rows
}
