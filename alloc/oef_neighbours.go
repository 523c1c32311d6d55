package alloc

import (
	"context"
	"errors"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// seedEnvyRows returns the rows cooperative OEF's row generation starts
// from, and the bundle columns it holds at zero until they price in (nil:
// none). With caps, where classes share job types, those of jobTypeSeed;
// otherwise every cap row and sharing floor (sideRows) and, with two GPU
// types, the neighbour rows in speedup-ratio order, which imply all others
// (twoTypeEnvyRows), with more, the rows between near neighbours
// (neighbourEnvyRows) and, where near-identical rows form cells, the rows
// of the cells' solution (cellSeedRows); with q.unseeded, the side rows
// alone. Warm rows (OEFSettings.WarmRows) join the job types' seed, and
// with more than two types replace the near-neighbour and cells' rows
// (warmSeed). Any seed keeps row generation exact; a good one saves the
// rounds in which a relaxation far from the optimum grows a large model.
func (q *oefLP) seedEnvyRows(ctx context.Context, set *lp.Settings, lad *capLadders) ([]envyPair, *columnMask, error) {
	if lad != nil && jobTypeSeedPays(len(lad.ladder), len(q.s)) {
		rows, cols, err := q.jobTypeSeed(ctx, set, lad)
		return appendNew(rows, q.warm), cols, err
	}
	rows := q.sideRows()
	if q.unseeded {
		return rows, nil, nil
	}
	if len(q.count) == 2 {
		return append(rows, q.twoTypeEnvyRows()...), nil, nil
	}
	if len(q.warm) > 0 {
		warm, err := q.warmSeed(ctx, neighboursPerClass(len(q.count)))
		return append(rows, warm...), nil, err
	}
	near, err := q.neighbourEnvyRows(ctx, neighboursPerClass(len(q.count)), nil)
	if err != nil {
		return nil, nil, err
	}
	cell, err := q.cellSeedRows(ctx, set)
	if err != nil {
		// Stopped while the cells were solved. The near rows are a seed a
		// later solve can go on from (OEFStopped); without them, a solve
		// stopped here every time (a scheduler's round whose budget ends
		// before the first LP) would start over every time and never end.
		return nil, nil, &coopStop{rows: appendNew(rows, near), err: err}
	}
	return appendNew(rows, append(near, cell...)), nil, nil
}

// appendNew appends to rows each row of more that neither holds before it.
func appendNew(rows, more []envyPair) []envyPair {
	seen := make(map[envyPair]bool, len(rows)+len(more))
	for _, r := range rows {
		seen[r] = true
	}
	for _, r := range more {
		if !seen[r] {
			seen[r] = true
			rows = append(rows, r)
		}
	}
	return rows
}

// neighboursPerClass is the number of near neighbours each class is tied
// to by envy rows with K GPU types: about one per dimension of the space
// of speedup ratios (K−1), and at least 4. Measured with the pure-Go
// simplex (one run each, exact and certified), against the 2(K−1) this
// was before, whose seed model's cold solve took most of the time:
// 1,024 users × 10 types 23.4 s with 9 against 37 s with 18 (27.1 s with
// 10, 24.5 s with 4), 512 × 10 4.5 against 5.9 s, 256 × 10 0.59 against
// 0.84 s; the noisy 2,000 jobs over 4 types 14.6 s with 4 against 18.5 to
// 19.3 s with 6, but 48 s with 3; 1,024 × 3 1.74 s with 4 against 1.97 s
// with 3. With CLP, K−1 and 2(K−1) took about the same at 1,024 × 10, and
// 4 at 256 × 10 seeded a model whose cold solve broke its rows.
func neighboursPerClass(k int) int { return max(4, k-1) }

// neighbourEnvyRows returns, for each class of of (nil: every class),
// the envy rows in both directions with its n nearest classes by the
// Euclidean distance of log speedups (ties by class order), without
// repeats, in the order of of.
//
// Why near neighbours. With two types the rows between neighbours in
// speedup-ratio order imply all others (twoTypeEnvyRows). With more there
// is no such order, but the optimum pools classes on a few bundles and the
// rows that carry its duals are mostly between classes of similar speedups:
// at 512 users × 10 types, 57% of them are among the 12 nearest, 85% among
// the 30 nearest. The first relaxation is then close to the optimum (0.03%
// above it at 256 × 10, against 8% without rows), and the rest are found
// in a few rounds.
//
// Cost: O(C²·(K + n)) for C classes: minutes at 100,000 distinct rows, so
// it checks ctx every ctxClasses classes (it ran past a 300 ms deadline
// for 20 minutes).
func (q *oefLP) neighbourEnvyRows(ctx context.Context, n int, of []int) ([]envyPair, error) {
	nc := len(q.s)
	n = min(n, nc-1)
	if n <= 0 {
		return nil, nil
	}
	logs := make([][]float64, nc)
	for c, s := range q.s {
		logs[c] = make([]float64, len(s))
		for k, r := range s {
			// Speedups are positive on the slowest type; a zero elsewhere
			// is far from every positive value.
			logs[c][k] = math.Log(max(r, 1e-300))
		}
	}
	type near struct {
		d    int
		dist float64
	}
	best := make([]near, 0, n+1)
	seen := make(map[envyPair]bool, 2*n*nc)
	rows := make([]envyPair, 0, 2*n*nc)
	add := func(r envyPair) {
		if !seen[r] {
			seen[r] = true
			rows = append(rows, r)
		}
	}
	if of == nil {
		of = make([]int, nc)
		for c := range of {
			of[c] = c
		}
	}
	for i, c := range of {
		if err := checkEvery(ctx, i); err != nil {
			return nil, err
		}
		best = best[:0]
		for d := range nc {
			if d == c {
				continue
			}
			var dist float64
			for k, x := range logs[c] {
				dist += (x - logs[d][k]) * (x - logs[d][k])
			}
			if len(best) == n && dist >= best[n-1].dist {
				continue
			}
			// Insert in order of distance, then class (d ascends).
			i := len(best)
			best = append(best, near{d, dist})
			for ; i > 0 && best[i-1].dist > dist; i-- {
				best[i] = best[i-1]
			}
			best[i] = near{d, dist}
			best = best[:min(len(best), n)]
		}
		for _, b := range best {
			add(envyPair{c, b.d})
			add(envyPair{b.d, c})
		}
	}
	return rows, nil
}

// ctxClasses is how many classes OEF's O(C²) scans (neighbourEnvyRows,
// violatedEnvy, envyFree, maxEnvy) pass between context checks: at
// 100,000 classes, each class's scan takes about a millisecond.
const ctxClasses = 64

// checkEvery returns ctx's error at every ctxClasses-th class i, and nil
// at the others.
func checkEvery(ctx context.Context, i int) error {
	if i%ctxClasses != 0 {
		return nil
	}
	return ctx.Err()
}

// dropIdleEnvyRows drops from the loaded model in the envy rows (rows[i]
// at ids[i]) with a zero dual whose slack is basic (lp.Incremental.DropRows),
// and returns the rows and ids left; dropped rows leave inModel, so that
// they can come back when violated.
//
// Why: the near-neighbour seed is mostly rows the optimum does not need
// (at 1,024 users × 10 types, 1,657 of about 17,000 carry a dual at the
// end), and a warm restart of CLP's dual simplex costs time that grows with
// the rows loaded, as does each pivot of the pure-Go simplex while they
// hold entries. Dropping rows without duals keeps the current optimum
// optimal, so the objective never rises; coopRowGen drops only after it
// has fallen, as it rebuilds, which keeps the method finite.
func dropIdleEnvyRows(in *lp.Incremental, sol *lp.Solution, rows []envyPair, ids []lp.Row, inModel map[envyPair]bool) ([]envyPair, []lp.Row) {
	var idle []lp.Row
	for _, id := range ids {
		if sol.RowDuals[id] == 0 {
			idle = append(idle, id)
		}
	}
	gone := make(map[lp.Row]bool)
	for _, id := range in.DropRows(idle) {
		gone[id] = true
	}
	if len(gone) == 0 {
		return rows, ids
	}
	keepRows, keepIDs := rows[:0], ids[:0]
	for i, id := range ids {
		if gone[id] {
			delete(inModel, rows[i])
			continue
		}
		keepRows, keepIDs = append(keepRows, rows[i]), append(keepIDs, id)
	}
	return keepRows, keepIDs
}

// solveEnvyModel solves in, and once more, warm from the basis it ended
// at, when the solve was cold (the model's first) or the solution broke
// its rows (lp.ErrViolation). CLP's cold solves with presolve can leave
// envy rows broken by ~7e-6 on the near-neighbour seed models (256 users
// × 3 types), and values off their bounds by ~1e-8 (see solveWarmTwice);
// the warm re-solve computes the basic solution afresh and mends it with a
// few pivots.
func solveEnvyModel(ctx context.Context, in *lp.Incremental, cold bool) (*lp.Solution, error) {
	sol, err := in.Solve(ctx)
	if cold && err == nil || errors.Is(err, lp.ErrViolation) {
		return in.Solve(ctx)
	}
	return sol, err
}
