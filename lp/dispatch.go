package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// solve validates its inputs, picks the backend, runs it and checks what it
// returns. Every path that reports Optimal passes through check.
func solve(ctx context.Context, m *Model, s *Settings) (*Solution, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil model", ErrInvalidModel)
	}
	if err := m.Err(); err != nil {
		return nil, err
	}
	set, err := resolveSettings(s)
	if err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var sol *Solution
	switch {
	case len(m.obj) == 0:
		sol, err = solveEmpty(m, set)
	case set.Backend == CLP:
		sol, err = solveCLP(ctx, m, set)
	case set.Backend == PureGo:
		sol, err = solvePureGo(ctx, m, set)
	default:
		sol, err = solveGonum(ctx, m, set)
	}
	if err != nil {
		return sol, err
	}
	return finish(m, sol, set)
}

// resolveSettings returns a copy of s with defaults filled in and the
// backend resolved, or an error naming a bad setting.
func resolveSettings(s *Settings) (Settings, error) {
	var set Settings
	if s != nil {
		set = *s
	}
	switch {
	case math.IsNaN(set.FeasibilityTol) || set.FeasibilityTol < 0 || math.IsInf(set.FeasibilityTol, 0):
		return set, fmt.Errorf("%w: FeasibilityTol %v", ErrInvalidSettings, set.FeasibilityTol)
	case set.MaxIterations < 0:
		return set, fmt.Errorf("%w: MaxIterations %d", ErrInvalidSettings, set.MaxIterations)
	case set.Backend < Default || set.Backend > PureGo:
		return set, fmt.Errorf("%w: unknown backend %d", ErrInvalidSettings, set.Backend)
	case set.Method < Auto || set.Method > Barrier:
		return set, fmt.Errorf("%w: unknown method %d", ErrInvalidSettings, set.Method)
	case set.DualPricing < DefaultPricing || set.DualPricing > SteepestEdgePricing:
		return set, fmt.Errorf("%w: unknown dual pricing %d", ErrInvalidSettings, set.DualPricing)
	}
	if set.FeasibilityTol == 0 {
		set.FeasibilityTol = DefaultFeasibilityTol
	}
	if set.Backend == Default {
		set.Backend = defaultBackend
	}
	if set.Backend == CLP && !clpAvailable {
		return set, fmt.Errorf("%w: CLP needs cgo and the clp build tag", ErrBackendUnavailable)
	}
	return set, nil
}

// ctxErr reports a context that is already done. An expired deadline
// matches ErrTimeLimit as well as context.DeadlineExceeded, like a solve
// stopped by its deadline.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w before the solve started: %w", ErrTimeLimit, err)
	default:
		return fmt.Errorf("lp: solve not started: %w", err)
	}
}

// solveEmpty solves a model without variables: every row is the constant 0.
func solveEmpty(m *Model, set Settings) (*Solution, error) {
	for i := range m.rows {
		if m.rowLo[i] > 0 || m.rowHi[i] < 0 {
			return &Solution{Status: Infeasible, Backend: set.Backend},
				fmt.Errorf("%w: row %q has no variables and range [%v, %v]", ErrInfeasible, m.rnames[i], m.rowLo[i], m.rowHi[i])
		}
	}
	return &Solution{Status: Optimal, X: []float64{}, RowDuals: make([]float64, len(m.rows)), Backend: set.Backend}, nil
}

// finish computes the objective from the primal values, so that both
// backends report it the same way, and rejects a solution that breaks a
// bound or row by more than set.FeasibilityTol after scaling.
func finish(m *Model, sol *Solution, set Settings) (*Solution, error) {
	// A backend meets bounds to its own tolerance in the scaled model it
	// solves, which unscaling can stretch past FeasibilityTol: a value that
	// far outside its bounds is put back on them (LP-NOTES: repair), so
	// that only rows are left to check.
	for j, v := range sol.X {
		lo, hi := m.lower[j], m.upper[j]
		if v < lo && (lo-v)/math.Max(1, math.Abs(lo)) <= boundRepairTol {
			sol.X[j] = lo
		} else if v > hi && (v-hi)/math.Max(1, math.Abs(hi)) <= boundRepairTol {
			sol.X[j] = hi
		}
	}
	sol.Objective = 0
	for j, c := range m.obj {
		sol.Objective += c * sol.X[j]
	}
	if math.IsNaN(sol.Objective) || math.IsInf(sol.Objective, 0) {
		sol.Status = NumericalFailure
		return sol, fmt.Errorf("%w: the objective at the solution overflows float64 (%v)", ErrNumerical, sol.Objective)
	}
	v := worstViolation(m, sol.X)
	sol.MaxViolation = v.amount
	if v.amount > set.FeasibilityTol {
		sol.Status = NumericalFailure
		return sol, &ViolationError{Name: v.name, Row: v.row, Value: v.value, Bound: v.bound, Scaled: v.amount, Tol: set.FeasibilityTol}
	}
	return sol, nil
}

// boundRepairTol is the largest scaled breach of a variable's bound that
// finish repairs: a few times a simplex's primal tolerance (1e-7) times the
// column factors scaling gives.
const boundRepairTol = 1e-4

// violation is the worst scaled breach of a bound or row.
type violation struct {
	name   string
	row    bool
	value  float64 // the variable's value or the row's activity
	bound  float64 // the side it breaks
	amount float64 // |value-bound| / max(1, |bound|)
}

// worstViolation returns the largest scaled violation of x against the
// bounds and rows of m: an excess of d over a side b counts d/max(1,|b|).
func worstViolation(m *Model, x []float64) violation {
	var w violation
	at := -1 // the worst: variable at, or row at-len(x)
	consider := func(i int, value, lo, hi float64) {
		var amt, b float64
		switch {
		case math.IsNaN(value):
			amt, b = math.Inf(1), lo
		case value < lo:
			amt, b = (lo-value)/math.Max(1, math.Abs(lo)), lo
		case value > hi:
			amt, b = (value-hi)/math.Max(1, math.Abs(hi)), hi
		default:
			return
		}
		if amt > w.amount {
			w, at = violation{value: value, bound: b, amount: amt}, i
		}
	}
	for j, v := range x {
		consider(j, v, m.lower[j], m.upper[j])
	}
	for i, row := range m.rows {
		var a float64
		for _, t := range row {
			a += t.Coef * x[t.Var]
		}
		consider(len(x)+i, a, m.rowLo[i], m.rowHi[i])
	}
	// Names are formatted for the worst only: a grid's are made on demand.
	switch {
	case at >= len(x):
		w.name, w.row = m.rnames[at-len(x)], true
	case at >= 0:
		w.name = m.varName(Var(at))
	}
	return w
}

// ViolationError reports the worst breach found in a solution that a
// backend called optimal. It matches ErrViolation with errors.Is.
type ViolationError struct {
	Name   string  // the variable or row
	Row    bool    // whether Name is a row
	Value  float64 // the variable's value or the row's activity
	Bound  float64 // the bound or side it breaks
	Scaled float64 // |Value-Bound| / max(1, |Bound|)
	Tol    float64 // the Settings.FeasibilityTol in force
}

// Error says which variable or row the solution breaks, and by how much.
func (e *ViolationError) Error() string {
	kind := "variable"
	if e.Row {
		kind = "row"
	}
	return fmt.Sprintf("%v: %s %q is %v against bound %v (scaled violation %.3g > %.3g)", ErrViolation, kind, e.Name, e.Value, e.Bound, e.Scaled, e.Tol)
}

// Unwrap returns ErrViolation.
func (e *ViolationError) Unwrap() error { return ErrViolation }
