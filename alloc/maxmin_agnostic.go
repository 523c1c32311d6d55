package alloc

import (
	"context"

	"github.com/gpufair/gpufair/lp"
)

// MaxMinAgnostic is the heterogeneity-agnostic weighted max-min fairness
// Gavel compares against (its "LAS" baseline): the MaxMin LP with every
// throughput replaced by 1, so that a job's value is the GPUs it holds,
// whatever their type:
//
//	maximise  min_m  Σ_k y_mk / w_m
//	subject to  y ≥ 0,  Σ_k y_mk ≤ gang_m,  Σ_m y_mk ≤ count_k
//
// in GPUs y_mk = gang_m·X_mk. Unlike Gavel's code, a type on which a job's
// throughput is zero keeps rate 0, so it is never given GPUs it cannot use.
// The LP leaves the split across types free; when every job can run on
// every type, each job's GPUs are spread over the types in proportion to
// their counts (the type-blind share LAS gives), otherwise the LP's vertex
// is returned. Cost and method as for MaxMin.
//
// Properties: on a homogeneous cluster it equals MaxMin. On a
// heterogeneous one it is sharing-incentive only in GPUs, not in
// throughput: Gavel's X_het example gives every job 2/3 of its normalised
// equal-share value where MaxMin gives 8/11 (ERRATA.md).
type MaxMinAgnostic struct {
	Method MaxMinMethod
	LP     *lp.Settings
}

// Name returns "max-min-agnostic".
func (MaxMinAgnostic) Name() string { return "max-min-agnostic" }

// Allocate returns the heterogeneity-agnostic max-min allocation of p.
func (mm MaxMinAgnostic) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	if err := checkMaxMinMethod("MaxMinAgnostic.Method", mm.Method); err != nil {
		return nil, err
	}
	lv, classes, err := maxMinProblem(p, true)
	if err != nil {
		return nil, err
	}
	sol, err := solveLevel(ctx, lv, nil, mm.Method, mm.LP)
	if err != nil {
		return nil, err
	}
	if allUsable(lv) {
		spreadByCount(sol.y, lv.count)
	}
	return classAllocation(p, classes, sol.y), nil
}

// allUsable reports whether every class can run on every type.
func allUsable(lv *levelProblem) bool {
	for _, r := range lv.rate {
		for _, x := range r {
			if x == 0 {
				return false
			}
		}
	}
	return true
}

// spreadByCount replaces each bundle by the same number of GPUs spread over
// the types in proportion to count. Totals per bundle are kept, and every
// type's use is its count times the fraction of the cluster in use, so the
// result stays feasible.
func spreadByCount(y [][]float64, count []float64) {
	var total float64
	for _, n := range count {
		total += n
	}
	for _, b := range y {
		var g float64
		for _, x := range b {
			g += x
		}
		for k := range b {
			b[k] = g * count[k] / total
		}
	}
}
