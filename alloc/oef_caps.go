package alloc

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// OEF with demand caps. Class c may hold at most cap_c GPUs (of any mix)
// per unit of weight: Σ_k y_ck ≤ cap_c. The paper's formulations assume
// every user can use any amount; with caps they are read as follows (the
// doc of OEF states the properties this gives).
//
// Non-cooperative, progressive filling: raise one common level t for the
// classes not yet frozen (maximise t subject to s_c·y_c ≥ t for those, ≥
// L_c for the frozen, caps and capacity); a class whose cap row is tight at
// the optimum and whose value cannot exceed t even alone (the others kept at
// their levels) freezes at L_c = t; if none does, contention, not a cap,
// limits t, and every class left freezes at t, as in the paper. Each round
// freezes a class, so at most C rounds. The levels are read off each
// round's point repaired to meet caps and capacity exactly (heldLevels), so
// that t never falls from round to round. Finally every bundle is scaled
// down to exactly its level: equal levels, as in (9), for all but the
// classes a cap holds below.
//
// Cooperative: maximise throughput subject to caps, the capped envy rows
// s_c·y_c ≥ r_cd·s_c·y_d with r_cd = min(1, ĉ_c/ĉ_d), and the capped
// sharing-incentive rows s_c·y_c ≥ f_c (capSharingFloor). ĉ_c is c's
// effective cap per unit of weight, min(cap_c, Σ_k m_k / π_min), π_min the
// smallest virtual user's weight: c compares
// its bundle with d's scaled to its own demand, a bundle it could use
// (plain envy-freeness would hold a one-GPU user's envy of a thirty-GPU
// bundle against everyone). Without the floor rows sharing incentive no
// longer follows from envy-freeness, as total demand may leave GPUs idle;
// the capped equal split (every class its best ĉ_c GPUs of m/W) meets every
// row, so the LP stays feasible.

const (
	// capTightTol is the relative slack within which a cap row counts as
	// tight.
	capTightTol = 1e-7
	// levelTol is the relative gain above the common level below which a
	// class counts as unable to rise.
	levelTol = 1e-7
	// crumbTol is the share of a bundle below which a type's part of it is
	// solver noise, and dropped.
	crumbTol = 1e-6
)

// addCaps adds the cap rows Σ_k y_ck ≤ cap_c of capped classes and, where
// set, the sharing-incentive rows s_c·y_c ≥ floor_c.
func (q *oefLP) addCaps(m *lp.Model, y lp.Grid) {
	for c, b := range q.cap {
		if !math.IsInf(b, 1) {
			m.AddConstraint("cap", y.RowTerms(c, allOnes(len(q.count))), lp.LE, b)
		}
	}
	for c, f := range q.floor {
		if f > 0 {
			m.AddConstraint("sharing", y.RowTerms(c, q.s[c]), lp.GE, f)
		}
	}
}

// capRow and floorRow, as the second entry of an envyPair, name the first
// entry's cap row and sharing floor (the rows of addCaps), so that row
// generation handles them as it does envy rows.
const (
	capRow   = -1
	floorRow = -2
)

// sideRows returns, as envyPairs, the rows addCaps adds: the cap rows of
// capped classes, then the positive sharing floors.
func (q *oefLP) sideRows() []envyPair {
	var rows []envyPair
	for c, b := range q.cap {
		if !math.IsInf(b, 1) {
			rows = append(rows, envyPair{c, capRow})
		}
	}
	for c, f := range q.floor {
		if f > 0 {
			rows = append(rows, envyPair{c, floorRow})
		}
	}
	return rows
}

// violatedSides returns the cap rows and sharing floors of sideRows that y
// breaks by more than envyTol, relative to max(1, the bound), leaving out
// those in skip.
//
// Why lazily: at 1,000 users × 10 types with 1 to 4 jobs each, 3 of 156
// cap rows and 4 of 156 floors carry a dual at the optimum, and a warm
// restart of CLP's dual simplex costs time that grows with the rows
// loaded.
func (q *oefLP) violatedSides(y [][]float64, skip map[envyPair]bool) []envyPair {
	var rows []envyPair
	for _, r := range q.sideRows() {
		c := r[0]
		if skip[r] {
			continue
		}
		if r[1] == capRow && sum(y[c]) > q.cap[c]+envyTol*max(1, q.cap[c]) ||
			r[1] == floorRow && dot(q.s[c], y[c]) < q.floor[c]-envyTol*max(1, q.floor[c]) {
			rows = append(rows, r)
		}
	}
	return rows
}

// effectiveCap returns ĉ_c: c's cap per unit of weight, at most capLimit,
// more than any virtual user can hold.
func (q *oefLP) effectiveCap(c int) float64 {
	return min(q.cap[c], q.capLimit)
}

// envyScale returns r_cd, the factor by which class c scales d's bundle
// before comparing: 1 without caps.
func (q *oefLP) envyScale(c, d int) float64 {
	if q.cap == nil {
		return 1
	}
	cd := q.effectiveCap(d)
	if cd == 0 {
		return 1 // d holds nothing
	}
	return min(1, q.effectiveCap(c)/cd)
}

