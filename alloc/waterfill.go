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
// Cost: one LP over the classes of interchangeable jobs per round (2C+K
// rows for C classes). Errors as MaxMin's.
type WaterFilling struct {
	// Decomposed solves the rounds by the decomposition rather than the LP
	// over classes: much faster on distinct jobs, but its prices are
	// accurate only to its tolerance, and a price that should be zero can
	// stop a job early (rapid finds Pareto gains of a few percent). Without
	// cgo the LP backend gives no duals and the decomposition is used.
	Decomposed bool
	LP         *lp.Settings
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
	}, wf.Decomposed, wf.LP)
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
func waterFill(ctx context.Context, lv *levelProblem, weights func(done []bool) []float64, decomposed bool, set *lp.Settings) ([][]float64, []waterRound, error) {
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
		sol, err := solveRound(ctx, lv, y, decomposed, set)
		if err != nil {
			return nil, nil, fmt.Errorf("alloc: water-filling round %d: %w", len(rounds)+1, err)
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
			// duals of the growing rows sum to 1); when rounding hid
			// them, stop the growing class with the largest dual, so
			// that the rounds still end.
			top := -1
			for c, s := range lv.slope {
				if s > 0 && !done[c] && (top < 0 || sol.dual[c] > sol.dual[top]) {
					top = c
				}
			}
			done[top] = true
			r.stopped = append(r.stopped, top)
		}
		rounds = append(rounds, r)
	}
	return y, rounds, nil
}

// solveRound solves one round: by the full LP over classes, whose vertex
// duals say exactly which classes are stopped, unless decomposed is set or
// the backend gives no duals (gonum); then by the decomposition, whose
// prices are accurate to its tolerance only.
func solveRound(ctx context.Context, lv *levelProblem, start [][]float64, decomposed bool, set *lp.Settings) (*levelSolution, error) {
	if !decomposed {
		sol, err := solveLevelFull(ctx, lv, set)
		if err != nil || sol.blocked != nil {
			return sol, err
		}
	}
	return solveLevelDecomposed(ctx, lv, start, set)
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
