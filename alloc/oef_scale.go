package alloc

import (
	"context"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// The scale of cooperative OEF's LP. Multiplying every weight by a and
// dividing every bundle by a leaves the LP the same up to the scale of its
// columns: the capacity rows Σ_c w_c·y_ck ≤ m_k and the objective keep
// their values, and each envy row s_c·y_c − s_c·y_d ≥ 0 is divided by a, so
// its multiplier is multiplied by a. The pure-Go simplex does not
// equilibrate a model whose coefficients lie within [1e-8, 1e8] (lp's
// scale.go: geometric scaling made these LPs slower still), and its path
// depends on that scale: the exact noisy 2,000 jobs took 16.7 to 25.5 s
// with every weight 1 and 9.9 to 12.1 s with every weight 1/128, and
// 2,048 users × 4 types with distinct rows 39.1 and 43.9 s against 15.4
// and 13.3 s (docs/benchmarks/oef.md). What sets the path is how large the
// envy rows' activities are against the capacities', which R = K·s̄/Σ_c w_c
// measures for K types of mean speedup s̄: a class holding its share has
// s_c·y_c ≈ s̄·Σ_k m_k/Σ_c w_c, against capacities of about Σ_k m_k/K.
// With R from 0.2 to 3 the solves took within 30% of each other; at R =
// 0.005 to 0.03 (every weight 1) up to 2.9 times as long.

// oefActivityTarget is the Σ_c w_c/(K·s̄) that weightScale aims at, 1/R:
// R = 0.5, about the middle, in logarithms, of the range where the solves
// were fastest.
const oefActivityTarget = 2

// weightScale returns the power of two a by which solveScaled multiplies
// q's weights: the one that brings Σ_c a·w_c nearest to
// oefActivityTarget·K·s̄ in logarithms (1 where the weights sum to zero or
// the speedups do). Powers of two keep the scaling exact.
func (q *oefLP) weightScale() float64 {
	var sw, ss float64
	for c, s := range q.s {
		sw += q.w[c]
		for _, x := range s {
			ss += x
		}
	}
	k := float64(len(q.count))
	if !(sw > 0) || !(ss > 0) || len(q.s) == 0 {
		return 1
	}
	mean := ss / float64(len(q.s)) / k
	e := math.Round(math.Log2(oefActivityTarget * k * mean / sw))
	return math.Exp2(max(-60, min(60, e)))
}

// scaled reports whether solveScaled scales q's weights with set.
func (q *oefLP) scaled(set *lp.Settings) bool {
	return q.weightScale() != 1 && q.cap == nil && backendOf(set) == lp.PureGo
}

// coopSolver is a method of solving cooperative OEF over q.
type coopSolver func(q *oefLP, ctx context.Context, set *lp.Settings) ([][]float64, coopDual, error)

// solveScaled runs solve over q with its weights multiplied by
// weightScale, and returns the bundles and the dual of q itself: bundles
// multiplied by the scale, envy multipliers divided by it, prices as they
// are. With caps (whose rows and floors scale too), and with a backend
// other than the pure-Go simplex, it runs solve over q as it is: CLP
// scales the model itself, and scaled took the noisy 2,000 jobs 23.7 and
// 24.8 s against 9.7 and 10.2 s. A stop (coopStop) names rows and a
// basis, which do not depend on the scale.
func (q *oefLP) solveScaled(ctx context.Context, set *lp.Settings, solve coopSolver) ([][]float64, coopDual, error) {
	if !q.scaled(set) {
		return solve(q, ctx, set)
	}
	a := q.weightScale()
	sq := *q
	sq.w = make([]float64, len(q.w))
	for c, w := range q.w {
		sq.w[c] = a * w
	}
	y, d, err := solve(&sq, ctx, set)
	q.hint = sq.hint // a solve takes its hint once (envyModel)
	if err != nil {
		return nil, coopDual{}, err
	}
	for _, yc := range y {
		for k := range yc {
			yc[k] *= a
		}
	}
	for i := range d.flows {
		d.flows[i].v /= a
	}
	return y, d, nil
}
