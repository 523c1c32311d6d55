package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// The decomposition below solves a levelProblem exactly without building its
// N fairness and N time rows. The classes are linked only by the K capacity
// rows, so we relax those with prices p ≥ 0 (Lagrange):
//
//	L(p) = p·count + max_t [ t − Σ_c size_c·C_c(base_c + slope_c·t, p) ]
//
// where C_c(v, p) = min{p·y : rate_c·y ≥ v, Σ_k y_k ≤ gang_c, y ≥ 0} is the
// cheapest bundle worth v to one job of class c. With time as a budget of
// gang_c GPUs, C_c(v, p) = gang_c·H_c(v/gang_c), H_c the lower convex hull of
// the points (0, 0) and (rate_ck, p_k): the job uses the type with the most
// value per price until its time runs out, then moves up the hull to denser
// types (at most two types at once). So L(p) costs one pass over the classes
// plus a weighted selection of the level t among the hulls' breakpoints, and
// the maximiser is a level t_j and a bundle per class, a point of the
// polytope the capacity rows were taken from.
//
// Kelley's cutting planes over the K prices (a Dantzig–Wolfe master with
// K+1 rows) then converge to the LP's optimum: the master
//
//	maximise Σ_j λ_j·t_j  subject to  Σ_j λ_j·U_j ≤ count,  Σ_j λ_j = 1,  λ ≥ 0
//
// mixes the points found (U_j: the GPUs point j uses) and is a restriction of
// the full LP, so its optimum is a lower bound; every L(p) is an upper bound.
// We stop when they agree to gapTol, and return the mixture. Its dual (p, η)
// is solved as a (K+1)-variable LP to which each point adds one row, kept
// loaded in the solver (lp.Incremental) and re-solved from the previous
// basis.

// gapTol is the relative gap between the best Lagrangian bound and the
// master's optimum at which the decomposition stops. It is relative to the
// level, or to the classes' bases (in level units) when they are larger.
const gapTol = 1e-9

// smoothing is the weight of the best bound's prices in the in-out
// separation point.
const smoothing = 0.7

// stallTol is the relative gap accepted when the master stops moving: CLP
// solves it to about 1e-7 (its primal and dual tolerances), so cuts
// violated by less are not seen. Tests hold the result to 1e-6 of the full
// LP's optimum.
const stallTol = 1e-6

// maxPoints bounds the cutting planes; it is far above what any instance
// tried needs (about 100 at 16,384 jobs and 8 types), and reaching it is an
// error.
const maxPoints = 2000

// maxStalls is how many iterations in a row the master may stay put before
// the decomposition gives up.
const maxStalls = 20

// errNoConvergence reports cutting planes that did not converge: maxPoints
// reached, the master stalled, or the primal master short of the bound.
var errNoConvergence = fmt.Errorf("alloc: max-min decomposition did not converge: %w", lp.ErrNumerical)

// oracle evaluates L(p) and returns its maximiser.
type oracle struct {
	lv    *levelProblem
	order [][]typeRate // per class, usable types by rate ascending
	tmax  float64      // the highest level every class can reach
	hulls []hull
	ev    []event
}

// event is a breakpoint of the level's derivative: at level t, one class's
// cost starts rising faster by d (per unit of t).
type event struct{ t, d float64 }

// point is a maximiser of L(p): a level and the GPUs of each type in use.
type point struct {
	t   float64
	use []float64
	p   []float64 // the prices it was computed at (nil for a start point)
}

