package lp

import (
	"context"
	"math"
	"testing"
)

// degeneratePoolsCase is an LP recorded from cooperative OEF over pooled
// bundles (testdata/degenerate_pools.json.gz): maximise Σ obj·z over 421
// pools × 4 GPU types subject to Σ_g weight_g·z_gk ≤ capacity_k and 2,451
// envy rows, each triple (c, g, h) the row speed_c·z_g − speed_c·z_h ≥ 0.
// Rows of classes with nearly equal speeds against the same bundles make
// it degenerate: at the optimum most envy rows are tight.
type degeneratePoolsCase struct {
	pooledBundles
	Rows [][3]int `json:"rows"`
}

func loadDegeneratePools(t *testing.T) *Model {
	t.Helper()
	var tc degeneratePoolsCase
	readGzipJSON(t, "testdata/degenerate_pools.json.gz", &tc)
	m, z := tc.model()
	for _, r := range tc.Rows {
		m.AddConstraint("envy", envyTerms(z, tc.Speed[r[0]], r[1], r[2]), GE, 0)
	}
	return m
}

// TestPureGoPerturbsOnDegeneracy solves that LP with the pure-Go simplex.
// After its dual phase (2,028 iterations) the primal simplex met a vertex
// where every improving column had a step of zero; Bland's rule, which it
// turned to after 50 such pivots, had not left it after 400,000 more (the
// run ended in ErrNumerical after 2 m 50 s; warm from the row-generation
// basis it came from, over 21,000 iterations in 10 s). Perturbing the
// bounds of the degenerate basic variables ends it in about 60 pivots and
// one dual pivot after the bounds are restored. The answer must be optimal
// by its own duals: every row met, no reduced cost of the wrong sign, and
// the dual bound Σ capacity·price equal to the objective.
func TestPureGoPerturbsOnDegeneracy(t *testing.T) {
	m := loadDegeneratePools(t)
	sol, err := Solve(context.Background(), m, &Settings{Backend: PureGo, MaxIterations: 20000})
	if err != nil {
		t.Fatalf("Solve() error = %v", err)
	}
	const tol = 1e-6
	reduced := append([]float64(nil), m.obj...)
	var bound float64
	for i, row := range m.rows {
		var act float64
		for _, tm := range row {
			act += tm.Coef * sol.X[tm.Var]
			reduced[tm.Var] -= tm.Coef * sol.RowDuals[i]
		}
		if act < m.rowLo[i]-tol || act > m.rowHi[i]+tol {
			t.Errorf("row %d: activity %v outside [%v, %v]", i, act, m.rowLo[i], m.rowHi[i])
		}
		if !math.IsInf(m.rowHi[i], 1) {
			bound += sol.RowDuals[i] * m.rowHi[i] // capacity rows; envy rows have rhs 0
		}
	}
	for j, d := range reduced {
		if d > tol {
			t.Errorf("column %d: reduced cost %v > 0 in a maximisation without upper bounds", j, d)
		}
	}
	if gap := bound - sol.Objective; math.Abs(gap) > 1e-9*sol.Objective {
		t.Errorf("objective %.12g, dual bound %.12g: gap %v", sol.Objective, bound, gap)
	}
}
