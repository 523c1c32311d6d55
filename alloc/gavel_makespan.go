package alloc

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/lp"
)

// Makespan is Gavel's makespan policy (§4.2): finish the whole batch of
// jobs as early as possible,
//
//	minimise_X  max_m  S_m / throughput(m, X)
//
// where S_m = RemainingSteps[m] and throughput(m, X) = Σ_k T_mk·X_mk, over the
// time fractions X of Gavel's constraints. Writing λ = 1/makespan (the
// variables are the time fractions divided by the makespan, S_m/makespan
// steps per second) turns it into ONE linear program, with no bisection:
//
//	maximise λ  s.t.  Σ_k T_mk·X_mk ≥ λ·S_m for every job m,  X feasible.
//
// The makespan is 1/λ*. Internally λ is scaled by λ_ref = min_m best_m/S_m
// (best_m: the job's throughput with the cluster to itself), an upper bound,
// so the LP's level lies in [0, 1], and the objective is multiplied by the
// number of jobs (LP-NOTES: keeps the fairness rows' duals away from the
// solver's tolerance).
//
// A job whose work left would take it, alone on the cluster, less than
// makespanFloor of the longest such time counts as having that much work:
// its LP row would otherwise be that much smaller than the others', beyond
// what a double-precision simplex resolves (1e-3 steps beside 1e15 gave
// an allocation that broke its constraints). With n_f jobs so raised, the
// makespan is within a factor 1/(1 − n_f·makespanFloor) of the optimum.
//
// Every job must be able to run somewhere: a zero throughput row makes the
// makespan infinite and is an *gpufair.InputError (gpufair.ErrValue). RemainingSteps must
// be positive, one per job (aligned with Problem.Jobs), and take each job
// at most MaxWorkTime alone.
//
// The LP is a max-min level problem (each job's throughput over its work
// at least the level), which Method Decomposed, the default, solves as
// MaxMin does, by cutting planes over the K prices: 26–32 ms at 4,096 jobs
// of Gavel's job types, each with its own work, where FullLP, one LP of
// jobs×types+1 columns and 2·jobs+types rows, takes 1.7–1.8 s
// (docs/benchmarks/gavel.md).
//
// Properties: every job finishes by the optimal makespan under the returned
// allocation (time fractions held constant). Jobs that finish before the
// makespan may keep slack, so the optimum is rarely unique (the one
// returned gives the GPUs the solved LP leaves idle to jobs with time to
// spare, latest finish first: fillIdle); it is sharing
// incentive in the sense of Gavel §4.4 (the makespan is no later than under
// the isolated 1/n split), nothing more: it is not envy-free, and it favours
// long jobs over short ones.
type Makespan struct {
	// RemainingSteps[m] is the number of iterations job m still has to run
	// (Gavel's num_steps_m), in the unit of Problem.Throughputs' time.
	RemainingSteps []float64
	// Method solves the LP: Decomposed (the zero value) by cutting planes
	// over the K prices (see MaxMin), FullLP as one LP over every job's
	// time fractions.
	Method MaxMinMethod
}

// Name returns "makespan".
func (Makespan) Name() string { return "makespan" }

// Allocate returns an allocation that minimises the makespan.
func (pol Makespan) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	if err := checkMaxMinMethod("Makespan.Method", pol.Method); err != nil {
		return nil, err
	}
	p, ref, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	// Each job must reach λ·S_m: a max-min over throughput/S_m.
	steps, err := makespanWork(p, ref, "Makespan.RemainingSteps", pol.Name(), pol.RemainingSteps)
	if err != nil {
		return nil, err
	}
	scale := make([]float64, len(p.Jobs))
	for i, s := range steps {
		scale[i] = 1 / s
	}
	var x [][]float64
	switch pol.Method {
	case Decomposed:
		lv, classes := ratioLevelProblem(p, scale)
		sol, err := solveLevelDecomposed(ctx, lv, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("alloc: %s: %w", pol.Name(), err)
		}
		x = classTimeFractions(p, classes, sol.y)
	case FullLP:
		m, v := maxMinRatioModel(p, scale)
		sol, err := gavelSolve(ctx, pol.Name(), m, nil)
		if err != nil {
			return nil, err
		}
		x = v.values(sol)
	default:
		return nil, fmt.Errorf("%w: unknown max-min method %d", lp.ErrInvalidSettings, pol.Method)
	}
	x = fittedFractions(p, x)
	finish := p.throughputsOf(x)
	for i, t := range finish {
		finish[i] = steps[i] / t // +Inf for a job x leaves out
	}
	fillIdle(p, x, finish)
	return timeFractionsToAllocation(p, x), nil
}

