package lp

import (
	"context"
	"errors"
	"fmt"
)

// solve runs the pure-Go simplex from its current basis and reports the
// outcome as Solve does. An optimal solution carries the row duals in the
// model's own sense (∂objective/∂rhs); a solve stopped by the context or
// the iteration limit carries the current point.
func (s *simplex) solve(ctx context.Context, set Settings) (*Solution, error) {
	sol := &Solution{Backend: PureGo}
	start := s.iters
	out, err := s.run(ctx, s.iterationLimit(set))
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
		if errors.Is(err, context.DeadlineExceeded) {
			return sol, fmt.Errorf("%w after %d iterations: %w", ErrTimeLimit, sol.Iterations, err)
		}
		return sol, fmt.Errorf("lp: solve stopped after %d iterations: %w", sol.Iterations, err)
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
	if sol.Status != Optimal {
		return
	}
	sol.RowDuals = make([]float64, s.m)
	for i, y := range s.y {
		sol.RowDuals[i] = s.sense * y
	}
}