func newOracle(lv *levelProblem) (*oracle, error) {
	o := &oracle{lv: lv, order: make([][]typeRate, lv.numClasses()), hulls: make([]hull, lv.numClasses()), tmax: math.Inf(1)}
	vertices := make([]vertex, lv.numClasses()*(lv.numTypes()+1))
	for c, r := range lv.rate {
		o.hulls[c].v = vertices[: 0 : lv.numTypes()+1]
		vertices = vertices[lv.numTypes()+1:]
		for k, x := range r {
			if x > 0 {
				o.order[c] = append(o.order[c], typeRate{k: k, x: x})
			}
		}
		ord := o.order[c]
		for i := 1; i < len(ord); i++ { // insertion sort: K is small
			for j := i; j > 0 && ord[j].x < ord[j-1].x; j-- {
				ord[j], ord[j-1] = ord[j-1], ord[j]
			}
		}
		if len(ord) == 0 {
			return nil, fmt.Errorf("alloc: class %d has no usable type: %w", c, lp.ErrNumerical)
		}
		top := lv.gang[c] * ord[len(ord)-1].x
		if lv.base[c] > top*(1+capTol) {
			return nil, fmt.Errorf("alloc: class %d's base %v exceeds its capacity %v: %w", c, lv.base[c], top, lp.ErrNumerical)
		}
		if lv.slope[c] > 0 {
			o.tmax = min(o.tmax, max(0, top-lv.base[c])/lv.slope[c])
		}
	}
	if math.IsInf(o.tmax, 1) {
		return nil, fmt.Errorf("alloc: no class has a positive slope: %w", lp.ErrNumerical)
	}
	return o, nil
}

// capTol is the relative slack allowed between a class's base and the most
// it can reach (solver noise carried from an earlier round).
const capTol = 1e-9

// eval returns L(p) and its maximiser.
func (o *oracle) eval(p []float64) (float64, point) {
	lv := o.lv
	o.ev = o.ev[:0]
	var rise float64 // the derivative's decrease at t = 0+
	for c := range lv.rate {
		h := &o.hulls[c]
		buildHull(h, o.order[c], p)
		s, g, b := lv.slope[c]*lv.size[c], lv.gang[c], lv.base[c]
		if s == 0 {
			continue
		}
		u0 := b / g
		_, i, f := h.at(u0)
		if f == 1 && u0 >= h.v[i].a && i < len(h.v)-1 {
			i++ // at a vertex, the slope to the right
		}
		rise += s * h.v[i].slope
		for j := i; j < len(h.v)-1; j++ {
			o.ev = append(o.ev, event{t: (g*h.v[j].a - b) / lv.slope[c], d: s * (h.v[j+1].slope - h.v[j].slope)})
		}
	}
	t := o.tmax
	if rise >= 1 {
		t = 0
	} else if e, ok := selectLevel(o.ev, 1-rise); ok && e < t {
		t = e
	}
	pt := point{t: t, use: make([]float64, lv.numTypes()), p: append([]float64(nil), p...)}
	val := t
	for c := range lv.rate {
		cost := o.bundle(c, t, func(k int, y float64) { pt.use[k] += lv.size[c] * y })
		val -= lv.size[c] * cost
	}
	for k, n := range lv.count {
		val += p[k] * n
	}
	return val, pt
}

// bundle calls put(k, y) for the GPUs y of each type k a job of class c
// holds at level t on the hull built last, and returns their cost.
func (o *oracle) bundle(c int, t float64, put func(k int, y float64)) float64 {
	lv, h := o.lv, &o.hulls[c]
	g := lv.gang[c]
	u := min((lv.base[c]+lv.slope[c]*t)/g, h.v[len(h.v)-1].a)
	cost, i, f := h.at(u)
	if k := h.v[i-1].typ; k >= 0 && f < 1 {
		put(k, g*(1-f))
	}
	if f > 0 {
		put(h.v[i].typ, g*f)
	}
	return g * cost
}

