package alloc

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// The decomposition below solves a levelProblem exactly without building
// its N fairness and N time rows. The classes are linked only by the K
// capacity rows and the shared level t, and at prices p on the K types a
// class's cheapest way to reach a value v is v·min_k p_k/rate_ck: one type,
// the one with the most value per price. So, as long as its time row does
// not bind, a class's allocation is a mixture of single-type assignments,
// and all classes together are a mixture of "patterns" (one type per
// class), each using a K-vector of GPUs that grows linearly with t.
// Dantzig–Wolfe column generation over patterns then needs a master LP of
// only K+2 rows:
//
//	maximise t  subject to  Σ_j B_j·λ_j + Σ_j S_j·ν_j + (explicit classes) ≤ count
//	                        Σ_j λ_j = 1,  Σ_j ν_j = t
//
// where pattern j's base vector B_j gives every class its base value and its
// slope vector S_j its slope·t, both through the pattern's types. We solve
// the master's dual (variables p, ψ, θ; each pattern is a row, so CLP adds
// it warm), price a new pattern at the dual prices (O(N·K)), and stop when
// no pattern costs less than the master's price of the level, θ, and of the
// bases, ψ. A class whose time row the mixture breaks becomes explicit: it
// keeps its own rows and variables in the master, and the patterns skip it.
//
// Optimality certificate: the master is a restriction of the full LP (each
// mixture is a feasible bundle per class), and at convergence the master's
// dual, extended to the pattern classes by μ_c = size_c·min_k p_k/rate_ck and
// σ_c = 0, is feasible for the full LP's dual with the same objective, so
// the master's optimum is the full LP's (to the cut tolerance cutTol).

// cutTol is the relative amount by which a new pattern must undercut the
// master's prices to be added. CLP solves the master to about 1e-9; ten
// times less leaves the level within 1e-9 relative of the optimum.
const cutTol = 1e-10

// capTol is the relative excess over a class's gang (its time row, in
// GPUs) beyond which a pattern class is made explicit.
const capTol = 1e-9

// maxPatterns bounds the column generation; it is far above what any
// instance tried needs (tens of patterns), and reaching it is an error.
const maxPatterns = 5000

// errNoConvergence reports a column generation that reached maxPatterns.
var errNoConvergence = errors.New("alloc: max-min decomposition did not converge")

// decomp is the state of one decomposed solve.
type decomp struct {
	lv       *levelProblem
	start    [][]float64 // a feasible bundle per class meeting its base, or nil when every base is 0
	explicit []bool
	assign   [][]uint8 // assign[j][c] is pattern j's type for class c
	seen     map[uint64]bool
	// prices and mu are the last dual master's p and explicit μ.
	prices []float64
	mu     map[int]float64
}

// solveLevelDecomposed solves lv by the column generation described above.
// start, when some base is positive, must be a feasible allocation (per
// class) that meets every base (the previous water-filling round's).
func solveLevelDecomposed(ctx context.Context, lv *levelProblem, start [][]float64, set *lp.Settings) (*levelSolution, error) {
	d := &decomp{lv: lv, start: start, explicit: make([]bool, lv.numClasses())}
	p := make([]float64, lv.numTypes())
	for k, n := range lv.count {
		p[k] = 1 / n
	}
	d.addPattern(d.price(p))
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := d.generate(ctx, set); err != nil {
			return nil, err
		}
		sol, err := d.recover(ctx, set)
		if err != nil {
			return nil, err
		}
		if !d.breakCaps(sol.y) {
			return sol, nil
		}
		d.seen = nil // the patterns' vectors change with the explicit set
	}
}

// price returns, for every class, the type with the most value per price
// (ties: the higher rate, then the lower index), or 0 for explicit classes.
func (d *decomp) price(p []float64) []uint8 {
	a := make([]uint8, d.lv.numClasses())
	for c, r := range d.lv.rate {
		if d.explicit[c] {
			continue
		}
		best := -1
		for k, x := range r {
			if x <= 0 {
				continue
			}
			if best < 0 {
				best = k
				continue
			}
			// p_k/x < p_best/r_best, compared without dividing.
			lhs, rhs := p[k]*r[best], p[best]*x
			if lhs < rhs || (lhs == rhs && x > r[best]) {
				best = k
			}
		}
		a[c] = uint8(best)
	}
	return a
}