// makespanWork validates the work left of a makespan policy (named policy;
// field names the input in errors) over p, normalised by ref, and returns
// it in p's units, raised by flooredSteps.
func makespanWork(p *Problem, ref float64, field, policy string, steps []float64) ([]float64, error) {
	if err := checkAligned(field, steps, p.JobIDs(), positive); err != nil {
		return nil, err
	}
	if err := p.requireRunnable(policy); err != nil {
		return nil, err
	}
	w := work(steps, ref)
	if err := p.checkWorkTimes(field, w); err != nil {
		return nil, err
	}
	return flooredSteps(p, w), nil
}

// ratioReference returns min_m scale_m·best_m, the largest level every job
// could reach alone, by which both of Makespan's methods divide their
// rows so that the level lies in [0, 1]. Every job must have best_m > 0.
func ratioReference(p *Problem, scale []float64) float64 {
	ref := 0.0
	for i := range p.Jobs {
		if r := scale[i] * p.bestAlone(i); i == 0 || r < ref {
			ref = r
		}
	}
	return ref
}

// ratioLevelProblem returns maxMinRatioModel's LP as a level problem over
// classes of jobs with equal rows, in GPUs y = Gang·X: job m's row reads
// Σ_k scale_m·T_mk/(ref·Gang_m)·y_mk ≥ level, with slope 1 and base 0.
func ratioLevelProblem(p *Problem, scale []float64) (*levelProblem, rowClasses) {
	ref := ratioReference(p, scale)
	rates := make([][]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		rates[i] = p.Throughputs.Row(i)
		f := scale[i] / ref / float64(j.Gang)
		for k := range rates[i] {
			rates[i][k] *= f
		}
	}
	return newLevelProblem(p, rates, allOnes(len(p.Jobs)), nil)
}

// maxMinRatioModel returns the LP
//
//	maximise N·μ  s.t.  scale_m·Σ_k T_mk·X_mk / ref ≥ μ,  0 ≤ μ ≤ 1,  X feasible,
//
// with ref = min_m scale_m·best_m, the largest level any job could reach
// alone, so that μ = level/ref is well scaled. Every job must have best_m > 0.
func maxMinRatioModel(p *Problem, scale []float64) (*lp.Model, timeFractions) {
	ref := ratioReference(p, scale)
	m := lp.NewModel(lp.Maximize)
	v := addTimeFractions(m, p)
	mu := m.AddVar("level", 0, 1, float64(len(p.Jobs)))
	for i := range p.Jobs {
		terms := append(v.throughput(i, scale[i]/ref), lp.Term{Var: mu, Coef: -1})
		m.AddConstraint("level", terms, lp.GE, 0)
	}
	return m, v
}

// makespanFloor is the smallest time alone, relative to the longest, that
// Makespan gives a job's work left (flooredSteps).
const makespanFloor = 1e-9

// flooredSteps returns steps with each job's work raised to at least
// makespanFloor·best_m·T, T being the longest time alone, max_m S_m/best_m.
//
// The optimum moves little. Let λ* be the optimal 1/makespan, X* its
// allocation, and Y give each of the n_f raised jobs 1/n_f of its best
// allocation alone (jointly feasible). X' = (1−ε)·X* + ε·Y with
// ε = n_f·makespanFloor meets the raised steps at level (1−ε)·λ*, since
// λ* ≤ 1/T: a raised job needs (1−ε)·λ*·makespanFloor·best_m·T ≤ ε·best_m/n_f.
func flooredSteps(p *Problem, steps []float64) []float64 {
	best := make([]float64, len(steps))
	longest := 0.0
	for i, s := range steps {
		best[i] = p.bestAlone(i)
		longest = max(longest, s/best[i])
	}
	out := make([]float64, len(steps))
	for i, s := range steps {
		out[i] = max(s, makespanFloor*best[i]*longest)
	}
	return out
}