// selectLevel returns the smallest event level at which the cumulative
// rises reach need, by quickselect on ev (which it reorders).
func selectLevel(ev []event, need float64) (float64, bool) {
	lo := ev
	for len(lo) > 0 {
		pivot := lo[len(lo)/2].t
		// Three-way partition: < pivot, == pivot, > pivot.
		lt, gt := 0, len(lo)
		for i := 0; i < gt; {
			switch {
			case lo[i].t < pivot:
				lo[lt], lo[i] = lo[i], lo[lt]
				lt++
				i++
			case lo[i].t > pivot:
				gt--
				lo[gt], lo[i] = lo[i], lo[gt]
			default:
				i++
			}
		}
		var below, at float64
		for _, e := range lo[:lt] {
			below += e.d
		}
		for _, e := range lo[lt:gt] {
			at += e.d
		}
		switch {
		case below >= need:
			lo = lo[:lt]
		case below+at >= need:
			return pivot, true
		default:
			need -= below + at
			lo = lo[gt:]
		}
	}
	return 0, false
}

// solveLevelDecomposed solves lv by the cutting planes described above.
// start, when some base is positive, must be a feasible allocation (per
// class) that meets every base (the previous water-filling round's); it is
// the master's first point. Where they do not converge (errNoConvergence)
// it solves the full LP instead: with CLP, a rapid case of
// TestPropertyMaxMinSharingIncentive (five jobs on two types) stopped
// with its primal master 1.1e-5 below the bound, one of the master solves
// off by CLP's tolerances. The full LP is exact, if slower at scale, and
// is reached only where the cutting planes fail.
func solveLevelDecomposed(ctx context.Context, lv *levelProblem, start [][]float64, set *lp.Settings) (*levelSolution, error) {
	sol, err := cuttingPlanes(ctx, lv, start, set)
	if errors.Is(err, errNoConvergence) {
		return solveLevelFull(ctx, lv, set)
	}
	return sol, err
}

