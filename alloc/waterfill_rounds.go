package alloc

import (
	"context"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// roundLP is the water-filling round LP (see WaterFilling) kept loaded in
// the solver from round to round, written so that consecutive rounds differ
// in bounds only. A round's slopes w_c = W_s·jobW_c/Σ_{j ∈ s active}
// size_j·jobW_j (see Hierarchical) change as classes stop, and would be
// matrix coefficients in the direct form; here each class's gain g_c = w_c·z
// is a column, tied to its entity's gain per unit of job weight u_s:
//
//	maximise n·z  subject to  Σ_k rate[c][k]·y[c][k] − g_c ≥ base_c     (each class)
//	                          g_c − jobW_c·u_s = 0                      (active classes; free row otherwise)
//	                          Σ_{c ∈ s} size_c·g_c − W_s·z = 0          (entities with an active class; free otherwise)
//	                          g_c = 0                                   (inactive classes, by bounds)
//
// with the time and capacity rows of levelProblem. Eliminating g and u gives
// back the direct form (g_c = W_s·jobW_c·z / Σ_active size·jobW), so both
// have the same optimum and the same duals on the fairness rows. Between
// rounds only the bases (row bounds) and which classes are active (row and
// column bounds) change, and each round is re-solved from the previous
// round's basis (dual simplex), ending at a vertex, so its duals are vertex
// duals as WaterFilling's stopping rule needs. Its first solve is cold
// (presolved, about 1.3 times the direct LP's cost), so roundSolver solves
// the first round directly and loads this LP from the second round on.
type roundLP struct {
	in *lp.Incremental
	y  lp.Grid
	z  lp.Var
	roundRows
	ew *entityWeights
}

// roundRows are the rows and columns of a water-filling round LP whose
// bounds each round sets (roundLP, sharingRoundLP).
type roundRows struct {
	gain  []lp.Var // per class
	fair  []lp.Row // per class
	link  []lp.Row // per class
	share []lp.Row // per entity
}

// addEntityRows adds the link and share rows of ew's entities to m, each
// class's gain tied to its entity's unit column, free until a round sets
// them.
func (rr *roundRows) addEntityRows(m *lp.Model, z lp.Var, unit []lp.Var, ew *entityWeights) {
	rr.link, rr.share = make([]lp.Row, len(rr.gain)), make([]lp.Row, len(ew.members))
	for s, cs := range ew.members {
		terms := []lp.Term{{Var: z, Coef: -ew.weight[s]}}
		for _, c := range cs {
			rr.link[c] = m.AddRange("link", []lp.Term{{Var: rr.gain[c], Coef: 1}, {Var: unit[s], Coef: -ew.jobW[c]}}, -lp.Inf, lp.Inf)
			terms = append(terms, lp.Term{Var: rr.gain[c], Coef: ew.size[c]})
		}
		rr.share[s] = m.AddRange("share", terms, -lp.Inf, lp.Inf)
	}
}

// setBounds sets the round's bounds on in: each class's fairness row at
// its base; a class active (positive slope) rises with its entity, the
// others not at all; an entity's share row binds while it has an active
// class.
func (rr *roundRows) setBounds(in *lp.Incremental, ew *entityWeights, base, slope []float64) {
	for c, row := range rr.fair {
		in.SetRowBounds(row, base[c], lp.Inf)
		if slope[c] > 0 {
			in.SetRowBounds(rr.link[c], 0, 0)
			in.SetVarBounds(rr.gain[c], 0, lp.Inf)
		} else {
			in.SetRowBounds(rr.link[c], -lp.Inf, lp.Inf)
			in.SetVarBounds(rr.gain[c], 0, 0)
		}
	}
	for s, cs := range ew.members {
		lo, hi := -lp.Inf, lp.Inf
		for _, c := range cs {
			if slope[c] > 0 {
				lo, hi = 0, 0
				break
			}
		}
		in.SetRowBounds(rr.share[s], lo, hi)
	}
}

// newRoundLP builds the round LP of lv's classes and ew's entities, with
// every class inactive and every base 0 (solve sets both).
func newRoundLP(lv *levelProblem, ew *entityWeights, set *lp.Settings) (*roundLP, error) {
	n, types := lv.numClasses(), lv.numTypes()
	m := lp.NewModel(lp.Maximize)
	r := &roundLP{
		y:         m.AddGrid("y", n, types, 0, lp.Inf),
		z:         m.AddVar("z", 0, lp.Inf, float64(n)),
		roundRows: roundRows{gain: make([]lp.Var, n), fair: make([]lp.Row, n)},
		ew:        ew,
	}
	unit := make([]lp.Var, len(ew.members))
	for s := range unit {
		unit[s] = m.AddVar("u", 0, lp.Inf, 0)
	}
	ones := allOnes(types)
	for c := range n {
		r.gain[c] = m.AddVar("g", 0, 0, 0)
		r.fair[c] = m.AddConstraint("fair", append(r.y.RowTerms(c, lv.rate[c]), lp.Term{Var: r.gain[c], Coef: -1}), lp.GE, 0)
		m.AddConstraint("time", r.y.RowTerms(c, ones), lp.LE, lv.gang[c])
	}
	r.addEntityRows(m, r.z, unit, ew)
	for k := range types {
		m.AddConstraint("capacity", r.y.ColTerms(k, lv.size), lp.LE, lv.count[k])
	}
	// CLP's presolve takes the equality rows out of the first, cold solve
	// (three times faster); later solves are warm and skip it.
	in, err := lp.NewIncremental(m, withPresolve(set))
	if err != nil {
		return nil, err
	}
	r.in = in
	return r, nil
}

// solve solves the round of lv's bases and slopes (a class is active when
// its slope is positive). It returns a nil blocked when the backend gives
// no duals.
func (r *roundLP) solve(ctx context.Context, lv *levelProblem) (*levelSolution, error) {
	r.setBounds(r.in, r.ew, lv.base, lv.slope)
	sol, err := r.in.Solve(ctx)
	if err != nil {
		return nil, fmt.Errorf("alloc: water-filling round LP: %w", err)
	}
	out := &levelSolution{t: sol.Value(r.z), y: r.y.Values(sol)}
	if sol.RowDuals != nil {
		out.blocked, out.dual = blockedByDuals(lv.size, sol.RowDuals, r.fair)
	}
	return out, nil
}

// close frees the solver's memory.
func (r *roundLP) close() { r.in.Close() }

// blockedByDuals marks the classes with a positive dual on their fairness
// row (rows[c]) in this optimal dual: they are blocked (see WaterFilling).
// Duals count relative to the largest, as in oracle.blocked; dual[c] is
// class c's per job (size[c] jobs).
func blockedByDuals(size, duals []float64, rows []lp.Row) (blocked []bool, dual []float64) {
	var top float64
	for _, r := range rows {
		top = max(top, math.Abs(duals[r]))
	}
	blocked, dual = make([]bool, len(rows)), make([]float64, len(rows))
	for c, r := range rows {
		dual[c] = math.Abs(duals[r]) / size[c]
		blocked[c] = math.Abs(duals[r]) > blockedTol*top
	}
	return blocked, dual
}
