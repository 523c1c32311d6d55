package alloc

import (
	"context"
	"errors"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// MaxTotalThroughput through its dual. Pricing each GPU of type k at
// p_k ≥ 0, class c's n_c jobs (gang g_c, rates T_c) each earn
// max(0, max_k T_ck − g_c·p_k), and LP duality gives the optimum as
//
//	min { D(p) : p ≥ 0 },  D(p) = Σ_c n_c·max(0, max_k T_ck − g_c·p_k) + Σ_k M_k·p_k,
//
// M_k the count of type k. D is convex and piecewise linear, the maximum
// of the linear functions a_σ + (M − b_σ)·p over choices σ of one type
// (or none) per class, so Kelley's cutting planes solve it in K
// dimensions, as for non-cooperative OEF (oef_noncoop.go): the LP over the
// cuts so far is a lower bound, D at its solution an upper one, and the
// choice that attains D there the next cut. Complementary slackness then
// fixes every class with a single best choice (all its time on that type,
// or none), and a small LP splits the few classes tied between types. The
// recovered throughput is checked against the upper bound (a duality
// certificate); if the check fails, the full LP is solved instead.
//
// Why: the full LP has one time row per class and K columns each; with
// distinct rows at 20,000 jobs × 4 types the pure-Go simplex took 2.3 s,
// pivoting nearly every column in. The dual has K variables whatever the
// number of jobs, and each cut costs O(C·K).

// throughputDualMinClasses is the number of classes from which
// MaxTotalThroughput solves its dual: below it the full LP is as fast.
const throughputDualMinClasses = 2000

// throughputMaxCuts bounds the cutting-plane rounds before MaxTotalThroughput
// falls back to the full LP.
const throughputMaxCuts = 3000

// throughputGapTol is the relative gap between the cutting-plane bounds at
// which the dual is taken as solved: below the certificate's certTol, and
// above the master LP's roundoff (at 20,000 jobs it stalled at 2e-10).
const throughputGapTol = 1e-9

// throughputTieTols are the margins, relative to a class's highest rate,
// within which types tie at the prices found, tried in turn until the
// recovery is certified. Prices within the gap of the optimum, not at it,
// leave margins off by more than roundoff, the more so the more classes:
// at 5,000 jobs × 4 types 1e-5 was needed, at 20,000 1e-4 (1e-7 fell 2e-5
// short, 1e-5 5e-5). A larger margin only makes the recovery LP larger (at
// 1e-2, 1,174 of 20,000 classes), never the result wrong: it is certified.
var throughputTieTols = []float64{1e-7, 1e-5, 1e-4, 1e-3, 1e-2}

// throughputDual holds the data of the dual: per class its size, gang and
// rates, and the counts.
type throughputDual struct {
	size, gang []float64
	rate       [][]float64
	count      []float64
}

// newThroughputDual returns the dual of MaxTotalThroughput's LP over p's
// classes rc.
func newThroughputDual(p *Problem, rc rowClasses) *throughputDual {
	d := &throughputDual{count: p.Capacity.Count, gang: p.classGangs(rc)}
	for c, i := range rc.rep {
		d.size = append(d.size, float64(rc.size[c]))
		d.rate = append(d.rate, p.Throughputs.Row(i))
	}
	return d
}

// choose returns, for prices p, each class's best type (−1 for none) and
// D(p).
func (d *throughputDual) choose(p []float64, choice []int) float64 {
	var D float64
	for k, m := range d.count {
		D += m * p[k]
	}
	for c, r := range d.rate {
		best, at := 0.0, -1
		for k, t := range r {
			if e := t - d.gang[c]*p[k]; t > 0 && e > best {
				best, at = e, k
			}
		}
		choice[c] = at
		D += d.size[c] * best
	}
	return D
}

// cut returns the linear function of the choices: z ≥ a + Σ_k coef_k·p_k.
func (d *throughputDual) cut(choice []int) (a float64, coef []float64) {
	coef = append([]float64(nil), d.count...)
	for c, k := range choice {
		if k >= 0 {
			a += d.size[c] * d.rate[c][k]
			coef[k] -= d.size[c] * d.gang[c]
		}
	}
	return a, coef
}

// prices runs the cutting planes, stabilised in the in-out manner (a cut
// at the midpoint of the master's point and the best prices so far
// besides the one at the point). It returns the best prices found, D
// there, and whether the bounds met.
func (d *throughputDual) prices(ctx context.Context, set *lp.Settings) (best []float64, upper float64, ok bool, err error) {
	K := len(d.count)
	// Beyond the highest rate per GPU no class takes a type: the master's
	// prices are bounded there.
	var pmax float64
	for c, r := range d.rate {
		for _, t := range r {
			pmax = math.Max(pmax, t/d.gang[c])
		}
	}
	m := lp.NewModel(lp.Minimize)
	price := make([]lp.Var, K)
	for k := range price {
		price[k] = m.AddVar("p", 0, pmax, 0)
	}
	z := m.AddVar("z", 0, lp.Inf, 1)
	in, err := lp.NewIncremental(m, set)
	if err != nil {
		return nil, 0, false, err
	}
	defer in.Close()
	choice := make([]int, len(d.rate))
	addCut := func(p []float64) float64 {
		D := d.choose(p, choice)
		a, coef := d.cut(choice)
		terms := []lp.Term{{Var: z, Coef: 1}}
		for k, x := range coef {
			terms = append(terms, lp.Term{Var: price[k], Coef: -x})
		}
		in.AddConstraint("cut", terms, lp.GE, a)
		return D
	}
	best = make([]float64, K)
	upper = addCut(best)
	for range throughputMaxCuts {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		sol, err := in.Solve(ctx)
		if err != nil {
			return nil, 0, false, err
		}
		lower := sol.Objective
		if upper-lower <= throughputGapTol*math.Max(1, math.Abs(upper)) {
			return best, upper, true, nil
		}
		p := make([]float64, K)
		mid := make([]float64, K)
		for k, v := range price {
			p[k] = sol.Value(v)
			mid[k] = (p[k] + best[k]) / 2
		}
		for _, q := range [][]float64{p, mid} {
			if D := addCut(q); D < upper {
				upper, best = D, q
			}
		}
	}
	return best, upper, false, nil
}

// recover returns the class time fractions (X_ck summed over the class)
// that complementary slackness with prices p allows, types within tieTol
// of a class's best margin (relative to its highest rate) counting as
// tied, the tied classes split by a small LP, and their total throughput.
func (d *throughputDual) recover(ctx context.Context, set *lp.Settings, p []float64, tieTol float64) ([][]float64, float64, error) {
	K := len(d.count)
	left := append([]float64(nil), d.count...)
	x := make([][]float64, len(d.rate))
	var total float64
	type tie struct {
		c     int
		types []int
	}
	var ties []tie
	for c, r := range d.rate {
		x[c] = make([]float64, K)
		best, scale := 0.0, 0.0
		for k, t := range r {
			if t > 0 {
				best = math.Max(best, t-d.gang[c]*p[k])
				scale = math.Max(scale, t)
			}
		}
		tol := tieTol * scale
		var types []int
		for k, t := range r {
			if t > 0 && t-d.gang[c]*p[k] >= best-tol {
				types = append(types, k)
			}
		}
		switch {
		case best > tol && len(types) == 1:
			k := types[0]
			x[c][k] = d.size[c]
			left[k] -= d.gang[c] * d.size[c]
			total += d.size[c] * r[k]
		case len(types) > 0:
			ties = append(ties, tie{c, types})
		}
	}
	for k, l := range left {
		if l < -tieTol*d.count[k] {
			return nil, 0, errThroughputDual
		}
		left[k] = max(l, 0)
	}
	if len(ties) == 0 {
		return x, total, nil
	}
	m := lp.NewModel(lp.Maximize)
	vars := make([][]lp.Var, len(ties))
	use := make([][]lp.Term, K)
	for i, t := range ties {
		var time []lp.Term
		for _, k := range t.types {
			v := m.AddVar("X", 0, lp.Inf, d.rate[t.c][k])
			vars[i] = append(vars[i], v)
			time = append(time, lp.Term{Var: v, Coef: 1})
			use[k] = append(use[k], lp.Term{Var: v, Coef: d.gang[t.c]})
		}
		m.AddConstraint("time", time, lp.LE, d.size[t.c])
	}
	for k, terms := range use {
		if len(terms) > 0 {
			m.AddConstraint("capacity", terms, lp.LE, left[k])
		}
	}
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, 0, err
	}
	for i, t := range ties {
		for j, k := range t.types {
			x[t.c][k] = sol.Value(vars[i][j])
		}
	}
	return x, total + sol.Objective, nil
}

// errThroughputDual says that the dual's prices did not lead to a feasible
// recovery; MaxTotalThroughput then solves the full LP.
var errThroughputDual = errors.New("alloc: max-total-throughput: prices leave a type over its count")

// solve returns the optimal class time fractions, or ok false where the
// method did not certify them or an LP of its failed (the caller then
// solves the full LP); its only errors are ctx's.
func (d *throughputDual) solve(ctx context.Context, set *lp.Settings) ([][]float64, bool, error) {
	p, upper, met, err := d.prices(ctx, set)
	for _, tol := range throughputTieTols {
		if err != nil || !met || ctx.Err() != nil {
			break
		}
		if x, total, err := d.recover(ctx, set, p, tol); err == nil && total >= upper*(1-certTol) {
			return x, true, nil
		}
	}
	return nil, false, ctx.Err()
}