// cuttingPlanes is solveLevelDecomposed's method.
func cuttingPlanes(ctx context.Context, lv *levelProblem, start [][]float64, set *lp.Settings) (*levelSolution, error) {
	o, err := newOracle(lv)
	if err != nil {
		return nil, err
	}
	types := lv.numTypes()
	var total float64
	for _, n := range lv.count {
		total += n
	}
	// The dual master, with prices scaled by the cluster's size so that
	// they are about 1 (LP-NOTES.md on scaling):
	//	minimise Σ_k (count_k/total)·p'_k + η  s.t.  η + Σ_k (U_jk/total)·p'_k ≥ t_j.
	m := lp.NewModel(lp.Minimize)
	pv := make([]lp.Var, types)
	for k, n := range lv.count {
		pv[k] = m.AddVar("p", 0, lp.Inf, n/total)
	}
	eta := m.AddVar("eta", -lp.Inf, lp.Inf, 1)
	first := point{use: make([]float64, types)}
	if start != nil {
		first.use = startUse(lv, start)
	}
	points := []point{first}
	addCut := func(add addRow, pt point) {
		terms := []lp.Term{{Var: eta, Coef: 1}}
		for k, u := range pt.use {
			if u != 0 {
				terms = append(terms, lp.Term{Var: pv[k], Coef: u / total})
			}
		}
		add("cut", terms, lp.GE, pt.t)
	}
	addCut(m.AddConstraint, first)
	best, lastLB := math.Inf(1), math.Inf(-1)
	stalls := 0
	// The master's solution only prices the next point: a cut broken by
	// CLP's tolerance costs precision of the bound, not validity.
	var dmSet lp.Settings
	if set != nil {
		dmSet = *set
	}
	dmSet.FeasibilityTol = max(dmSet.FeasibilityTol, 1e-5)
	// Each point adds a row to the master: kept loaded, it is re-solved
	// from the previous basis, which stays dual feasible (a few pivots).
	master, err := lp.NewIncremental(m, &dmSet)
	if err != nil {
		return nil, err
	}
	defer master.Close()
	// Gaps are relative to the level, or to a larger natural scale when
	// the level is a small increment (later water-filling rounds): the
	// bases in level units, or the level of an equal split of the cluster,
	// total/Σ size·slope.
	var weight float64
	for c, s := range lv.slope {
		weight += lv.size[c] * s
	}
	scale := total / weight
	for c, s := range lv.slope {
		if s > 0 {
			scale = max(scale, lv.base[c]/s)
		}
	}
	p := make([]float64, types)
	var center []float64 // the prices of the best bound
	for len(points) < maxPoints {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sol, err := master.Solve(ctx)
		if err != nil {
			return nil, fmt.Errorf("alloc: max-min master (%d points): %w", len(points), err)
		}
		lb, etaVal := sol.Objective, sol.Value(eta)
		for k, v := range pv {
			p[k] = sol.Value(v) / total
		}
		// In-out separation (Wentges): price between the best bound's
		// prices and the master's, which damps Kelley's zigzag; fall
		// back to the master's prices when that cut would not cut off
		// the master's solution.
		q := p
		if center != nil {
			q = make([]float64, types)
			for k := range q {
				q[k] = smoothing*center[k] + (1-smoothing)*p[k]
			}
		}
		val, pt := o.eval(q)
		if center != nil && pt.t-dot(pt.use, p)-etaVal <= stallTol*max(math.Abs(best), scale) {
			q = p
			val, pt = o.eval(p)
		}
		if val < best {
			best, center = val, append(center[:0], q...)
		}
		gap := best - lb
		// The master stalls when the new cut is violated by less than
		// CLP's tolerance: the gap then is the solver's precision.
		if lb <= lastLB {
			stalls++
		} else {
			stalls = 0
		}
		lastLB = lb
		size := max(math.Abs(best), scale)
		if gap <= gapTol*size || (stalls > 0 && gap <= stallTol*size) {
			out, err := o.recover(ctx, points, start, p, set)
			if err == nil && best-out.t > stallTol*size {
				// The primal master is the dual's LP dual; a gap between
				// them means a solve went wrong, or a stalled master left
				// the mixture short (1.5e-6 below the bound, with either
				// backend, on a class whose rates tie to 3e-5: a rapid
				// case of TestPropertyMaxMinSharingIncentive). Never return
				// it silently: the full LP settles it.
				err = fmt.Errorf("%w: the primal master reaches %v, the bound is %v", errNoConvergence, out.t, best)
			}
			return out, err
		}
		if stalls > maxStalls {
			return nil, fmt.Errorf("%w: the master stalled %d times with a gap of %.3g (level %v)", errNoConvergence, stalls, gap, best)
		}
		points = append(points, pt)
		addCut(master.AddConstraint, pt)
	}
	return nil, fmt.Errorf("%w after %d points", errNoConvergence, len(points))
}

type addRow func(name string, terms []lp.Term, op lp.Op, rhs float64) lp.Row

// startUse returns the GPUs the start allocation uses, each class's bundle
// scaled to meet its base exactly.
func startUse(lv *levelProblem, start [][]float64) []float64 {
	use := make([]float64, lv.numTypes())
	for c, y := range start {
		f := startScale(lv, c, y)
		for k, x := range y {
			use[k] += lv.size[c] * x * f
		}
	}
	return use
}

// startScale is the factor that brings class c's start bundle y to its base
// (0 when the base is 0).
func startScale(lv *levelProblem, c int, y []float64) float64 {
	if lv.base[c] == 0 {
		return 0
	}
	return min(1, lv.base[c]/lv.value(c, y))
}

