package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// MinCost is Gavel's cost policy for elastic cloud clusters (§4.2): the
// most throughput per unit of cost, optionally subject to SLOs,
//
//	maximise_X  Σ_m throughput(m, X) / Σ_m Σ_k Cost_k·Gang_m·X_mk
//	s.t.        throughput(m, X) ≥ S_m/SLO_m  for every job with an SLO,  X feasible,
//
// with throughput(m, X) = Σ_k T_mk·X_mk. The denominator is the hourly bill:
// Cost_k per GPU per hour, Gang_m GPUs during X_mk of the time (Gavel prints
// Σ Cost_k·X_mk, which leaves out the gang; a job on 8 GPUs pays for 8).
//
// The linear-fractional program is solved as ONE LP by the Charnes–Cooper
// transformation: with u = 1/(bill) and Y = u·X,
//
//	maximise Σ_m Σ_k T_mk·Y_mk
//	s.t.     Σ_m Σ_k Cost_k·Gang_m·Y_mk = 1,
//	         Σ_k Y_mk ≤ u,  Σ_m Gang_m·Y_mk ≤ Count_k·u,  Σ_k T_mk·Y_mk ≥ (S_m/SLO_m)·u,  Y, u ≥ 0,
//
// and X = Y/u. The ratio does not change when X is scaled, so the optimum is
// a ray; the policy returns its largest feasible point (X scaled up until a
// job's time or a type's count binds): no GPU stays idle that could run at
// the optimal throughput per cost, and SLOs stay met since throughput grows
// with the scale.
//
// Cost is aligned with Capacity.Types and must be positive and finite (a
// free type makes the ratio unbounded). RemainingSteps and SLO are aligned
// with Problem.Jobs; both nil means no SLOs. SLO[m] is the time by which job
// m must finish, in the time unit of the throughputs, +Inf for none; the
// work left may take each job at most MaxWorkTime alone.
// SLOs no allocation can meet give an *SLOError wrapping lp.ErrInfeasible.
//
// Cost: one LP of classes×types+1 columns and 2·classes+types+1 rows, a
// class being the jobs of equal rates, gang and required throughput
// (interchangeable here: the optimum that splits each class evenly is
// returned).
//
// Properties: without SLOs the optimum runs only the (job, type) pairs of
// the best throughput per cost and starves every other job; it has none of
// the fairness axioms. With SLOs every job with an SLO finishes by it
// (under the constant allocation) when the SLOs are feasible.
type MinCost struct {
	Cost           []float64 // per GPU per hour, one per cluster type
	RemainingSteps []float64 // S_m, for the SLOs; nil when SLO is nil
	SLO            []float64 // deadline of each job, +Inf for none; nil for no SLOs
}

// SLOError reports SLOs that no allocation meets. It wraps lp.ErrInfeasible.
type SLOError struct {
	Policy string
	Job    JobID   // the job whose SLO alone cannot be met; empty when only the SLOs together cannot
	Need   float64 // the throughput Job needs, S/SLO
	Max    float64 // the most Job can get with the cluster to itself
}

// Error says which job's SLO cannot be met and the most it can get, or
// that the SLOs cannot all be met together.
func (e *SLOError) Error() string {
	if e.Job == "" {
		return fmt.Sprintf("alloc: %s: the SLOs cannot all be met together: %v", e.Policy, lp.ErrInfeasible)
	}
	return fmt.Sprintf("alloc: %s: job %s needs %.6g steps per unit time to meet its SLO, at most %.6g is possible: %v",
		e.Policy, e.Job, e.Need, e.Max, lp.ErrInfeasible)
}

// Unwrap returns lp.ErrInfeasible.
func (e *SLOError) Unwrap() error { return lp.ErrInfeasible }

// sloTol is the relative margin by which a job's SLO may exceed its best
// throughput alone before it is reported as infeasible without solving.
const sloTol = 1e-9

// minNeed is the smallest throughput, relative to its best alone, that an
// SLO asks of a job: a smaller need is raised to it, and the SLO is then met
// with room. An LP row of 1e-270 (1e30 steps due in 1e300 s) beside the
// job's rates was beyond what the pure-Go simplex resolves, and CLP, within
// its tolerances, gave a need of 1e-12 of the best nothing at all; at
// 1e-6 both meet it. Such a job's deadline is a million times its time
// alone, and the cost per throughput moves by about minNeed.
const minNeed = 1e-6

// Name returns "min-cost", or "min-cost-slo" when SLOs are set.
func (pol MinCost) Name() string {
	if pol.SLO != nil {
		return "min-cost-slo"
	}
	return "min-cost"
}

