package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// waterFill solves SharingWaterFilling: the max-min LP of sc (norm as
// SharingMaxMin's) round after round, as WaterFilling does without pairs.
// Round r maximises the level z by which every growing class rises above
// its base, every class keeping its base; a growing class stops when its
// level row has a positive dual (it cannot rise without another class
// falling below its own) or when it reaches the most a job of it can get
// (its best rate, alone or beside a partner, all of its time). The bases
// start at 0 and each round adds z to the classes that grew. It returns
// the last round's model and solution: every class at its final level.
func (sc sharingClasses) waterFill(ctx context.Context, p *Problem, norm []float64, name string) (sharingModel, *lp.Solution, error) {
	n := sc.rc.numClasses()
	caps := sc.levelCaps(p, norm)
	round := &sharingRound{base: make([]float64, n), growing: make([]bool, n)}
	for c := range round.growing {
		round.growing[c] = true
	}
	for r := 1; ; r++ {
		sm, sol, err := sc.solveRound(ctx, p, norm, round, r)
		if err != nil {
			return sharingModel{}, nil, fmt.Errorf("alloc: %s: water-filling round %d: %w", name, r, err)
		}
		if sol.RowDuals == nil {
			// Only a second opinion from Gonum, after both other
			// backends failed, comes without duals.
			return sharingModel{}, nil, fmt.Errorf("alloc: %s: water-filling round %d: the solver gave no duals, which the stopping rule needs: %w", name, r, lp.ErrNumerical)
		}
		z := max(sol.Value(sm.level), 0)
		top := 0.0
		for c, g := range round.growing {
			if g {
				top = max(top, math.Abs(sol.RowDuals[sm.levelRow[c]]))
			}
		}
		stopped, last := false, -1
		for c, g := range round.growing {
			v := 0.0
			for _, t := range sm.levelRows[c] {
				v += t.Coef * sol.Value(t.Var)
			}
			if !g {
				round.base[c] = min(v, round.base[c])
				continue
			}
			// The level reached is the next round's base, not what the
			// vertex happens to give the class above it (WaterFilling).
			round.base[c] = min(v, round.base[c]+z)
			d := math.Abs(sol.RowDuals[sm.levelRow[c]])
			if d > blockedTol*top || round.base[c] >= caps[c]*(1-capTol) {
				round.growing[c], stopped = false, true
			}
			if last < 0 || d > math.Abs(sol.RowDuals[sm.levelRow[last]]) {
				last = c
			}
		}
		if !stopped {
			// The growing rows' duals sum to the objective's coefficient,
			// so one is positive in exact arithmetic; where rounding hid
			// it, the largest stops, so that the rounds end.
			round.growing[last] = false
		}
		if !slices.Contains(round.growing, true) {
			return sm, sol, nil
		}
	}
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