// addPattern records a pattern unless it is already known, and reports
// whether it was new.
func (d *decomp) addPattern(a []uint8) bool {
	h := fnv.New64a()
	h.Write(a)
	key := h.Sum64()
	if d.seen == nil {
		d.seen = make(map[uint64]bool)
		for _, b := range d.assign {
			h.Reset()
			h.Write(b)
			d.seen[h.Sum64()] = true
		}
	}
	if d.seen[key] {
		return false
	}
	d.seen[key] = true
	d.assign = append(d.assign, a)
	return true
}

// vectors returns pattern a's base and slope vectors over the pattern
// classes.
func (d *decomp) vectors(a []uint8) (base, slope []float64) {
	lv := d.lv
	base, slope = make([]float64, lv.numTypes()), make([]float64, lv.numTypes())
	for c, k := range a {
		if d.explicit[c] {
			continue
		}
		f := lv.size[c] / lv.rate[c][k]
		base[k] += f * lv.base[c]
		slope[k] += f * lv.slope[c]
	}
	return base, slope
}

// startVector returns the GPUs the start allocation uses, scaled per
// pattern class to meet its base exactly, and those scaled bundles.
func (d *decomp) startVector() (use []float64, bundles [][]float64) {
	lv := d.lv
	use = make([]float64, lv.numTypes())
	bundles = make([][]float64, lv.numClasses())
	for c, y := range d.start {
		if d.explicit[c] || lv.base[c] == 0 {
			continue
		}
		f := lv.base[c] / lv.value(c, y)
		bundles[c] = make([]float64, len(y))
		for k, x := range y {
			bundles[c][k] = x * f
			use[k] += lv.size[c] * x * f
		}
	}
	return use, bundles
}

// families reports which pattern families the master needs: bases when a
// pattern class has a positive base, slopes when one has a positive slope.
func (d *decomp) families() (hasBase, hasSlope bool) {
	for c := range d.lv.rate {
		if !d.explicit[c] {
			hasBase = hasBase || d.lv.base[c] > 0
			hasSlope = hasSlope || d.lv.slope[c] > 0
		}
	}
	return hasBase, hasSlope
}

// dualMaster is the master's dual, kept loaded for warm row additions:
//
//	minimise Σ_k count_k·p_k − ψ + Σ_E (gang_c·σ_c − base_c·μ_c)
//	subject to B_j·p − ψ ≥ 0, S_j·p − θ ≥ 0     (each pattern j)
//	           θ + Σ_E slope_c·μ_c ≥ 1            (the level's column)
//	           size_c·p_k − rate_ck·μ_c + σ_c ≥ 0  (each explicit class c, type k)
//	           p, μ, σ ≥ 0; ψ, θ free
type dualMaster struct {
	inc      *lp.Incremental
	p        []lp.Var
	psi, th  lp.Var
	mu       map[int]lp.Var
	hasBase  bool
	hasSlope bool
}

