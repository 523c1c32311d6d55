package lp

import (
	"context"
	"errors"
	"fmt"
)

// solvePureGo solves m once with the pure-Go simplex. It loads m in the
// calling goroutine, so that m is never read after it returns (the caller
// may change m at once, even after a stopped solve), and checks ctx every
// ctxRows rows while it does. With a context that can end, the solve
// itself then runs in a goroutine of its own over the simplex's own copy
// of the model, and solvePureGo returns as soon as the context is done:
// a refactorisation of a large basis looks at the context only every
// ctxColumns columns, which on a loaded machine can take tens of
// milliseconds, and the caller should not wait for that. The goroutine
// stops at its next check.
func solvePureGo(ctx context.Context, m *Model, set Settings) (*Solution, error) {
	s, err := newSimplex(ctx, m)
	if err != nil {
		return nil, stopped(err)
	}
	if ctx.Done() == nil {
		return s.solve(ctx, set)
	}
	type result struct {
		sol *Solution
		err error
	}
	done := make(chan result, 1)
	go func() {
		sol, err := s.solve(ctx, set)
		done <- result{sol, err}
	}()
	select {
	case r := <-done:
		return r.sol, r.err
	case <-ctx.Done():
		select {
		case r := <-done:
			return r.sol, r.err
		default:
		}
		return &Solution{Status: TimeLimit, Backend: PureGo}, stopped(ctx.Err())
	}
}

// solve runs the pure-Go simplex from its current basis and reports the
// outcome as Solve does. An optimal solution carries the row duals in the
// model's own sense (∂objective/∂rhs); a solve stopped by the context or
// the iteration limit carries the current point.
func (s *simplex) solve(ctx context.Context, set Settings) (*Solution, error) {
	sol := &Solution{Backend: PureGo}
	s.steepest = set.DualPricing == SteepestEdgePricing
	start := s.iters
	limit := s.iterationLimit(set)
	out, err := s.run(ctx, limit)
	if out == spxStuck {
		// Once more from the same basis, refactorised with nearly partial
		// pivoting: on an LP whose rows nearly tie (cooperative OEF with
		// rates equal to 1e-9), the sparser pivots left the bases accurate
		// to 1e-5 only, and the primal simplex ran 111,000 iterations
		// without an end; strict pivots end it in 104 more.
		s.strict, s.fresh = true, false
		out, err = s.run(ctx, limit)
		s.strict = false
	}
	sol.Iterations = s.iters - start
	switch out {
	case spxOptimal:
		sol.Status = Optimal
		s.copySolution(sol)
		return sol, nil
	case spxInfeasible:
		sol.Status = Infeasible
		return sol, fmt.Errorf("%w (pure-Go simplex: infeasibility remains after %d iterations)", ErrInfeasible, sol.Iterations)
	case spxUnbounded:
		sol.Status = Unbounded
		return sol, fmt.Errorf("%w (pure-Go simplex: improving ray after %d iterations)", ErrUnbounded, sol.Iterations)
	case spxIterationLimit:
		sol.Status = IterationLimit
		s.copySolution(sol)
		return sol, fmt.Errorf("%w (%d iterations)", ErrIterationLimit, sol.Iterations)
	case spxStopped:
		sol.Status = TimeLimit
		s.copySolution(sol)
		return sol, fmt.Errorf("after %d iterations: %w", sol.Iterations, stopped(err))
	default:
		sol.Status = NumericalFailure
		s.copySolution(sol)
		return sol, fmt.Errorf("%w (pure-Go simplex: no progress after %d iterations)", ErrNumerical, sol.Iterations)
	}
}

// iterationLimit returns the absolute iteration count at which this solve
// stops, or 0 for none.
func (s *simplex) iterationLimit(set Settings) int {
	if set.MaxIterations == 0 {
		return 0
	}
	return s.iters + set.MaxIterations
}

// copySolution copies the structural values and, where the last pricing
// was in phase 2, the row duals: y = B⁻ᵀc_B in minimisation costs is
// ∂objective/∂rhs for the model's sense after the sign of the costs is
// undone.
func (s *simplex) copySolution(sol *Solution) {
	sol.X = append([]float64(nil), s.x[:s.n]...)
	sol.Basis = s.basis()
	if sol.Status != Optimal {
		s.sc.unscale(sol)
		return
	}
	sol.RowDuals = make([]float64, s.loaded)
	for i, y := range s.y {
		sol.RowDuals[s.rowOf(i)] = s.sense * y
	}
	s.sc.unscale(sol)
}

// basis returns the current basis by the model's indices.
func (s *simplex) basis() *Basis {
	b := &Basis{}
	for _, j := range s.head {
		if j < s.n {
			b.Vars = append(b.Vars, Var(j))
		}
	}
	for i := range s.m {
		if s.where[s.n+i] < 0 {
			b.Tight = append(b.Tight, Row(s.rowOf(i)))
		}
	}
	return b
}

// stopped wraps the error of a done context as Solve reports it: a
// deadline matches ErrTimeLimit as well; other errors pass unchanged.
func stopped(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeLimit, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("lp: solve stopped: %w", err)
	}
	return err
}
