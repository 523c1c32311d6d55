package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/gpufair/gpufair/lp"
)

const (
	// envyTol is the envy, relative to max(1, own value), above which an
	// envy row is added to the model.
	envyTol = 1e-9
	// envyVerifyTol is the envy, relative to max(1, own value), that the
	// final check of all C·(C-1) envy rows accepts: CLP's primal tolerance.
	envyVerifyTol = 1e-7
	// envyModelRowsPerColumn: once the model would hold more envy rows than
	// this many per column, it is rebuilt with the rows whose duals are
	// nonzero (at most one per column at a vertex). 8 rather than 4: at
	// 512 users × 3 types, the cold solve of a model pruned at 4 broke its
	// rows by 1e-5, and the fallback to the full model took minutes.
	envyModelRowsPerColumn = 8
	// envyBundlesPerClass bounds the distinct envied bundles for which one
	// class adds rows in one round. Without a seed, early relaxations gave
	// every class a bundle of its own, and 32 rather than all brought
	// 1,024 users × 3 types from 17 s to 7.4 s. With the near-neighbour
	// seed (seedEnvyRows) the first relaxation is close to the optimum,
	// and 4 grows smaller models: 512 × 10 in 5.2 to 5.7 s against 7.9 to
	// 9.3 s with 32 (one run each, loaded machine).
	envyBundlesPerClass = 4
	// envyBundlesPerClassCapped is envyBundlesPerClass with caps and lean
	// rows (leanRows), where no reverse rows are added either (see
	// violatedEnvy).
	envyBundlesPerClassCapped = 2
	// envyRowsPerClassGonum bounds the rows one class adds in one round
	// with the Gonum backend: its most violated ones, without reverse
	// rows (see coopRowGen).
	envyRowsPerClassGonum = 2
	// maxEnvyRounds bounds the rounds of row generation.
	maxEnvyRounds = 2000
)

// envyPair (c, d) names class c's envy row against class d, or with d =
// capRow or floorRow c's cap row or sharing floor: the rows that row
// generation adds.
type envyPair [2]int

// solveCoopRowGen solves cooperative OEF by row generation with pruning.
// With CLP the model starts from seedEnvyRows: with two GPU types the
// neighbour rows, which imply all others (one round suffices), with more
// the rows between near neighbours; with caps where classes share job
// types, the rows of jobTypeSeed, with most bundle columns held at zero.
// Rounds solve the model warm (lp.Incremental), then add for each class c
// one violated envy row s_c·y_c ≥ s_c·y_d per distinct bundle it envies,
// with its reverse (violatedEnvy says why), the cap rows and floors that
// are broken (violatedSides), and free the held columns whose reduced
// cost is positive (attractiveColumns). With caps only the rows of a basis
// that implies the rest are candidates (capLadders.impliedEnvy). A warm dual
// simplex restart costs time quadratic in the model's rows (CLP recomputes
// its pricing weights), so once the model would exceed
// envyModelRowsPerColumn rows per column it is rebuilt from the rows with
// nonzero duals plus the new ones. Dropping rows that carry no dual keeps
// the current optimum optimal, so the objective never rises; rebuilding
// only after it has fallen makes every rebuilt row set distinct, and the
// method finite (freeing columns may raise the objective, but only C·K
// times). Rows without duals are also dropped from the loaded model
// without a rebuild, under the same rule, where their slack is basic
// (dropIdleEnvyRows): with CLP always, with the pure-Go simplex once the
// model holds more rows than columns. It ends when no row is violated and
// no held column prices in, so the point is optimal for the full LP, and
// the result is
// checked against all C·(C-1) rows. If a cold solve of a rebuilt model
// returns a point that breaks its rows (CLP without a warm basis can, by
// ~1e-6; LP-NOTES.md), or the final check fails, it falls back to the full
// model, so the answer is always the full model's optimum.
func (q *oefLP) solveCoopRowGen(ctx context.Context, set *lp.Settings) ([][]float64, coopDual, error) {
	y, d, err := q.coopRowGen(ctx, set)
	if err == nil {
		var free bool
		if free, err = q.envyFree(ctx, y, envyVerifyTol); err == nil && !free {
			err = lp.ErrViolation
		}
	}
	if errors.Is(err, lp.ErrViolation) {
		return q.solveCoopFull(ctx, set)
	}
	return y, d, err
}