// generate runs column generation to convergence for the current explicit
// set.
func (d *decomp) generate(ctx context.Context, set *lp.Settings) error {
	lv := d.lv
	hasBase, hasSlope := d.families()
	m := lp.NewModel(lp.Minimize)
	dm := &dualMaster{hasBase: hasBase, hasSlope: hasSlope, mu: map[int]lp.Var{}}
	dm.p = make([]lp.Var, lv.numTypes())
	for k, n := range lv.count {
		dm.p[k] = m.AddVar("p", 0, lp.Inf, n)
	}
	if hasBase {
		dm.psi = m.AddVar("psi", -lp.Inf, lp.Inf, -1)
	}
	if hasSlope {
		dm.th = m.AddVar("theta", -lp.Inf, 1, 0) // θ > 1 only tightens the cuts
	}
	level := []lp.Term{}
	if hasSlope {
		level = append(level, lp.Term{Var: dm.th, Coef: 1})
	}
	for c := range lv.rate {
		if !d.explicit[c] {
			continue
		}
		mu := m.AddVar("mu", 0, lp.Inf, -lv.base[c])
		sigma := m.AddVar("sigma", 0, lp.Inf, lv.gang[c])
		dm.mu[c] = mu
		if lv.slope[c] > 0 {
			level = append(level, lp.Term{Var: mu, Coef: lv.slope[c]})
		}
		for k, r := range lv.rate[c] {
			if r > 0 {
				m.AddConstraint("y", []lp.Term{{Var: dm.p[k], Coef: lv.size[c]}, {Var: mu, Coef: -r}, {Var: sigma, Coef: 1}}, lp.GE, 0)
			}
		}
	}
	m.AddConstraint("level", level, lp.GE, 1)
	if hasBase && d.start != nil {
		use, _ := d.startVector()
		dm.addCut(m.AddConstraint, use, dm.psi)
	}
	for _, a := range d.assign {
		base, slope := d.vectors(a)
		dm.addPatternRows(m.AddConstraint, base, slope)
	}
	inc, err := lp.NewIncremental(m, set)
	if err != nil {
		return err
	}
	defer inc.Close()
	dm.inc = inc
	for len(d.assign) < maxPatterns {
		if err := ctx.Err(); err != nil {
			return err
		}
		sol, err := inc.Solve(ctx)
		if err != nil {
			return fmt.Errorf("alloc: max-min master (%d patterns, %d explicit classes): %w", len(d.assign), len(dm.mu), err)
		}
		p := make([]float64, len(dm.p))
		for k, v := range dm.p {
			p[k] = sol.Value(v)
		}
		d.prices = p
		d.mu = make(map[int]float64, len(dm.mu))
		for c, v := range dm.mu {
			d.mu[c] = sol.Value(v)
		}
		a := d.price(p)
		base, slope := d.vectors(a)
		improves := (hasSlope && undercuts(dot(slope, p), sol.Value(dm.th))) ||
			(hasBase && undercuts(dot(base, p), sol.Value(dm.psi)))
		if !improves || !d.addPattern(a) {
			return nil
		}
		dm.addPatternRows(inc.AddConstraint, base, slope)
	}
	return fmt.Errorf("%w after %d patterns", errNoConvergence, len(d.assign))
}

// undercuts reports whether a pattern's cost undercuts the master's price
// by more than cutTol relative.
func undercuts(cost, price float64) bool {
	return price-cost > cutTol*(math.Abs(price)+math.Abs(cost))
}

type addRow func(name string, terms []lp.Term, op lp.Op, rhs float64) lp.Row

// addPatternRows adds a pattern's base and slope cuts.
func (dm *dualMaster) addPatternRows(add addRow, base, slope []float64) {
	if dm.hasBase {
		dm.addCut(add, base, dm.psi)
	}
	if dm.hasSlope {
		dm.addCut(add, slope, dm.th)
	}
}

// addCut adds the row Σ_k v_k·p_k − price ≥ 0, divided by its largest
// coefficient: v grows with the number of jobs and p shrinks with it, and
// unscaled rows would be checked against CLP's absolute tolerance at the
// wrong scale.
func (dm *dualMaster) addCut(add addRow, v []float64, price lp.Var) {
	s := 1.0
	for _, x := range v {
		s = max(s, x)
	}
	terms := []lp.Term{{Var: price, Coef: -1 / s}}
	for k, x := range v {
		if x != 0 {
			terms = append(terms, lp.Term{Var: dm.p[k], Coef: x / s})
		}
	}
	add("cut", terms, lp.GE, 0)
}

