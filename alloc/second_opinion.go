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
// A second opinion that the model is infeasible or unbounded is a verdict,
// returned where no backend solves it: the Pareto LP asked again with
// every row's loss added to its floor may be infeasible, which its caller
// takes as its answer, and CLP reported a solution off a row by 1.5e-6 for
// one where the pure-Go simplex and gonum both proved it infeasible (a
// rapid case of TestPropertyAuditEveryPolicy with CLP). Otherwise the first
// error is returned if every backend fails.
func solveSecondOpinion(ctx context.Context, m *lp.Model, set *lp.Settings) (*lp.Solution, error) {
	sol, err := lp.Solve(ctx, m, set)
	if err == nil || !(errors.Is(err, lp.ErrNumerical) || errors.Is(err, lp.ErrViolation) || errors.Is(err, lp.ErrIterationLimit)) {
		return sol, err
	}
	var first lp.Settings
	if set != nil {
		first = *set
	}
	var verdict error
	for _, b := range otherBackends(first.Backend, m.NumVars()) {
		next := first
		next.Backend = b
		alt, altErr := lp.Solve(ctx, m, &next)
		if altErr == nil {
			return alt, nil
		}
		if verdict == nil && (errors.Is(altErr, lp.ErrInfeasible) || errors.Is(altErr, lp.ErrUnbounded)) {
			verdict = altErr
		}
	}
	if verdict != nil {
		return nil, verdict
	}
	return sol, err
}

// otherBackends returns the LP backends to ask for a second opinion on a
// model of vars columns after tried: CLP, the pure-Go simplex, and gonum
// for small models, tried left out.
func otherBackends(tried lp.Backend, vars int) []lp.Backend {
	var out []lp.Backend
	for _, b := range []lp.Backend{lp.CLP, lp.PureGo, lp.Gonum} {
		if b != tried.Resolve() && (b != lp.Gonum || vars <= secondOpinionVars) {
			out = append(out, b)
		}
	}
	return out
}