func (q *oefLP) coopRowGen(ctx context.Context, set *lp.Settings) ([][]float64, coopDual, error) {
	// gonum solves every round from scratch, and its simplex, which cannot
	// be interrupted, was seen to run without end on the more degenerate
	// models that bundle and reverse rows give (random instances of five
	// users), and to fail on a singular basis from the two-type seed; it
	// keeps the plain rule of the most violated rows, with no seed, meant
	// for the tiny models that backend is for.
	gonum, lean := gonumBackend(set), leanRows(set)
	// A row dropped and broken later comes back as a second copy, found by
	// a round of its own. With the pure-Go simplex that outweighs what the
	// drop saves until the model holds more rows than columns (capped
	// 1,000 users × 10 types: 48 ms without drops, 64 ms with; six
	// instances, geometric mean); beyond, the idle rows are most of each
	// pivot's cost (lp.Incremental.DropRows), and dropping them brought
	// 1,024 users × 10 types from 45.1 to 36.9 s, and the noisy 2,000
	// jobs from 20.0 to 18.5 s.
	dropRows := func(loaded int) bool {
		return !gonum && (!lean || loaded > len(q.s)*len(q.count))
	}
	lad := q.capLadders()
	rows := q.sideRows()
	var cols *columnMask
	if !gonum {
		var err error
		if rows, cols, err = q.seedEnvyRows(ctx, set, lad); err != nil {
			return nil, coopDual{}, err
		}
	}
	inModel := make(map[envyPair]bool)
	for _, r := range rows {
		inModel[r] = true
	}
	limit := envyModelRowsPerColumn * len(q.s) * len(q.count)
	lastObj, lastDrop := math.Inf(1), math.Inf(1)
	round := 0
	for round < maxEnvyRounds {
		in, y, ids, err := q.envyModel(rows, cols, set)
		if err != nil {
			return nil, coopDual{}, err
		}
		for cold := true; round < maxEnvyRounds; round, cold = round+1, false {
			sol, err := solveEnvyModel(ctx, in, cold)
			if err != nil && ctx.Err() != nil {
				in.Close()
				return nil, coopDual{}, q.stopAt(err, sol, y, rows, ids)
			}
			if errors.Is(err, lp.ErrInfeasible) && cols.any() {
				// The columns held at zero left the floors or envy rows
				// out of reach: free them all (the full LP is feasible).
				cols.releaseAll(in, y)
				continue
			}
			if err != nil {
				in.Close()
				return nil, coopDual{}, err
			}
			x := y.Values(sol)
			envious, err := q.violatedEnvy(ctx, x, inModel, gonum, lean, lad)
			if err != nil {
				// Stopped after sol: its basis, optimal for rows, is where
				// a later solve goes on from.
				in.Close()
				return nil, coopDual{}, q.stopAt(err, sol, y, rows, ids)
			}
			add := append(q.violatedSides(x, inModel), envious...)
			var free [][2]int
			if cols.any() {
				free = q.attractiveColumns(cols, q.rowDuals(sol, rows, ids))
			}
			if len(add) == 0 && len(free) == 0 {
				in.Close()
				d := q.rowDuals(sol, rows, ids)
				d.basis = q.classBasisOf(sol.Basis, y, rows, ids)
				return x, d, nil
			}
			cols.release(in, y, free)
			if dropRows(len(rows)) && sol.Objective < lastDrop-envyTol*max(1, math.Abs(sol.Objective)) {
				lastDrop = sol.Objective
				rows, ids = dropIdleEnvyRows(in, sol, rows, ids, inModel)
			}
			if len(rows)+len(add) > limit && sol.Objective < lastObj-envyTol*max(1, math.Abs(sol.Objective)) {
				lastObj = sol.Objective
				keep := rows[:0]
				for i, r := range rows {
					if sol.RowDuals[ids[i]] != 0 {
						keep = append(keep, r)
					} else {
						delete(inModel, r)
					}
				}
				for _, r := range add {
					inModel[r] = true
				}
				rows = append(keep, add...)
				in.Close()
				round++
				break
			}
			for _, r := range add {
				inModel[r] = true
				rows = append(rows, r)
				ids = append(ids, q.addRow(in.AddConstraint, y, r))
			}
		}
	}
	return nil, coopDual{}, fmt.Errorf("%w: envy rows still violated after %d rounds", lp.ErrIterationLimit, maxEnvyRounds)
}