func dot(a, b []float64) float64 {
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// recover solves the primal master over the patterns found and returns the
// bundles it gives every class, with the classes whose dual is positive
// marked blocked.
func (d *decomp) recover(ctx context.Context, set *lp.Settings) (*levelSolution, error) {
	lv := d.lv
	n, types := lv.numClasses(), lv.numTypes()
	hasBase, hasSlope := d.families()
	m := lp.NewModel(lp.Maximize)
	t := m.AddVar("t", 0, lp.Inf, float64(n))
	capTerms := make([][]lp.Term, types)
	var conv, link []lp.Term
	startUse, startBundles := d.startVector()
	var lamStart lp.Var = -1
	if hasBase && d.start != nil {
		lamStart = m.AddVar("lambda0", 0, lp.Inf, 0)
		conv = append(conv, lp.Term{Var: lamStart, Coef: 1})
		for k, x := range startUse {
			capTerms[k] = append(capTerms[k], lp.Term{Var: lamStart, Coef: x})
		}
	}
	lam := make([]lp.Var, len(d.assign))
	nu := make([]lp.Var, len(d.assign))
	for j, a := range d.assign {
		base, slope := d.vectors(a)
		if hasBase {
			lam[j] = m.AddVar("lambda", 0, lp.Inf, 0)
			conv = append(conv, lp.Term{Var: lam[j], Coef: 1})
			for k, x := range base {
				capTerms[k] = append(capTerms[k], lp.Term{Var: lam[j], Coef: x})
			}
		}
		if hasSlope {
			nu[j] = m.AddVar("nu", 0, lp.Inf, 0)
			link = append(link, lp.Term{Var: nu[j], Coef: 1})
			for k, x := range slope {
				capTerms[k] = append(capTerms[k], lp.Term{Var: nu[j], Coef: x})
			}
		}
	}
	ys := map[int][]lp.Var{}
	for c := range n {
		if !d.explicit[c] {
			continue
		}
		v := make([]lp.Var, types)
		fair := []lp.Term{{Var: t, Coef: -lv.slope[c]}}
		var time []lp.Term
		for k, r := range lv.rate[c] {
			ub := 0.0
			if r > 0 {
				ub = lp.Inf
			}
			v[k] = m.AddVar("y", 0, ub, 0)
			fair = append(fair, lp.Term{Var: v[k], Coef: r})
			time = append(time, lp.Term{Var: v[k], Coef: 1})
			capTerms[k] = append(capTerms[k], lp.Term{Var: v[k], Coef: lv.size[c]})
		}
		ys[c] = v
		m.AddConstraint("fair", fair, lp.GE, lv.base[c])
		m.AddConstraint("time", time, lp.LE, lv.gang[c])
	}
	for k, terms := range capTerms {
		m.AddConstraint("capacity", terms, lp.LE, lv.count[k])
	}
	if hasBase {
		m.AddConstraint("convexity", conv, lp.EQ, 1)
	}
	if hasSlope {
		m.AddConstraint("link", append(link, lp.Term{Var: t, Coef: -1}), lp.EQ, 0)
	}
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, fmt.Errorf("alloc: max-min primal master (%d patterns): %w", len(d.assign), err)
	}
	out := &levelSolution{t: sol.Value(t), y: make([][]float64, n), cuts: len(d.assign), explicit: len(ys)}
	for c := range n {
		if v, ok := ys[c]; ok {
			out.y[c] = make([]float64, types)
			for k, x := range v {
				out.y[c][k] = sol.Value(x)
			}
			continue
		}
		y := make([]float64, types)
		if lamStart >= 0 && startBundles[c] != nil {
			f := sol.Value(lamStart)
			for k, x := range startBundles[c] {
				y[k] += f * x
			}
		}
		for j, a := range d.assign {
			k := a[c]
			if hasBase {
				y[k] += sol.Value(lam[j]) * lv.base[c] / lv.rate[c][k]
			}
			if hasSlope {
				y[k] += sol.Value(nu[j]) * lv.slope[c] / lv.rate[c][k]
			}
		}
		out.y[c] = y
	}
	out.blocked = d.blocked()
	return out, nil
}

// blocked marks the classes whose dual μ_c, per job, is positive (relative
// to the largest): no optimum lets them exceed their row (see the proof at
// waterFill). Pattern classes have μ_c = size_c·min_k p_k/rate_ck, positive
// exactly when every type the class can use is priced.
func (d *decomp) blocked() []bool {
	lv := d.lv
	mu := make([]float64, lv.numClasses())
	var top float64
	for c, r := range lv.rate {
		if v, ok := d.mu[c]; ok {
			mu[c] = v / lv.size[c]
		} else {
			mu[c] = math.Inf(1)
			for k, x := range r {
				if x > 0 {
					mu[c] = min(mu[c], d.prices[k]/x)
				}
			}
		}
		top = max(top, mu[c])
	}
	out := make([]bool, len(mu))
	for c, v := range mu {
		out[c] = v > blockedTol*top
	}
	return out
}

// blockedTol is the dual, relative to the largest, below which a class
// counts as free to grow. Prices of unsaturated types are exact zeros
// (non-basic); saturated ones are orders of magnitude above this.
const blockedTol = 1e-9

// breakCaps makes explicit every pattern class whose bundle in y breaks its
// time row, and reports whether there was one.
func (d *decomp) breakCaps(y [][]float64) bool {
	broke := false
	for c, b := range y {
		if d.explicit[c] {
			continue
		}
		var s float64
		for _, x := range b {
			s += x
		}
		if s > d.lv.gang[c]*(1+capTol) {
			d.explicit[c] = true
			broke = true
		}
	}
	return broke
}
