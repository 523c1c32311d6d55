package alloc

import (
	"context"

	"github.com/gpufair/gpufair/lp"
)

// addBundles adds y[c][k] ≥ 0, one unit of weight's bundle per class, the
// capacity rows Σ_c w_c·y_ck ≤ m_k, and with caps the rows of addCaps.
func (q *oefLP) addBundles(m *lp.Model) lp.Grid {
	y := q.addCapacity(m)
	q.addCaps(m, y)
	return y
}

// addCapacity adds y[c][k] ≥ 0 and the capacity rows Σ_c w_c·y_ck ≤ m_k,
// the first len(q.count) rows of m.
func (q *oefLP) addCapacity(m *lp.Model) lp.Grid {
	y := m.AddGrid("y", len(q.s), len(q.count), 0, lp.Inf)
	for k, n := range q.count {
		m.AddConstraint("capacity", y.ColTerms(k, q.w), lp.LE, n)
	}
	return y
}

// solveNonCoopFull solves non-cooperative OEF (9) as one LP: maximise
// (Σ_c w_c)·t subject to s_c·y_c = t for every class and capacity. The
// objective is scaled by the total weight, which keeps the equality rows'
// duals near 1 (LP-NOTES.md).
func (q *oefLP) solveNonCoopFull(ctx context.Context, set *lp.Settings) ([][]float64, error) {
	m := lp.NewModel(lp.Maximize)
	y := q.addBundles(m)
	t := m.AddVar("t", 0, lp.Inf, q.totalWeight())
	for c, s := range q.s {
		m.AddConstraint("equal", append(y.RowTerms(c, s), lp.Term{Var: t, Coef: -1}), lp.EQ, 0)
	}
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, err
	}
	return y.Values(sol), nil
}

// solveCoopFull solves cooperative OEF (10) as one LP with every envy row
// s_c·y_c ≥ s_c·y_d, c ≠ d: C·(C-1) rows, and with caps every cap row and
// sharing floor (sideRows). It is solved with presolve and steepest-edge
// pricing (coopSettings).
func (q *oefLP) solveCoopFull(ctx context.Context, set *lp.Settings) ([][]float64, coopDual, error) {
	m := lp.NewModel(lp.Maximize)
	y := q.addCapacity(m)
	q.setThroughputObjective(m, y)
	rows := q.sideRows()
	for c := range q.s {
		for d := range q.s {
			if c != d {
				rows = append(rows, envyPair{c, d})
			}
		}
	}
	ids := make([]lp.Row, len(rows))
	for i, r := range rows {
		ids[i] = q.addRow(m.AddConstraint, y, r)
	}
	sol, err := solveWarmTwice(ctx, m, coopSettings(set))
	if err != nil {
		return nil, coopDual{}, err
	}
	return y.Values(sol), q.rowDuals(sol, rows, ids), nil
}

// setThroughputObjective sets the objective Σ_c w_c·s_c·y_c.
func (q *oefLP) setThroughputObjective(m *lp.Model, y lp.Grid) {
	for c, s := range q.s {
		for k, r := range s {
			m.SetObjective(y.At(c, k), q.w[c]*r)
		}
	}
}

// addRow adds row r of cooperative OEF's LP through add (Model's or
// Incremental's AddConstraint): class r[0]'s envy row against r[1], or
// with r[1] = capRow or floorRow its cap row or sharing floor.
func (q *oefLP) addRow(add func(string, []lp.Term, lp.Op, float64) lp.Row, y lp.Grid, r envyPair) lp.Row {
	c := r[0]
	switch r[1] {
	case capRow:
		return add("cap", y.RowTerms(c, allOnes(len(q.count))), lp.LE, q.cap[c])
	case floorRow:
		return add("sharing", y.RowTerms(c, q.s[c]), lp.GE, q.floor[c])
	}
	return add("envy", q.envyTerms(y, c, r[1]), lp.GE, 0)
}

// envyTerms returns s_c·y_c - r·s_c·y_d, r = envyScale(c, d): class c's
// envy row against d.
func (q *oefLP) envyTerms(y lp.Grid, c, d int) []lp.Term {
	s := q.s[c]
	r := q.envyScale(c, d)
	terms := make([]lp.Term, 0, 2*len(s))
	for k, x := range s {
		if x != 0 {
			terms = append(terms, lp.Term{Var: y.At(c, k), Coef: x}, lp.Term{Var: y.At(d, k), Coef: -r * x})
		}
	}
	return terms
}

// totalWeight returns Σ_c w_c.
func (q *oefLP) totalWeight() float64 {
	var t float64
	for _, w := range q.w {
		t += w
	}
	return t
}
