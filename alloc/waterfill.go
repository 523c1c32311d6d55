package alloc

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/lp"
)

// WaterFilling is weighted max-min fairness with water filling (leximin),
// Gavel §4.3 applied to a single level: MaxMin's LP is solved again and
// again, each round raising every job that can still grow by the same
// amount per unit of weight, until none can. Round r solves
//
//	maximise z  subject to  v_m(X) ≥ v_m^(r-1) + w_m·z   (jobs still growing)
//	                        v_m(X) ≥ v_m^(r-1)           (all jobs)
//
// over MaxMin's constraints, with v_m(X) = gang_m·Σ_k T_mk·X_mk / E_m the
// normalised effective throughput (MaxMin's normaliser) and v^(0) = 0. A job
// stops growing (is bottlenecked) when its dual is positive: no allocation
// lets it exceed its row without another job falling below its own, a fact
// that later rounds, whose rows are tighter, keep. Gavel finds these jobs
// with a MILP; the dual gives them exactly, for every job at once. Each
// round stops at least one job, so there are at most as many rounds as
// classes of interchangeable jobs, and in practice a few.
//
// The result maximises the sorted vector of v_m/w_m lexicographically:
// the first round's level is MaxMin's, and no job can gain without a job
// of lower or equal v/w losing.
//
// Properties: Pareto-efficient under the per-job caps (Σ_k X_mk ≤ 1): no job's
// throughput can rise without another's falling (Gavel §4.4), since a job
// that could grow would not have been stopped. Sharing-incentive as MaxMin.
// Not envy-free and not strategy-proof (OEF §2.4).
//
// Cost: one decomposed max-min solve per round (maxmin_decomp.go), each
// warm-started from the previous round's allocation. Errors as MaxMin's.
type WaterFilling struct {
	Method MaxMinMethod
	LP     *lp.Settings
}

// Name returns "water-filling".
func (WaterFilling) Name() string { return "water-filling" }

// Allocate returns the water-filling allocation of p.
func (wf WaterFilling) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	lv, classes, err := maxMinProblem(p, false)
	if err != nil {
		return nil, err
	}
	weight := append([]float64(nil), lv.slope...)
	y, _, err := waterFill(ctx, lv, func(done []bool) []float64 {
		w := make([]float64, len(weight))
		for c := range w {
			if !done[c] {
				w[c] = weight[c]
			}
		}
		return w
	}, wf.Method, wf.LP)
	if err != nil {
		return nil, err
	}
	return classAllocation(p, classes, y), nil
}

// waterRound records one round of water filling: the level reached, each
// class's value after it, and the classes stopped in it.
type waterRound struct {
	z       float64
	value   []float64
	stopped []int
}

// waterFill runs water-filling rounds on lv (whose base and slope it
// overwrites) until no class has a positive weight. weights returns each
// class's slope for the next round given which classes are done (stopped);
// done classes must get 0. It returns the final bundles per class and the
// rounds.
func waterFill(ctx context.Context, lv *levelProblem, weights func(done []bool) []float64, method MaxMinMethod, set *lp.Settings) ([][]float64, []waterRound, error) {
	n := lv.numClasses()
	done := make([]bool, n)
	var y [][]float64
	var rounds []waterRound
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		lv.slope = weights(done)
		active := false
		for c, s := range lv.slope {
			active = active || (s > 0 && !done[c])
		}
		if !active {
			break
		}
		for c := range lv.base {
			lv.base[c] = 0
			if y != nil {
				lv.base[c] = lv.value(c, y[c])
			}
		}
		sol, err := solveLevel(ctx, lv, y, method, set)
		if err != nil {
			return nil, nil, fmt.Errorf("alloc: water-filling round %d: %w", len(rounds)+1, err)
		}
		if sol.blocked == nil {
			return nil, nil, fmt.Errorf("alloc: water-filling round %d: %w: the LP backend gives no duals", len(rounds)+1, lp.ErrBackendUnavailable)
		}
		y = sol.y
		r := waterRound{z: sol.t, value: make([]float64, n)}
		for c := range y {
			r.value[c] = lv.value(c, y[c])
			if !done[c] && (sol.blocked[c] || atCap(lv, c, y[c])) {
				done[c] = true
				r.stopped = append(r.stopped, c)
			}
		}
		if !stoppedActive(lv, r.stopped) {
			// Every round stops a growing class in exact arithmetic (the
			// duals of the growing rows sum to 1); this guards against
			// duals lost to rounding.
			for c, s := range lv.slope {
				if s > 0 && !done[c] {
					done[c] = true
					r.stopped = append(r.stopped, c)
				}
			}
		}
		rounds = append(rounds, r)
	}
	return y, rounds, nil
}

// stoppedActive reports whether a class with a positive slope was stopped.
func stoppedActive(lv *levelProblem, stopped []int) bool {
	for _, c := range stopped {
		if lv.slope[c] > 0 {
			return true
		}
	}
	return false
}

// atCap reports whether class c's bundle y reaches the most it can: its
// whole gang on its densest type.
func atCap(lv *levelProblem, c int, y []float64) bool {
	return lv.value(c, y) >= lv.cap(c)*(1-capTol)
}