// envyModel returns a warm-startable model with the capacity rows and the
// rows of rows (addRow), and the row ids of the latter, with the columns
// cols holds fixed at zero, started from q.hint where there is one (only
// the first model is: a rebuilt one has other rows). Its first solve is
// cold, with presolve: CLP's cold solves without it break rows by ~1e-6
// (LP-NOTES.md).
func (q *oefLP) envyModel(rows []envyPair, cols *columnMask, set *lp.Settings) (*lp.Incremental, lp.Grid, []lp.Row, error) {
	m := lp.NewModel(lp.Maximize)
	y := q.addCapacity(m)
	q.setThroughputObjective(m, y)
	ids := make([]lp.Row, len(rows))
	for i, r := range rows {
		ids[i] = q.addRow(m.AddConstraint, y, r)
	}
	if q.hint != nil {
		m.SetBasisHint(q.hint.hint(y, rows, ids))
		q.hint = nil
	}
	in, err := lp.NewIncremental(m, coopSettings(set))
	if err == nil {
		cols.apply(in, y)
	}
	return in, y, ids, err
}

// coopSettings returns withPresolve(set) with the pure-Go simplex's
// steepest-edge pricing unless set names a pricing: cooperative OEF's LPs.
// It takes about half of Devex's iterations on their cold solves and on
// row generation's warm rounds (1,024 users × 10 types with distinct
// rows: 5,616 against 13,527 cold, 1,172 against 2,595 in the first warm
// round; docs/benchmarks/lp.md).
func coopSettings(set *lp.Settings) *lp.Settings {
	s := withPresolve(set)
	if s.DualPricing == lp.DefaultPricing {
		s.DualPricing = lp.SteepestEdgePricing
	}
	return s
}

// withPresolve returns a copy of set (nil: defaults) with CLP's presolve
// on. Cooperative OEF needs it: CLP's cold solves without it break envy
// rows by up to ~1e-5, beyond the solution check's tolerance (LP-NOTES.md;
// the full model at 128 and 256 users × 3 types of the benchmarks fails
// so).
func withPresolve(set *lp.Settings) *lp.Settings {
	var s lp.Settings
	if set != nil {
		s = *set
	}
	s.Presolve = true
	return &s
}

// violatedEnvy returns the envy rows to add: for each class c, in class
// order, one row (c, d) per distinct bundle that c envies by more than
// envyTol (at most envyBundlesPerClass, the most envied first), against
// one class d holding it (without caps the last: envyTargets), each
// followed by its reverse
// (d, c); rows in skip, or already chosen, are left out, and with caps
// every row outside lad's basis (capLadders.impliedEnvy: the rest follow
// from it). Bundles are told apart by c's value of them. With caps and
// lean, it takes envyBundlesPerClassCapped bundles and no reverse rows.
// With plain, it returns instead each class's envyRowsPerClassGonum most
// violated rows, without reverse rows.
//
// Why one row per envied bundle: the optimum pools users on a few bundles
// (docs/benchmarks/oef.md), and a class that envies one member of a pool
// envies them all; rows against a single member let the LP move that
// member alone, and the next round finds the next one (117 rounds at 256
// users × 3 types with the two most violated rows per class). Why the
// reverse row: c and d end up pooled or adjacent, and the row keeping d
// from envying c is then needed as well. Together they bring 256 × 3 down
// to 4 to 8 rounds. With caps, classes of one job type are pooled with
// each other more than with their neighbours' (at BenchmarkOEFCapped's
// optimum, 18 rows within ladders and 171 across carry multipliers), and
// reverse rows mostly stay idle: without them, and with 2 bundles rather
// than 4, the pure-Go simplex solves that benchmark's six seeds in 56 ms
// against 78 ms (geometric means, with jobTypeSeed's forward seed); CLP
// prefers them (leanRows). Any choice of rows keeps row generation exact.
func (q *oefLP) violatedEnvy(ctx context.Context, y [][]float64, skip map[envyPair]bool, plain, lean bool, lad *capLadders) ([]envyPair, error) {
	var rows []envyPair
	bundles, capLean := envyBundlesPerClass, lad != nil && lean
	if capLean {
		bundles = envyBundlesPerClassCapped
	}
	chosen := make(map[envyPair]bool)
	add := func(r envyPair) {
		if !skip[r] && !chosen[r] && lad.impliedEnvy(r[0], r[1]) {
			chosen[r] = true
			rows = append(rows, r)
		}
	}
	var worst, picked []envy
	others := q.envyTargets(y)
	for c, s := range q.s {
		if err := checkEvery(ctx, c); err != nil {
			return nil, err
		}
		own := dot(s, y[c])
		tol := envyTol * max(1, own)
		worst = worst[:0]
		consider := func(d int) {
			if v := q.envyScale(c, d)*dot(s, y[d]) - own; v > tol && !skip[envyPair{c, d}] {
				worst = append(worst, envy{d, v})
			}
		}
		if lad != nil {
			for _, d := range lad.basis[c] {
				consider(d)
			}
		} else {
			for _, d := range others {
				if d != c {
					consider(d)
				}
			}
		}
		if plain {
			sort.Slice(worst, func(i, j int) bool { return worst[i].above(worst[j]) })
			for _, e := range worst[:min(len(worst), envyRowsPerClassGonum)] {
				add(envyPair{c, e.d})
			}
			continue
		}
		picked = mostEnvied(picked[:0], worst, bundles, tol)
		for _, e := range picked {
			add(envyPair{c, e.d})
			if !capLean {
				add(envyPair{e.d, c})
			}
		}
	}
	return rows, nil
}

