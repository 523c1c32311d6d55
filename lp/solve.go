package lp

import (
	"context"
	"errors"
)

// Status is the outcome of a solve.
type Status int

const (
	Optimal          Status = iota // an optimum was found
	Infeasible                     // no point meets every row and bound
	Unbounded                      // the objective improves without limit
	IterationLimit                 // Settings.MaxIterations ran out first
	TimeLimit                      // the context stopped the solve (a deadline or a cancellation; a context done before the solve starts gives no Solution, and its error)
	NumericalFailure               // the solver made no progress, or lost accuracy
)

// Sentinel errors returned by Solve; test with errors.Is.
var (
	ErrInvalidModel = errors.New("lp: invalid model")
	// ErrInvalidSettings reports a negative or NaN tolerance, a negative
	// iteration bound, or an unknown backend, method or dual pricing.
	ErrInvalidSettings = errors.New("lp: invalid settings")
	ErrInfeasible      = errors.New("lp: problem is infeasible")
	ErrUnbounded       = errors.New("lp: problem is unbounded")
	ErrNumerical       = errors.New("lp: numerical failure")
	ErrIterationLimit  = errors.New("lp: iteration limit reached")
	ErrTimeLimit       = errors.New("lp: time limit reached")
	// ErrViolation reports a solution that the backend called optimal but
	// that breaks a bound or row by more than Settings.FeasibilityTol.
	ErrViolation = errors.New("lp: solution violates its constraints")
	// ErrBackendUnavailable reports a backend not compiled in (CLP without cgo).
	ErrBackendUnavailable = errors.New("lp: backend unavailable")
)

// Backend selects the solver.
type Backend int

const (
	// Default is CLP when the binary was built with the clp build tag (and
	// cgo), otherwise PureGo.
	Default Backend = iota
	// CLP is COIN-OR CLP through cgo and CLP's C interface, compiled in
	// with the clp build tag (ErrBackendUnavailable without it).
	CLP
	// Gonum is gonum's dense simplex, pure Go. It is kept as a cross-check
	// for small models only: it takes seconds at a few hundred variables,
	// cannot be interrupted and reports no duals.
	Gonum
	// PureGo is this package's sparse bounded simplex, pure Go:
	// interruptible, with row duals, and warm re-solves in Incremental.
	PureGo
)

// Method selects CLP's algorithm; Gonum and PureGo ignore it.
type Method int

const (
	Auto          Method = iota // dual simplex
	DualSimplex                 // CLP's dual simplex
	PrimalSimplex               // CLP's primal simplex
	Barrier                     // interior point followed by crossover to a vertex
)

// DualPricing selects how the pure-Go dual simplex picks the row that
// leaves the basis; CLP and Gonum ignore it.
type DualPricing int

const (
	// DefaultPricing is DevexPricing, unless a package that builds the LP
	// chooses otherwise for its family of LPs (alloc's cooperative OEF
	// takes SteepestEdgePricing).
	DefaultPricing DualPricing = iota
	// DevexPricing weighs each row's infeasibility by Devex's estimate of
	// its steepest-edge norm.
	DevexPricing
	// SteepestEdgePricing weighs each row's infeasibility by its exact
	// steepest-edge norm ‖eᵣᵀB⁻¹‖², kept along the pivots at the cost of
	// one more FTRAN each. A cold solve starts from the slack basis,
	// where the norms are all 1; an Incremental's warm solve keeps the
	// last solve's norms and computes those of the rows added since, as
	// long as the last solve ended in the dual simplex (otherwise it uses
	// Devex). It takes about half of Devex's iterations on cooperative
	// OEF's LPs, cold and warm, and several times more on Gavel's max-min
	// LP with one t (docs/benchmarks/lp.md).
	SteepestEdgePricing
)

// Settings tunes a solve. A nil *Settings, and the zero value, mean defaults.
type Settings struct {
	Backend Backend
	Method  Method
	// MaxIterations bounds simplex iterations; 0 means no bound.
	MaxIterations int
	// FeasibilityTol is the absolute violation of a bound or row, after
	// scaling by max(1, |rhs|), beyond which a solution is rejected with
	// ErrViolation; 0 means DefaultFeasibilityTol.
	FeasibilityTol float64
	// Presolve asks CLP to presolve the model first; other backends
	// ignore it.
	Presolve bool
	// DualPricing selects the pure-Go dual simplex's pricing.
	DualPricing DualPricing
}

// DefaultFeasibilityTol is the default Settings.FeasibilityTol.
const DefaultFeasibilityTol = 1e-6

// Solution is the result of a solve.
type Solution struct {
	Status    Status
	Objective float64
	// X holds the primal value of every variable, indexed by Var.
	X []float64
	// RowDuals holds the dual value of every row, indexed by Row, or nil
	// when the backend does not provide them.
	RowDuals []float64
	// MaxViolation is the largest scaled violation of a bound or row found
	// when the solution was checked.
	MaxViolation float64
	// Iterations is the number of simplex iterations, or 0 where the
	// backend does not report it (Gonum).
	Iterations int
	Backend    Backend
	// Basis is the basis a pure-Go or CLP solve ended on: optimal, or
	// where a pure-Go solve stopped (its context, the iteration limit),
	// the basis it had reached, from which a hinted solve of the model
	// goes on. Nil with Gonum and other outcomes. Another model's
	// SetBasisHint takes it, its indices mapped.
	Basis *Basis
}

// Value returns the primal value of v.
func (s *Solution) Value(v Var) float64 { return s.X[v] }

// Solve solves m. On success the returned Solution has Status Optimal and has
// been checked against every bound and row. A context deadline becomes the
// solver's time limit, and a solve stopped by it returns an error for which
// errors.Is(err, ErrTimeLimit) and errors.Is(err, context.DeadlineExceeded)
// both hold.
//
// On an error the Solution is nil where no solve ran (invalid input or
// settings, a context done before the start)
// and otherwise holds the solve's Status (Infeasible, Unbounded,
// IterationLimit, TimeLimit, ...) with the point and basis where it stopped
// (Basis nil when it stopped before its first pivot). Only an Optimal X
// meets the model; any other is where the solver was, not a feasible point.
func Solve(ctx context.Context, m *Model, s *Settings) (*Solution, error) {
	return solve(ctx, m, s)
}
