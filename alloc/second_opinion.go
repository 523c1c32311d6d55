package alloc

import (
	"context"
	"errors"

	"github.com/gpufair/gpufair/lp"
)

// secondOpinionVars is the largest model solveSecondOpinion hands to
// gonum's dense simplex, which cannot be interrupted.
const secondOpinionVars = 400

// solveSecondOpinion solves m with set and, when the backend fails
// numerically (cycling, a singular basis, a solution off its rows), with
// the other backends in turn (one this binary lacks fails at once): CLP,
// the pure-Go simplex, and gonum for small models. It is for LPs that are
// feasible and bounded by construction, where such a failure says nothing
// about the input: the Pareto LP, on which the pure-Go simplex cycled for
// rows that value two types equally to 8 digits (a rapid case of
// TestPropertyAuditEveryPolicy) where gonum solved it, and the policies'
// LPs, where CLP left a max-min row of jobs weighted 7e10 and 1 broken by
// 1e-3 (FuzzEvents, examples/simulate) where the pure-Go simplex solved it.
// The first error is returned if every backend fails.
func solveSecondOpinion(ctx context.Context, m *lp.Model, set *lp.Settings) (*lp.Solution, error) {
	sol, err := lp.Solve(ctx, m, set)
	if err == nil || !(errors.Is(err, lp.ErrNumerical) || errors.Is(err, lp.ErrViolation) || errors.Is(err, lp.ErrIterationLimit)) {
		return sol, err
	}
	var first lp.Settings
	if set != nil {
		first = *set
	}
	tried := first.Backend.Resolve()
	for _, b := range []lp.Backend{lp.CLP, lp.PureGo, lp.Gonum} {
		if b == tried || (b == lp.Gonum && m.NumVars() > secondOpinionVars) {
			continue
		}
		next := first
		next.Backend = b
		if alt, altErr := lp.Solve(ctx, m, &next); altErr == nil {
			return alt, nil
		}
	}
	return sol, err
}