// recover solves the primal master over the points found and returns the
// mixture of their bundles, with blocked classes marked at the final prices.
func (o *oracle) recover(ctx context.Context, points []point, start [][]float64, p []float64, set *lp.Settings) (*levelSolution, error) {
	lv := o.lv
	var total float64
	for _, n := range lv.count {
		total += n
	}
	capRHS := make([]float64, lv.numTypes())
	for k, n := range lv.count {
		capRHS[k] = n / total
	}
	lam, err := primalMaster(ctx, points, total, capRHS, 1, make([]float64, len(points)), set)
	if err != nil {
		return nil, err
	}
	out := &levelSolution{y: make([][]float64, lv.numClasses()), cuts: len(points)}
	for c := range out.y {
		out.y[c] = make([]float64, lv.numTypes())
	}
	for j, pt := range points {
		w := lam[j]
		if w <= 0 {
			continue
		}
		out.t += w * pt.t
		if pt.p == nil {
			for c, y := range start {
				f := w * startScale(lv, c, y)
				for k, x := range y {
					out.y[c][k] += f * x
				}
			}
			continue
		}
		o.eval(pt.p) // rebuilds the hulls of pt's prices
		for c := range out.y {
			o.bundle(c, pt.t, func(k int, y float64) { out.y[c][k] += w * y })
		}
	}
	out.blocked, out.dual = o.blocked(p, out.y)
	return out, nil
}

// primalMaster solves the master over the points: maximise Σ_j λ_j·t_j
// subject to Σ_j λ_j·U_j/total ≤ capRHS, Σ_j λ_j = conv and λ ≥ lower.
func primalMaster(ctx context.Context, points []point, total float64, capRHS []float64, conv float64, lower []float64, set *lp.Settings) ([]float64, error) {
	m := lp.NewModel(lp.Maximize)
	lam := make([]lp.Var, len(points))
	convTerms := make([]lp.Term, len(points))
	capTerms := make([][]lp.Term, len(capRHS))
	for j, pt := range points {
		lam[j] = m.AddVar("lambda", lower[j], lp.Inf, pt.t)
		convTerms[j] = lp.Term{Var: lam[j], Coef: 1}
		for k, u := range pt.use {
			if u != 0 {
				capTerms[k] = append(capTerms[k], lp.Term{Var: lam[j], Coef: u / total})
			}
		}
	}
	for k, terms := range capTerms {
		m.AddConstraint("capacity", terms, lp.LE, capRHS[k])
	}
	m.AddConstraint("convexity", convTerms, lp.EQ, conv)
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, fmt.Errorf("alloc: max-min primal master (%d points): %w", len(points), err)
	}
	out := make([]float64, len(points))
	for j, v := range lam {
		out[j] = sol.Value(v)
	}
	return out, nil
}

// blocked marks, at the final prices p, the classes that cannot grow: those
// at their time cap on their densest type, and those for which more value
// costs something (the slope of their hull just above their value is
// positive). For such a class some optimal dual has μ_c > 0 (μ_c may be
// chosen anywhere between the hull's left and right slopes, as long as the
// growing classes' μ sum to 1, which the level's optimality allows), and a
// class with a positive dual cannot exceed its row in any optimum (the
// proof is at WaterFilling).
func (o *oracle) blocked(p []float64, y [][]float64) ([]bool, []float64) {
	lv := o.lv
	slope := make([]float64, lv.numClasses())
	capped := make([]bool, lv.numClasses())
	var top float64
	for c := range lv.rate {
		h := &o.hulls[c]
		buildHull(h, o.order[c], p)
		u := lv.value(c, y[c]) / lv.gang[c]
		amax := h.v[len(h.v)-1].a
		capped[c] = u >= amax*(1-capTol)
		_, i, f := h.at(min(u, amax))
		if f == 1 && i < len(h.v)-1 {
			i++ // at a vertex, the slope to the right
		}
		slope[c] = h.v[i].slope
		top = max(top, slope[c])
	}
	out := make([]bool, len(slope))
	for c, s := range slope {
		out[c] = capped[c] || s > blockedTol*top
		if capped[c] {
			slope[c] = math.Inf(1)
		}
	}
	return out, slope
}

// blockedTol is the hull slope, relative to the largest, below which a class
// counts as free to grow. Prices of unsaturated types are exact zeros in the
// master's vertex; those of saturated types are orders of magnitude above.
const blockedTol = 1e-9