// Allocate returns the allocation of most throughput per cost that meets
// the SLOs.
func (pol MinCost) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	need, p, err := pol.inputs(p)
	if err != nil {
		return nil, err
	}
	// Jobs of equal rates, gang and required throughput share variables:
	// Y[c] is class c's total, and each of its rows is its members' sum.
	rc := p.rateClasses(func(i int) []float64 { return need[i : i+1] })
	classes, types := rc.numClasses(), p.Capacity.NumTypes()
	m := lp.NewModel(lp.Maximize)
	y := m.AddGrid("Y", classes, types, 0, lp.Inf)
	u := m.AddVar("u", 0, lp.Inf, 0)
	ones := allOnes(types)
	bill := make([]lp.Term, 0, classes*types)
	gang := p.classGangs(rc)
	for c, i := range rc.rep {
		size := float64(rc.size[c])
		m.AddConstraint("time", append(y.RowTerms(c, ones), lp.Term{Var: u, Coef: -size}), lp.LE, 0)
		rates := p.Throughputs.Row(i)
		for k, r := range rates {
			if r != 0 {
				m.SetObjective(y.At(c, k), r)
			}
			bill = append(bill, lp.Term{Var: y.At(c, k), Coef: pol.Cost[k] * gang[c]})
		}
		if need[i] > 0 {
			m.AddConstraint("slo", append(y.RowTerms(c, rates), lp.Term{Var: u, Coef: -need[i] * size}), lp.GE, 0)
		}
	}
	for k, n := range p.Capacity.Count {
		m.AddConstraint("capacity", append(y.ColTerms(k, gang), lp.Term{Var: u, Coef: -n}), lp.LE, 0)
	}
	m.AddConstraint("bill", bill, lp.EQ, 1)
	sol, err := gavelSolve(ctx, pol.Name(), m, nil)
	if errors.Is(err, lp.ErrInfeasible) {
		return nil, &SLOError{Policy: pol.Name()}
	}
	if err != nil {
		return nil, err
	}
	return timeFractionsToAllocation(p, scaleToCapacity(p, rc.split(y.Values(sol)))), nil
}

// inputs validates the policy's fields and returns each job's required
// throughput S_m/SLO_m (0 for none), checking each against the most the job
// can get alone, with the problem of normalised rates (validNormalised) in
// whose units it is.
func (pol MinCost) inputs(p *Problem) ([]float64, *Problem, error) {
	p, ref, err := p.validNormalised()
	if err != nil {
		return nil, nil, err
	}
	if err := checkAligned("MinCost.Cost", pol.Cost, p.typeNames(), positive); err != nil {
		return nil, nil, err
	}
	need := make([]float64, len(p.Jobs))
	if pol.SLO == nil && pol.RemainingSteps == nil {
		return need, p, nil
	}
	ids := p.JobIDs()
	if err := checkAligned("MinCost.RemainingSteps", pol.RemainingSteps, ids, positive); err != nil {
		return nil, nil, err
	}
	if err := checkAligned("MinCost.SLO", pol.SLO, ids, positiveInf); err != nil {
		return nil, nil, err
	}
	steps := work(pol.RemainingSteps, ref)
	if err := p.checkWorkTimes("MinCost.RemainingSteps", steps); err != nil {
		return nil, nil, err
	}
	for i, s := range steps {
		need[i] = s / pol.SLO[i]
		best := p.bestAlone(i)
		if need[i] > best*(1+sloTol) {
			return nil, nil, &SLOError{Policy: pol.Name(), Job: p.Jobs[i].ID, Need: need[i] * ref, Max: best * ref}
		}
		if need[i] > 0 {
			need[i] = max(need[i], minNeed*best)
		}
	}
	return need, p, nil
}

// scaleToCapacity multiplies x by the largest factor that keeps every job's
// time within 1 and every type within its count. It modifies x.
func scaleToCapacity(p *Problem, x [][]float64) [][]float64 {
	load := 0.0
	used := make([]float64, p.Capacity.NumTypes())
	for i, row := range x {
		var t float64
		for k, f := range row {
			t += f
			used[k] += f * float64(p.Jobs[i].Gang)
		}
		load = max(load, t)
	}
	for k, n := range p.Capacity.Count {
		load = max(load, used[k]/n)
	}
	if load == 0 || math.IsInf(load, 0) {
		return x
	}
	for _, row := range x {
		for k := range row {
			row[k] /= load
		}
	}
	return x
}
