package alloc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// waterFill solves SharingWaterFilling and SharingHierarchical: the
// max-min LP of sc round after round (fillRounds, as waterFill without
// pairs). Round r maximises the level z subject to class c's normalised
// throughput (norm, over levelRef) reaching base_c + w_c·z, with w_c its
// weight for the round from ew (0 for a class stopped, or queued behind a
// FIFO entity's head). A class stops when its level row has a positive
// dual (it cannot rise without another class falling below its own row)
// or when it reaches the most a job of it can get (its best rate, alone or
// beside a partner, all of its time). It returns the last round's LP and
// solution: every class at its final level.
func (sc sharingClasses) waterFill(ctx context.Context, p *Problem, norm []float64, ew *entityWeights, name string) (sharingModel, *lp.Solution, error) {
	n := sc.rc.numClasses()
	rounds := &sharingRounds{sc: sc, p: p, norm: norm, ew: ew}
	defer rounds.close()
	base := make([]float64, n)
	var sol *lp.Solution
	var sm sharingModel // the model sol values
	_, err := fillRounds(ctx, base, sc.levelCaps(p, norm), ew, func(ctx context.Context, slope []float64, r int) (*roundOutcome, error) {
		next, err := rounds.solve(ctx, base, slope, r)
		if err != nil && r > 1 && retryable(err) {
			// Every retry failed, with both simplex backends: on jobs
			// weighted 7e10 and 1 (FuzzEvents, examples/simulate) no
			// solver met round 2's level rows within 1.5e-5. Water
			// filling ends at the levels of the last round solved.
			return stopEvery(base, slope), nil
		}
		if err != nil {
			return nil, err
		}
		if next.RowDuals == nil {
			return nil, fmt.Errorf("the solver gave no duals, which the stopping rule needs: %w", lp.ErrNumerical)
		}
		sol, sm = next, rounds.sm
		out := &roundOutcome{z: max(sol.Value(sm.level), 0), value: make([]float64, n)}
		for c, terms := range sm.levelRows {
			for _, t := range terms {
				out.value[c] += t.Coef * sol.Value(t.Var)
			}
		}
		out.blocked, out.dual = blockedByDuals(ew.size, sol.RowDuals, sm.levelRow)
		return out, nil
	})
	if err != nil {
		return sharingModel{}, nil, fmt.Errorf("alloc: %s: %w", name, err)
	}
	return sm, sol, nil
}

// stopEvery returns the outcome of a round that raises no class and stops
// every class of positive slope, at base.
func stopEvery(base, slope []float64) *roundOutcome {
	out := &roundOutcome{value: slices.Clone(base), blocked: make([]bool, len(base)), dual: make([]float64, len(base))}
	for c, w := range slope {
		out.blocked[c] = w > 0
	}
	return out
}

// sharingRoundLP is water filling's round LP over space sharing's columns,
// kept loaded in the solver from round to round, written (as roundLP is
// without pairs) so that consecutive rounds differ in bounds only: class
// c's rise g_c is a column tied to its entity's rise per unit of job
// weight u_s,
//
//	maximise n·z  subject to  L_c(x, y) − g_c ≥ base_c                 (each class)
//	                          g_c − jobW_c·u_s = 0                     (active classes; free row otherwise)
//	                          Σ_{c ∈ s} size_c·g_c − W_s·z = 0         (entities with an active class; free otherwise)
//	                          g_c = 0                                  (inactive classes, by bounds)
//
// with the class LP's time, capacity and partner rows, L_c being c's
// normalised throughput. Eliminating g and u gives g_c = w_c·z with
// ew's weights, and the level rows keep their duals.
type sharingRoundLP struct {
	in *lp.Incremental
	sm sharingModel
	roundRows
}

// sharingRounds solves water filling's first round directly, as a
// max-min LP with the round's weights as the level's coefficients, and the
// later ones on a loaded sharingRoundLP, warm from the previous round's
// basis. Where every job can use every type and the cluster is crowded,
// the first round stops every class, and the round LP's cold solve, 1.6
// to 1.9 times the direct one's (BenchmarkSpaceSharingWaterFilling), is
// never paid. sm is the model of the last round solved.
type sharingRounds struct {
	sc   sharingClasses
	p    *Problem
	norm []float64
	ew   *entityWeights
	lp   *sharingRoundLP
	sm   sharingModel
	// backend loads the round LP: lp's default, until a round fails
	// with it (solve).
	backend lp.Backend
}