// envy is class d's bundle with the envy v a class has for it.
type envy struct {
	d int
	v float64
}

// above orders envies by value, largest first, then by class.
func (e envy) above(f envy) bool {
	if e.v != f.v {
		return e.v > f.v
	}
	return e.d < f.d
}

// mostEnvied appends to picked the envies of worst that sorting it (above)
// and scanning it in order would pick: up to n, each more than gap below
// the one picked before, so that bundles of equal value count once. n
// selections in O(n·len(worst)) rather than a sort: early relaxations at
// 4,096 classes leave thousands of envied bundles a class.
func mostEnvied(picked, worst []envy, n int, gap float64) []envy {
	for len(picked) < n {
		best := -1
		for i, e := range worst {
			if len(picked) > 0 && !(picked[len(picked)-1].v-e.v > gap) {
				continue
			}
			if best < 0 || e.above(worst[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		picked = append(picked, worst[best])
	}
	return picked
}

// envyTargets returns the classes that the envy scans compare each class
// against: the last (highest-numbered) holder of each distinct bundle of
// y, as a class envies every holder of a bundle alike; with caps every
// class, as its envy scale differs from holder to holder (envyScale). At
// the noisy 2,000 jobs' optimum, 445 to 578 distinct bundles among 2,000
// classes.
//
// Why the last holder: violatedEnvy adds its rows against it, so a pool's
// rows hang on that class, and on the noisy 2,000 jobs the exact solve
// took 8.2–8.9 s with the last holder against 11.8–12.2 s with the first
// (alternated). A scheduler's re-solve whose basis (OEFSettings.WarmBasis)
// loses the job a pool's rows hang on starts far from the optimum; with
// the last holder that is rarely an old job, and rounds with a job drawn
// at random departing took 0.17–0.19 s against 0.31–0.40 s, but rounds
// in which the oldest job departs 0.67–0.79 s against 0.46–0.53 s
// (docs/benchmarks/oef.md).
func (q *oefLP) envyTargets(y [][]float64) []int {
	if q.cap != nil {
		return identityClasses(len(y)).rep
	}
	g := groupRows(len(y), func(c int) []float64 { return y[c] })
	for c, k := range g.of {
		if !q.isGhost(c) || q.isGhost(g.rep[k]) {
			g.rep[k] = c // the last holder, a ghost only if no other holds it
		}
	}
	return g.rep
}

// envyFree reports whether every class envies no other by more than tol
// relative to max(1, own value): all C·(C-1) rows, in O(C²·K), with ctx
// checked every ctxClasses classes (0.18 s at 4,096 classes × 10 types).
func (q *oefLP) envyFree(ctx context.Context, y [][]float64, tol float64) (bool, error) {
	others := q.envyTargets(y)
	for c, s := range q.s {
		if err := checkEvery(ctx, c); err != nil {
			return false, err
		}
		own := dot(s, y[c])
		for _, d := range others {
			if q.envyScale(c, d)*dot(s, y[d])-own > tol*max(1, own) {
				return false, nil
			}
		}
	}
	return true, nil
}

// leanRows reports whether capped cooperative OEF's row generation adds
// few rows a round (violatedEnvy, jobTypeSeed): with the pure-Go simplex,
// whose warm rounds cost little beyond their pivots. A warm restart of
// CLP's dual simplex costs time that grows with the rows loaded, so it
// gains from fewer rounds of more rows: on BenchmarkOEFCapped's six seeds
// CLP took 69 ms (geometric mean) with reverse rows, 4 bundles a class and
// seed rows in both directions, against 75 to 82 ms lean, while pure Go
// took 45 ms lean against 70 to 78 ms.
func leanRows(set *lp.Settings) bool { return backendOf(set) == lp.PureGo }