// setSharingFloors sets floor_c, the value to c of its best ĉ_c GPUs of the
// equal split m/W (fractional knapsack, fastest types first).
func (q *oefLP) setSharingFloors() {
	W := q.totalWeight()
	q.floor = make([]float64, len(q.s))
	order := make([]int, len(q.count))
	for c, s := range q.s {
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s[b], s[a]) })
		left := q.effectiveCap(c)
		for _, k := range order {
			take := min(q.count[k]/W, left)
			q.floor[c] += s[k] * take
			left -= take
		}
	}
}

// solveNonCoopCapped solves capped non-cooperative OEF by progressive
// filling (see above).
func (q *oefLP) solveNonCoopCapped(ctx context.Context, set *lp.Settings) ([][]float64, error) {
	C := len(q.s)
	level := make([]float64, C)
	frozen := make([]bool, C)
	left := C
	var y [][]float64
	for left > 0 {
		var err error
		// The LP's own optimum is read off the repaired point instead.
		y, _, err = q.cappedLevel(ctx, set, level, frozen, -1)
		if err != nil {
			return nil, err
		}
		t := q.heldLevels(y, level, frozen)
		froze := false
		for c := range C {
			if frozen[c] || sum(y[c]) < q.cap[c]-capTightTol*max(1, q.cap[c]) {
				continue
			}
			_, best, err := q.cappedLevel(ctx, set, withLevel(level, frozen, t), frozen, c)
			if errors.Is(err, lp.ErrInfeasible) {
				// The others' levels, met to the solver's tolerance,
				// read as just out of reach: c cannot rise.
				best, err = t, nil
			}
			if err != nil {
				return nil, err
			}
			if best <= t+levelTol*max(1, t) {
				frozen[c], level[c], froze = true, t, true
				left--
			}
		}
		if !froze {
			for c := range C {
				if !frozen[c] {
					frozen[c], level[c] = true, t
				}
			}
			left = 0
		}
	}
	for c, b := range y {
		// Drop the crumbs the levels' slack lets a vertex carry, then
		// meet the level exactly (repair clips what this puts over).
		total := sum(b)
		for k := range b {
			if b[k] < crumbTol*total {
				b[k] = 0
			}
		}
		if v := dot(q.s[c], b); v > 0 {
			for k := range b {
				b[k] *= level[c] / v
			}
		}
	}
	return y, nil
}

// heldLevels repairs y to meet caps and capacity exactly, lowers each
// frozen class's level to what its repaired bundle gives, where that is
// less, and returns the least value of a class not frozen.
//
// Why: a class nearly indifferent between two types, frozen at its cap,
// turns an overshoot of its cap within the solver's tolerance (7e-9) into a
// gain for the others of that times the inverse of its rates' gap (1e-4
// from rates 1 and 0.99986). Classes frozen at that gain could not be held
// there by the next round, whose common level came out below theirs. With
// the levels the repaired point holds, each round's LP has that point as a
// feasible one, so the common level cannot fall from round to round.
func (q *oefLP) heldLevels(y [][]float64, level []float64, frozen []bool) float64 {
	q.repair(y)
	t := math.Inf(1)
	for c, b := range y {
		v := dot(q.s[c], b)
		if frozen[c] {
			level[c] = min(level[c], v)
		} else {
			t = min(t, v)
		}
	}
	return t
}

// withLevel returns level with every class not frozen at t.
func withLevel(level []float64, frozen []bool, t float64) []float64 {
	out := slices.Clone(level)
	for c, f := range frozen {
		if !f {
			out[c] = t
		}
	}
	return out
}

// cappedLevel solves one LP of progressive filling. With only < 0 it
// maximises the common level t of the classes not frozen, the frozen ones
// kept at their levels; otherwise it maximises class only's value, every
// other class kept at its level. It returns the bundles and the optimum.
func (q *oefLP) cappedLevel(ctx context.Context, set *lp.Settings, level []float64, frozen []bool, only int) ([][]float64, float64, error) {
	m := lp.NewModel(lp.Maximize)
	y := q.addBundles(m)
	var t lp.Var
	if only < 0 {
		t = m.AddVar("t", 0, lp.Inf, q.totalWeight())
	}
	for c, s := range q.s {
		switch {
		case c == only:
			for k, x := range s {
				m.SetObjective(y.At(c, k), x)
			}
		case only < 0 && !frozen[c]:
			m.AddConstraint("level", append(y.RowTerms(c, s), lp.Term{Var: t, Coef: -1}), lp.GE, 0)
		case level[c] > 0:
			// No slack: a class nearly indifferent between two types
			// trades a slack of ε for a gain of ε times a large ratio
			// to others, which would then rise above a level they
			// cannot hold.
			m.AddConstraint("level", y.RowTerms(c, s), lp.GE, level[c])
		}
	}
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, 0, err
	}
	yv := y.Values(sol)
	if only < 0 {
		return yv, sol.Value(t), nil
	}
	return yv, dot(q.s[only], yv[only]), nil
}
