package alloc

import (
	"context"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// FinishTimeFairness is Gavel's finish-time-fairness policy (§4.2, after
// Themis): minimise the largest ratio ρ of the time a job takes to finish
// under the allocation to the time it would take with 1/n of the cluster,
//
//	ρ_m(X) = (t_m + S_m/throughput(m, X)) / (t^iso_m + S_m/throughput(m, X^iso)),
//	minimise_X  max_m ρ_m(X)
//
// with S_m = RemainingSteps[m], t_m = Elapsed[m] (time since the job
// started), t^iso_m = IsolatedElapsed[m] (the time it would have needed for
// its past progress with 1/n of the cluster, which Gavel accumulates round
// by round as steps done / isolated throughput), throughput(m, X) =
// Σ_k T_mk·X_mk, and X^iso the isolated allocation: Count_k/n GPUs of every
// type k for each of the n jobs, in time fractions Count_k/(n·Gang_m),
// scaled down together when they exceed the job's whole time.
//
// The problem is a generalised linear-fractional program (each ρ_m is a
// ratio of affine functions of X), not one LP unless every t_m is 0. It is
// solved exactly by the Dinkelbach-type method of Crouzeix, Ferland and
// Schaible (1985): from X_0 = X^iso and ρ_0 = max_m ρ_m(X_0), each step
// solves the LP
//
//	minimise z  s.t.  (t_m·thr_m(X) + S_m − ρ_j·D_m·thr_m(X)) / (ρ_j·D_m·thr_m(X_j)) ≤ z  for every m
//
// (D_m the denominator of ρ_m, thr_m(X) the throughput), sets X_{j+1} to its
// solution and ρ_{j+1} = max_m ρ_m(X_{j+1}), and stops when z ≥ −1e-9:
// then no allocation lowers the largest ρ by more than 1e-9 of it. It also
// stops, keeping X_j, when X_{j+1} does not lower the largest ρ: the LP's
// z is then below its solver's accuracy. The scaled rows make the
// convergence superlinear; a handful of LPs is typical. After 100 LPs it
// gives up with an error wrapping lp.ErrIterationLimit.
//
// Each step's LP is a max-min level problem: every row is a floor on one
// job's throughput that rises with −z. Method Decomposed, the default,
// solves it as MaxMin does, by cutting planes over the K prices, started
// from the previous step's allocation: 19–26 ms at 4,096 jobs of Gavel's
// job types, where the one LP over every job's time fractions (FullLP)
// takes 3.5 s (docs/benchmarks/gavel.md). The cutting planes are exact
// only to about 1e-6 of the level, so where a decomposed step makes less
// than half the improvement it claims at that scale, the remaining steps
// solve the full LP.
//
// Elapsed and IsolatedElapsed may be nil (all zero: jobs that have just
// arrived; then the problem is one max-min LP and the first step solves
// it). RemainingSteps is required. All are aligned with Problem.Jobs, and
// none may exceed MaxWorkTime (for RemainingSteps, the time the work takes
// alone). A job whose throughput row is all zero is an
// *gpufair.InputError: its ρ is infinite.
//
// Properties: max_m ρ_m ≤ max_m ρ_m(X^iso), which is 1 when IsolatedElapsed
// equals Elapsed (sharing incentive in Themis' sense). Only the largest ρ
// is minimised: jobs below it may keep slack, so the allocation is not
// Pareto-efficient in general and the optimum is not unique. Of the
// optima, the one returned gives the GPUs the solved LP leaves idle to
// jobs with time to spare, largest ρ first (fillIdle; it lowers only
// their ρ). Not strategy-proof: ρ is measured against each job's own
// reported rates.
type FinishTimeFairness struct {
	RemainingSteps  []float64 // S_m, iterations left; positive
	Elapsed         []float64 // t_m, time since the job started; nil means zeros
	IsolatedElapsed []float64 // t^iso_m; nil means zeros
	// Method solves each step's LP: Decomposed (the zero value) as a
	// max-min level problem by cutting planes over the K prices (see
	// MaxMin), FullLP as one LP over every job's time fractions.
	Method MaxMinMethod
}

// ftfTol is the relative improvement of the largest ρ below which the
// Dinkelbach iteration stops: the returned max ρ is within that fraction
// of the optimum.
const ftfTol = 1e-9

// ftfMaxLPs bounds the number of LPs FinishTimeFairness solves.
const ftfMaxLPs = 100

// step solves the Dinkelbach LP at the allocation x (time fractions), whose
// throughputs are thr and largest ρ is rho, and returns its solution and z.
func (pol FinishTimeFairness) step(ctx context.Context, in ftfInputs, method MaxMinMethod, x [][]float64, thr []float64, rho float64) ([][]float64, float64, error) {
	switch method {
	case Decomposed:
		if lv, classes, ok := in.levelStep(x, thr, rho); ok {
			sol, err := solveLevelDecomposed(ctx, lv, classMeans(classes, in.p, x), nil)
			if err == nil {
				return classTimeFractions(in.p, classes, sol.y), -sol.t, nil
			}
			if ctx.Err() != nil {
				return nil, 0, fmt.Errorf("alloc: %s: %w", pol.Name(), err)
			}
			// The one LP is the reference, and a round's decision should
			// not fail where it would succeed.
		}
		return in.fullStep(ctx, pol.Name(), thr, rho)
	case FullLP:
		return in.fullStep(ctx, pol.Name(), thr, rho)
	}
	return nil, 0, fmt.Errorf("%w: unknown max-min method %d", lp.ErrInvalidSettings, method)
}

// fullStep solves the Dinkelbach LP as one LP over every job's time
// fractions.
func (in ftfInputs) fullStep(ctx context.Context, name string, thr []float64, rho float64) ([][]float64, float64, error) {
	p := in.p
	m := lp.NewModel(lp.Minimize)
	v := addTimeFractions(m, p)
	z := m.AddVar("z", -lp.Inf, lp.Inf, 1)
	for i := range p.Jobs {
		// Each row is also divided by ρ_j, so z is relative to the
		// largest ρ: a job whose past progress dwarfs its work left
		// has a ρ near zero, and unscaled rows of that size (1e-30
		// for one whose progress took MaxWorkTime isolated) leave nothing
		// for the LP to tell from zero. The terms are divided one by
		// one, so that D_m·ρ_j is never formed.
		coef := (in.elapsed[i]/in.den[i]/rho - 1) / thr[i]
		rhs := -in.steps[i] / in.den[i] / rho / thr[i]
		terms := append(v.throughput(i, coef), lp.Term{Var: z, Coef: -1})
		m.AddConstraint("rho", terms, lp.LE, rhs)
	}
	sol, err := gavelSolve(ctx, name, m, nil)
	if err != nil {
		return nil, 0, err
	}
	return v.values(sol), sol.Value(z), nil
}

// levelStep returns the Dinkelbach LP at thr and rho as a max-min level
// problem over classes of jobs with equal rows, in GPUs y = Gang·X: with
// u = −z, fullStep's row of job m reads
//
//	Σ_k a_m·T_mk/(Gang_m·thr_m)·y_mk ≥ S_m/(D_m·ρ·thr_m) + u,  a_m = 1 − t_m/(D_m·ρ),
//
// a level problem with slope 1, and at u = 0 x meets every row (its
// left-hand side minus the base is 1 − ρ_m(x)/ρ ≥ 0). It reports false
// where some a_m is not positive in floating point (a job whose work left
// is below rounding of its elapsed time): its row has no usable type, and
// fullStep solves that step instead.
func (in ftfInputs) levelStep(x [][]float64, thr []float64, rho float64) (*levelProblem, rowClasses, bool) {
	p := in.p
	n := len(p.Jobs)
	rates, base := make([][]float64, n), make([]float64, n)
	for i, j := range p.Jobs {
		a := 1 - in.elapsed[i]/in.den[i]/rho
		if !(a > 0) || !(thr[i] > 0) {
			return nil, rowClasses{}, false
		}
		scale := a / thr[i] / float64(j.Gang)
		rates[i] = make([]float64, len(x[i]))
		for k := range rates[i] {
			rates[i][k] = p.Throughputs.At(i, k) * scale
		}
		base[i] = in.steps[i] / in.den[i] / rho / thr[i]
	}
	lv, classes := newLevelProblem(p, rates, allOnes(n), base)
	for c, i := range classes.rep {
		lv.base[c] = base[i]
	}
	return lv, classes, true
}

// classMeans returns, per class, the mean bundle in GPUs of its members'
// time fractions x: members share the class's rows, so the mean meets
// them wherever every member does, and uses the same GPUs in all.
func classMeans(classes rowClasses, p *Problem, x [][]float64) [][]float64 {
	y := make([][]float64, classes.numClasses())
	for i, row := range x {
		c := classes.of[i]
		if y[c] == nil {
			y[c] = make([]float64, len(row))
		}
		g := float64(p.Jobs[i].Gang) / float64(classes.size[c])
		for k, f := range row {
			y[c][k] += f * g
		}
	}
	return y
}

// fittedFractions returns x as timeFractionsToAllocation repairs it, in
// time fractions: each job's within its time, each type's within its GPUs.
func fittedFractions(p *Problem, x [][]float64) [][]float64 {
	a := timeFractionsToAllocation(p, x)
	for i, row := range a.GPUs {
		g := float64(p.Jobs[i].Gang)
		for k, y := range row {
			x[i][k] = y / g
		}
	}
	return x
}

// Name returns "finish-time-fairness".
func (FinishTimeFairness) Name() string { return "finish-time-fairness" }

// Allocate returns an allocation minimising the largest finish-time ratio ρ.
func (pol FinishTimeFairness) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	if err := checkMaxMinMethod("FinishTimeFairness.Method", pol.Method); err != nil {
		return nil, err
	}
	in, err := pol.inputs(p)
	if err != nil {
		return nil, err
	}
	p = in.p
	_, x := p.isolatedThroughputs()
	thr := p.throughputsOf(x)
	rho := in.maxRho(thr)
	method := pol.Method
	for range ftfMaxLPs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("alloc: %s: %w", pol.Name(), err)
		}
		nx, z, err := pol.step(ctx, in, method, x, thr, rho)
		if err != nil {
			return nil, err
		}
		// A solution may use its types' GPUs to the solver's tolerance
		// (1e-10 over was seen), and the next decomposed step starts
		// from it: its first point must fit, or the master is unbounded.
		nx = fittedFractions(p, nx)
		nthr := p.throughputsOf(nx)
		nrho := in.maxRho(nthr)
		// An LP whose solution does not lower the largest ρ claims an
		// improvement below its solver's accuracy (CLP: z of −1.6e-8
		// again and again), and the next LP would be the same one. The
		// cutting planes end within 1e-6 of the level where CLP's
		// tolerances stall their master, so their z can stay below
		// −ftfTol while ρ falls by less than ftfTol of itself a step
		// (100 steps without an end, with CLP): that is convergence too.
		if z >= -ftfTol || rho-nrho <= ftfTol*rho {
			if nrho < rho {
				x, thr = nx, nthr
			}
			fillIdle(p, x, in.rhos(thr))
			return timeFractionsToAllocation(p, x), nil
		}
		// Cutting planes end within stallTol of their level, so a
		// decomposed step whose LP claims an improvement of that order
		// may not make it: with CLP, on a round of Gavel's workload, steps
		// claimed 1e-6 of the largest ρ and made 4e-9, step after step,
		// until the 100th LP. Where a step claims no more than ten times
		// that precision and makes less than half its claim, the full LP,
		// the reference, takes the remaining steps from here. (Far from
		// the optimum, making a third of the claim is common and exact:
		// the claim bounds the new worst job's ρ only as far as its
		// throughput stays put.)
		if method == Decomposed && -z <= 10*stallTol && rho-nrho < -z*rho/2 {
			method = FullLP
		}
		x, thr, rho = nx, nthr, nrho
	}
	return nil, fmt.Errorf("alloc: %s: no convergence after %d LPs: %w", pol.Name(), ftfMaxLPs, lp.ErrIterationLimit)
}

