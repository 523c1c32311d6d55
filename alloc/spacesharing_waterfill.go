package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// waterFill solves SharingWaterFilling and SharingHierarchical: the
// max-min LP of sc round after round, as waterFill does without pairs.
// Round r maximises the level z subject to class c's normalised throughput
// (norm, over levelRef) reaching base_c + w_c·z, with w_c its weight for the
// round from ew (0 for a class stopped, or queued behind a FIFO entity's
// head). A class stops when its level row has a positive dual (it cannot
// rise without another class falling below its own row) or when it
// reaches the most a job of it can get (its best rate, alone or beside a
// partner, all of its time). The bases start at 0 and each round adds
// w_c·z. It returns the last round's model and solution: every class at
// its final level.
func (sc sharingClasses) waterFill(ctx context.Context, p *Problem, norm []float64, ew *entityWeights, name string) (sharingModel, *lp.Solution, error) {
	n := sc.rc.numClasses()
	caps := sc.levelCaps(p, norm)
	done := make([]bool, n)
	round := &sharingRound{base: make([]float64, n)}
	var sm sharingModel
	var sol *lp.Solution
	for r := 1; ; r++ {
		round.slope = ew.weights(done)
		if !slices.ContainsFunc(round.slope, func(w float64) bool { return w > 0 }) {
			return sm, sol, nil
		}
		var err error
		if sm, sol, err = sc.solveRound(ctx, p, norm, round, r); err != nil {
			return sharingModel{}, nil, fmt.Errorf("alloc: %s: water-filling round %d: %w", name, r, err)
		}
		if sol.RowDuals == nil {
			// Only a second opinion from Gonum, after both other
			// backends failed, comes without duals.
			return sharingModel{}, nil, fmt.Errorf("alloc: %s: water-filling round %d: the solver gave no duals, which the stopping rule needs: %w", name, r, lp.ErrNumerical)
		}
		z := max(sol.Value(sm.level), 0)
		dual := make([]float64, n)
		top := 0.0
		for c, row := range sm.levelRow {
			dual[c] = math.Abs(sol.RowDuals[row])
			top = max(top, dual[c])
		}
		stopped, last := false, -1
		for c, w := range round.slope {
			v := 0.0
			for _, t := range sm.levelRows[c] {
				v += t.Coef * sol.Value(t.Var)
			}
			// The level reached is the next round's base, not what the
			// vertex happens to give the class above it (waterFill).
			round.base[c] = min(v, round.base[c]+w*z)
			if done[c] {
				continue
			}
			if dual[c] > blockedTol*top || round.base[c] >= caps[c]*(1-capTol) {
				done[c] = true
				stopped = stopped || w > 0
			}
			if w > 0 && (last < 0 || dual[c] > dual[last]) {
				last = c
			}
		}
		if !stopped {
			// The growing rows' duals, times their weights, sum to the
			// objective's coefficient, so one is positive in exact
			// arithmetic; where rounding hid it, the largest stops, so
			// that the rounds end.
			done[last] = true
		}
	}
}

// singleEntities returns the entities of single-level water filling over
// sc: each class alone, every job rising by the same level (its norm
// divides by its weight).
func (sc sharingClasses) singleEntities() *entityWeights {
	n := sc.rc.numClasses()
	ew := &entityWeights{weight: make([]float64, n), fifo: make([]bool, n), members: make([][]int, n), jobW: make([]float64, n), size: make([]float64, n)}
	for c, size := range sc.rc.size {
		ew.weight[c], ew.members[c], ew.jobW[c], ew.size[c] = float64(size), []int{c}, 1, float64(size)
	}
	return ew
}

// solveRound solves one water-filling round. A round after the first must
// keep the levels the previous one reached within the solver's tolerance;
// where that proves infeasible by as much, the bases are lowered by
// WaterFilling's growing slacks (levelSlack) and the round solved again.
func (sc sharingClasses) solveRound(ctx context.Context, p *Problem, norm []float64, round *sharingRound, r int) (sharingModel, *lp.Solution, error) {
	sm := sc.model(p, norm, nil, round)
	sol, err := solveSecondOpinion(ctx, sm.m, nil)
	base := append([]float64(nil), round.base...)
	for _, slack := range levelSlack {
		if r == 1 || !(errors.Is(err, lp.ErrInfeasible) || errors.Is(err, lp.ErrViolation)) {
			break
		}
		for c, b := range base {
			round.base[c] = b * (1 - slack)
		}
		sm = sc.model(p, norm, nil, round)
		sol, err = solveSecondOpinion(ctx, sm.m, nil)
	}
	return sm, sol, err
}

// levelCaps returns the most each class's normalised throughput (over
// levelRef) can reach: a job's best rate alone or beside a partner, for
// all of its time.
func (sc sharingClasses) levelCaps(p *Problem, norm []float64) []float64 {
	best := make([]float64, sc.rc.numClasses())
	for c, i := range sc.rc.rep {
		best[c] = p.bestAlone(i)
	}
	for _, col := range sc.cols {
		for _, sd := range col.sides {
			best[sd.c] = max(best[sd.c], sd.rate)
		}
	}
	ref := sc.levelRef(p, norm)
	for c := range best {
		best[c] *= norm[c] / ref
	}
	return best
}