// load builds and loads the round LP, every class inactive.
func (rs *sharingRounds) load() error {
	sm := rs.sc.model(rs.p, rs.norm, nil, levelForm{gains: true})
	r := &sharingRoundLP{sm: sm, roundRows: roundRows{gain: sm.gain, fair: sm.levelRow}}
	unit := make([]lp.Var, len(rs.ew.members))
	for s := range unit {
		unit[s] = sm.m.AddVar("unit", 0, lp.Inf, 0)
	}
	r.addEntityRows(sm.m, sm.level, unit, rs.ew)
	set := withPresolve(nil)
	set.Backend = rs.backend
	in, err := lp.NewIncremental(sm.m, set)
	if err != nil {
		return err
	}
	rs.close()
	r.in, rs.lp = in, r
	return nil
}

// solve solves round r of bases base and weights slope (a class is active
// when its weight is positive). After the first round, a warm solve that
// fails is repeated cold on a fresh LP; and as a round must keep the
// levels the previous one reached, but those were reached only within the
// solver's tolerance, where that proves infeasible by as much the bases
// are lowered by WaterFilling's growing slacks (levelSlack) and the round
// solved again. Where all that fails with CLP, the rounds go on with the
// pure-Go simplex, as the direct LPs' second opinions do: on jobs
// weighted 7e10 and 1 (FuzzEvents, examples/simulate), CLP's cold
// solves of a round left a level row 7.5e-6 off.
func (rs *sharingRounds) solve(ctx context.Context, base, slope []float64, r int) (*lp.Solution, error) {
	if r == 1 { // every base 0
		rs.sm = rs.sc.model(rs.p, rs.norm, nil, levelForm{slope: slope})
		return solveSecondOpinion(ctx, rs.sm.m, nil)
	}
	defer func() {
		if rs.lp != nil {
			rs.sm = rs.lp.sm
		}
	}()
	if rs.lp == nil {
		if err := rs.load(); err != nil {
			return nil, err
		}
	}
	sol, err := rs.lp.solve(ctx, rs.ew, base, slope)
	if !retryable(err) {
		return sol, err
	}
	if sol, err = rs.retry(ctx, base, slope, err); !retryable(err) || rs.backend.Resolve() != lp.CLP {
		return sol, err
	}
	rs.backend = lp.PureGo
	return rs.retry(ctx, base, slope, err)
}

// retry solves the round again on a fresh LP, then with bases lowered by
// each of levelSlack in turn while the levels are just out of reach.
func (rs *sharingRounds) retry(ctx context.Context, base, slope []float64, err error) (*lp.Solution, error) {
	var sol *lp.Solution
	lowered := slices.Clone(base)
	for _, slack := range append([]float64{0}, levelSlack...) {
		if slack > 0 && !levelsMissed(err) {
			break
		}
		for c, b := range base {
			lowered[c] = b * (1 - slack)
		}
		if err := rs.load(); err != nil {
			return nil, err
		}
		if sol, err = rs.lp.solve(ctx, rs.ew, lowered, slope); !retryable(err) {
			return sol, err
		}
	}
	return sol, err
}

// retryable reports whether a round's solve failed in a way that a cold
// solve, or lowered bases, may cure: CLP's warm dual simplex has called
// feasible rounds infeasible after bounds changed, and the levels reached
// are kept only to the solver's tolerance (roundSolver).
func retryable(err error) bool {
	return levelsMissed(err) || errors.Is(err, lp.ErrNumerical)
}

// levelsMissed reports whether a round failed as one does whose bases,
// the levels reached to the solver's tolerance, are just out of reach:
// lowering them by levelSlack may cure it.
func levelsMissed(err error) bool {
	return errors.Is(err, lp.ErrInfeasible) || errors.Is(err, lp.ErrViolation)
}

// close frees the loaded LP, if any.
func (rs *sharingRounds) close() {
	if rs.lp != nil {
		rs.lp.in.Close()
		rs.lp = nil
	}
}

// solve sets the round's bounds on the loaded LP and solves it.
func (r *sharingRoundLP) solve(ctx context.Context, ew *entityWeights, base, slope []float64) (*lp.Solution, error) {
	r.setBounds(r.in, ew, base, slope)
	return r.in.Solve(ctx)
}

// singleEntities returns the entities of single-level water filling over
// sc: each class alone, every job rising by the same level (its norm
// divides by its weight).
func (sc sharingClasses) singleEntities() *entityWeights {
	size, ones := make([]float64, sc.rc.numClasses()), make([]float64, sc.rc.numClasses())
	for c, n := range sc.rc.size {
		size[c], ones[c] = float64(n), 1
	}
	return soloEntities(size, ones)
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