// Rho returns each job's finish-time ratio ρ_m under allocation a (in GPUs,
// as Allocate returns it), +Inf for a job that a gives no throughput.
func (pol FinishTimeFairness) Rho(p *Problem, a *Allocation) ([]float64, error) {
	in, err := pol.inputs(p)
	if err != nil {
		return nil, err
	}
	p = in.p
	if err := a.ValidateFor(p); err != nil {
		return nil, err
	}
	return in.rhos(a.Utilities(p.Valuations())), nil
}

// ftfInputs are the validated constants of ρ_m: numerator t_m + S_m/thr,
// denominator den_m = t^iso_m + S_m/thr^iso_m, over p, the problem with
// normalised rates (validNormalised) in whose units the steps are.
type ftfInputs struct {
	steps, elapsed, den []float64
	p                   *Problem
}

func (pol FinishTimeFairness) inputs(p *Problem) (ftfInputs, error) {
	p, ref, err := p.validNormalised()
	if err != nil {
		return ftfInputs{}, err
	}
	ids := p.JobIDs()
	zeros := make([]float64, len(ids))
	elapsed, iso := pol.Elapsed, pol.IsolatedElapsed
	if elapsed == nil {
		elapsed = zeros
	}
	if iso == nil {
		iso = zeros
	}
	for _, c := range []struct {
		field string
		v     []float64
		rule  valueRule
	}{
		{"FinishTimeFairness.RemainingSteps", pol.RemainingSteps, positive},
		{"FinishTimeFairness.Elapsed", elapsed, duration},
		{"FinishTimeFairness.IsolatedElapsed", iso, duration},
	} {
		if err := checkAligned(c.field, c.v, ids, c.rule); err != nil {
			return ftfInputs{}, err
		}
	}
	if err := p.requireRunnable(pol.Name()); err != nil {
		return ftfInputs{}, err
	}
	rates, _ := p.isolatedThroughputs()
	in := ftfInputs{steps: work(pol.RemainingSteps, ref), elapsed: elapsed, den: make([]float64, len(ids)), p: p}
	if err := p.checkWorkTimes("FinishTimeFairness.RemainingSteps", in.steps); err != nil {
		return ftfInputs{}, err
	}
	for i, r := range rates {
		in.den[i] = iso[i] + in.steps[i]/r
	}
	return in, nil
}

func (in ftfInputs) rho(i int, thr float64) float64 {
	if thr <= 0 {
		return math.Inf(1)
	}
	return (in.elapsed[i] + in.steps[i]/thr) / in.den[i]
}

// rhos returns each job's ρ at throughputs thr.
func (in ftfInputs) rhos(thr []float64) []float64 {
	rho := make([]float64, len(thr))
	for i, t := range thr {
		rho[i] = in.rho(i, t)
	}
	return rho
}

func (in ftfInputs) maxRho(thr []float64) float64 {
	worst := math.Inf(-1)
	for i, t := range thr {
		worst = max(worst, in.rho(i, t))
	}
	return worst
}
