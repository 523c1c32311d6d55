package alloc

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// MaxMin is Gavel's heterogeneity-aware weighted max-min fairness (Least
// Attained Service over effective throughput, Gavel §4.1). With X_mk the
// fraction of time job m runs on type k, it solves
//
//	maximise  min_m  gang_m·Σ_k T_mk·X_mk / (w_m·E_m)
//	subject to  X ≥ 0,  Σ_k X_mk ≤ 1,  Σ_m gang_m·X_mk ≤ count_k
//
// where T_mk is the job's throughput at its gang size, w_m its Weight and
// E_m = Σ_k T_mk·count_k/Σ_k count_k its throughput on an equal time share
// of every type in proportion to the type's count. That normaliser is the
// one Gavel's code uses (ERRATA.md: X_mk = count_k / total GPUs), and with it
// the objective is, in GPUs y_mk = gang_m·X_mk, Σ_k (T_mk/E_m)·y_mk / w_m:
// on a homogeneous cluster, GPUs per unit of weight. Multiplying by gang_m
// is Gavel's adjustment for multi-GPU jobs, so that a job on 4 GPUs does not
// receive 4 times the GPU time of a job on 1.
//
// Method: jobs with equal rows, gangs and weights are interchangeable and
// get equal bundles; the LP is solved over these classes (C of them), by
// Lagrangian cutting planes over the K prices (Decomposed, the default;
// maxmin_decomp.go): each point costs O(C·K) (a convex hull per class and a
// weighted selection of the level), a master of K+1 variables mixes the
// points (one row per point, re-solved warm as rows are added), and about a
// hundred points reach the optimum for K = 8: 90 ms at 4,096 distinct jobs
// and 8 types, 0.4 s at 16,384 (2 cores). It stops
// when the best Lagrangian bound and the master agree to 1e-9 relative, or
// to 1e-6 when CLP's tolerances stall the master, and it checks the
// returned mixture against the bound: one more than 1e-6 short of it is
// never returned, the full LP is solved instead. FullLP solves one LP of 2C+K rows instead. Every job's
// value is exactly the level: GPUs may stay idle when a job is saturated
// (use WaterFilling to hand them out).
//
// Properties: sharing incentive — when every job's weighted equal share
// count_k·w_m/Σw of each type fits its time (Σ_k share ≤ gang_m), every job
// gets at least the value of that share (the share allocation is feasible
// and gives every job the same level, Gavel §4.4); jobs the share would
// oversubscribe get at least the lowest capped share level. Not
// Pareto-efficient (idle GPUs above the level), not envy-free and not
// strategy-proof (OEF §2.4; tests show both).
//
// Errors: an *gpufair.InputError for an invalid Problem, a job with zero
// throughput on every type (it cannot be normalised) or an unknown Method
// (naming MaxMin.Method); a wrapped lp error when a solve fails.
type MaxMin struct {
	Method MaxMinMethod
	// LP tunes the LP solves; nil means lp's defaults.
	LP *lp.Settings
}

// MaxMinMethod selects how MaxMin, MaxMinAgnostic, Makespan and
// FinishTimeFairness solve their LPs. The zero value is Decomposed; a
// value other than Decomposed and FullLP is an *gpufair.InputError naming
// the policy's Method field (for example MaxMin.Method).
type MaxMinMethod int

const (
	// Decomposed is column generation over assignment patterns.
	Decomposed MaxMinMethod = iota
	// FullLP is one LP with every class's rows: the reference.
	FullLP
)

// Name returns "max-min".
func (MaxMin) Name() string { return "max-min" }

// Allocate returns the max-min fair allocation of p.
func (mm MaxMin) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	if err := checkMaxMinMethod("MaxMin.Method", mm.Method); err != nil {
		return nil, err
	}
	lv, classes, err := maxMinProblem(p, false)
	if err != nil {
		return nil, err
	}
	sol, err := solveLevel(ctx, lv, nil, mm.Method, mm.LP)
	if err != nil {
		return nil, err
	}
	return classAllocation(p, classes, sol.y), nil
}

// maxMinProblem returns the level problem of max-min fairness over the
// classes of p: rates normalised by the equal share (or all 1 on usable
// types when agnostic), slope w_m, base 0.
func maxMinProblem(p *Problem, agnostic bool) (*levelProblem, rowClasses, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, rowClasses{}, err
	}
	rates, err := normalisedRates(p, agnostic)
	if err != nil {
		return nil, rowClasses{}, err
	}
	weight := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		weight[i] = j.Weight
	}
	lv, classes := newLevelProblem(p, rates, weight, nil)
	return lv, classes, nil
}

