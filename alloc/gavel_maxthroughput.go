package alloc

import (
	"context"

	"github.com/gpufair/gpufair/lp"
)

// MaxTotalThroughput is Gavel's throughput-maximising policy (§3.1): over
// time fractions X,
//
//	maximise  Σ_m Σ_k T_mk·X_mk
//	s.t.      Σ_k X_mk ≤ 1 for every job m,  Σ_m Gang_m·X_mk ≤ Count_k for every type k,  X ≥ 0.
//
// The sum adds the rates of Problem.Throughputs as they are: to sum
// normalised throughputs instead (speedups, or rates relative to an equal
// share), build the Problem from speedup.Matrix.RelativeToEqualShare or
// RelativeTo. Jobs with a zero row get nothing.
//
// Cost: one LP with classes×types columns and classes+types rows, a class
// being the jobs of equal rates and gang (interchangeable here: the
// optimum that splits each class evenly is returned).
//
// Properties: Pareto-efficient in effective throughput (any improvement for
// one job that hurts nobody would raise the sum) and work-conserving. It is
// not fair: it gives nothing to jobs that make poor use of every type, so it
// is neither sharing-incentive nor envy-free. The optimum is often not
// unique; which optimal vertex the solver returns is deterministic for a
// given input but otherwise unspecified.
type MaxTotalThroughput struct {
	// LP tunes the LP solve; nil means lp's defaults.
	LP *lp.Settings
}

// Name returns "max-total-throughput".
func (MaxTotalThroughput) Name() string { return "max-total-throughput" }

// Allocate returns a throughput-maximising allocation.
func (pol MaxTotalThroughput) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	m := lp.NewModel(lp.Maximize)
	v := addClassTimeFractions(m, p, p.rateClasses(nil))
	for c := range v.rc.numClasses() {
		for _, t := range v.throughput(c, 1) {
			m.SetObjective(t.Var, t.Coef)
		}
	}
	sol, err := gavelSolve(ctx, pol.Name(), m, pol.LP)
	if err != nil {
		return nil, err
	}
	return v.allocation(sol), nil
}
