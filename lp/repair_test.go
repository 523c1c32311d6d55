package lp

import (
	"errors"
	"testing"
)

// TestFinishRepairsBounds: a value a solver tolerance outside its bounds
// (unscaled: 2e-6 below 0, as CLP returned for a finish-time-fairness
// model) is put back on the bound, while a real breach is still refused.
func TestFinishRepairsBounds(t *testing.T) {
	m := NewModel(Maximize)
	x := m.AddVar("x", 0, 1, 1)
	m.AddConstraint("cap", []Term{{Var: x, Coef: 1}}, LE, 1)
	set := Settings{FeasibilityTol: DefaultFeasibilityTol}
	sol, err := finish(m, &Solution{Status: Optimal, X: []float64{-2e-6}}, set)
	if err != nil || sol.X[0] != 0 {
		t.Errorf("finish(-2e-6) = %v, %v; want x repaired to 0", sol.X, err)
	}
	sol, err = finish(m, &Solution{Status: Optimal, X: []float64{1 + 3e-6}}, set)
	if err != nil || sol.X[0] != 1 {
		t.Errorf("finish(1+3e-6) = %v, %v; want x repaired to 1", sol.X, err)
	}
	if _, err := finish(m, &Solution{Status: Optimal, X: []float64{-0.01}}, set); !errors.Is(err, ErrViolation) {
		t.Errorf("finish(-0.01) error = %v, want ErrViolation", err)
	}
}