// normalisedRates returns T_mk/E_m per job and type (Gavel's normalised
// value of one GPU), or, when agnostic, 1 on every type the job can run on.
// A job that runs on no type is an *gpufair.InputError.
func normalisedRates(p *Problem, agnostic bool) ([][]float64, error) {
	eq, zero := p.equalShareThroughputs()
	if zero >= 0 {
		return nil, gpufair.Invalid("Throughputs", string(p.Jobs[zero].ID), gpufair.ErrValue, "zero throughput on every GPU type")
	}
	rates := p.Throughputs.Values()
	for i, r := range rates {
		for k, x := range r {
			switch {
			case agnostic && x > 0:
				r[k] = 1
			case !agnostic:
				r[k] = x / eq[i]
			}
		}
	}
	return rates, nil
}

// newLevelProblem groups the jobs of p into classes by rate row, gang,
// slope and the extra key (nil, or one value per job that must also match)
// and returns the level problem over them with base 0.
func newLevelProblem(p *Problem, rates [][]float64, slope, extra []float64) (*levelProblem, rowClasses) {
	types := p.Capacity.NumTypes()
	key := make([]float64, 0, types+3)
	classes := groupRows(len(p.Jobs), func(i int) []float64 {
		key = append(key[:0], rates[i]...)
		key = append(key, float64(p.Jobs[i].Gang), slope[i])
		if extra != nil {
			key = append(key, extra[i])
		}
		return key
	})
	n := classes.numClasses()
	lv := &levelProblem{
		rate:  make([][]float64, n),
		gang:  make([]float64, n),
		size:  make([]float64, n),
		base:  make([]float64, n),
		slope: make([]float64, n),
		count: append([]float64(nil), p.Capacity.Count...),
	}
	for c, i := range classes.rep {
		lv.rate[c] = rates[i]
		lv.gang[c] = float64(p.Jobs[i].Gang)
		lv.size[c] = float64(classes.size[c])
		lv.slope[c] = slope[i]
	}
	return lv, classes
}

// checkMaxMinMethod refuses a method other than Decomposed and FullLP with
// an *gpufair.InputError for field that wraps gpufair.ErrValue and, for
// callers that test for it, lp.ErrInvalidSettings.
func checkMaxMinMethod(field string, m MaxMinMethod) error {
	if m != Decomposed && m != FullLP {
		return gpufair.Invalid(field, "", gpufair.ErrValue, "unknown method %d (%w)", int(m), lp.ErrInvalidSettings)
	}
	return nil
}

// solveLevel solves lv with the chosen method. start is as for
// solveLevelDecomposed.
func solveLevel(ctx context.Context, lv *levelProblem, start [][]float64, method MaxMinMethod, set *lp.Settings) (*levelSolution, error) {
	switch method {
	case Decomposed:
		return solveLevelDecomposed(ctx, lv, start, set)
	case FullLP:
		return solveLevelFull(ctx, lv, set)
	}
	return nil, fmt.Errorf("%w: unknown max-min method %d", lp.ErrInvalidSettings, method)
}

// dustTol is the time fraction below which an allocation is rounding noise
// of the LP (its tolerances are about 1e-9 relative).
const dustTol = 1e-10

// classAllocation shares the per-class bundles y out to every job of p and
// returns the repaired Allocation (timeFractionsToAllocation). Time
// fractions below dustTol are solver noise and become 0.
func classAllocation(p *Problem, classes rowClasses, y [][]float64) *Allocation {
	x := classTimeFractions(p, classes, y)
	for _, row := range x {
		for k, f := range row {
			if !(f > dustTol) {
				row[k] = 0
			}
		}
	}
	return timeFractionsToAllocation(p, x)
}

// classTimeFractions gives every job its class's bundle y (GPUs) as time
// fractions.
func classTimeFractions(p *Problem, classes rowClasses, y [][]float64) [][]float64 {
	x := make([][]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		b := y[classes.of[i]]
		x[i] = make([]float64, len(b))
		for k, g := range b {
			x[i][k] = g / float64(j.Gang)
		}
	}
	return x
}
