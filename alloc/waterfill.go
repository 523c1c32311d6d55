package alloc

import (
	"context"
	"fmt"
	"slices"

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
// normalised effective throughput (MaxMin's normaliser), v^(0) = 0 and
// v_m^(r) = v_m^(r-1) + w_m·z_r the level job m reached in round r. (A job
// may get more than its level in round r's optimum, but how much depends on
// the optimal vertex the solver returns; carrying that over would make the
// result depend on it, and give the job a head start leximin does not.) A
// job stops growing (is bottlenecked) when its dual is positive: no
// allocation lets it exceed its row without another job falling below its
// own, a fact that later rounds, whose rows are tighter, keep; or when its
// level reaches the most it can get (its gang on its best type). Gavel
// finds these jobs with a MILP; the dual gives them exactly, for every job
// at once. Each round stops at least one job, so there are at most as many
// rounds as classes of interchangeable jobs, and in practice a few.
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
// Cost: one LP over the classes of interchangeable jobs per round, kept
// loaded in CLP and re-solved from the previous round's basis (consecutive
// rounds differ in bounds only, see roundLP): about 4C+K rows for C
// classes, the first solve cold, the others a few pivots each. Errors as
// MaxMin's.
type WaterFilling struct {
	// Decomposed solves the rounds by the decomposition rather than the LP
	// over classes: much faster on distinct jobs, but its prices are
	// accurate only to its tolerance, and a price that should be zero can
	// stop a job early (rapid finds Pareto gains of a few percent). With
	// the Gonum backend, which gives no duals, the decomposition is used.
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
	y, _, err := waterFill(ctx, lv, classEntities(lv), roundMethodOf(wf.Decomposed), wf.LP)
	if err != nil {
		return nil, err
	}
	return classAllocation(p, classes, y), nil
}

// classEntities returns the entities of single-level water filling: each
// class alone, with weight per job its slope (see entityWeights.weights).
func classEntities(lv *levelProblem) *entityWeights {
	return soloEntities(lv.size, lv.slope)
}

// soloEntities returns entities of one class each, of size[c] jobs that
// weigh jobW[c], so that each round's weight per job is jobW[c].
func soloEntities(size, jobW []float64) *entityWeights {
	n := len(size)
	ew := &entityWeights{
		weight:  make([]float64, n),
		fifo:    make([]bool, n),
		members: make([][]int, n),
		jobW:    slices.Clone(jobW),
		size:    size,
	}
	for c := range n {
		ew.weight[c] = jobW[c] * size[c]
		ew.members[c] = []int{c}
	}
	return ew
}

// waterRound records one round of water filling: the level reached, each
// class's value after it (its base plus its slope times the level), and the
// classes stopped in it.
type waterRound struct {
	z       float64
	value   []float64
	stopped []int
}

// waterFill runs water-filling rounds on lv (whose base and slope it
// overwrites) until no class has a positive weight, each round's slopes
// being ew's weights given the classes done (stopped). It returns the final
// bundles per class and the rounds.
func waterFill(ctx context.Context, lv *levelProblem, ew *entityWeights, method roundMethod, set *lp.Settings) ([][]float64, []waterRound, error) {
	rs := &roundSolver{method: method, ew: ew, set: set}
	defer rs.close()
	caps := make([]float64, lv.numClasses())
	for c := range caps {
		caps[c] = lv.cap(c)
	}
	var y [][]float64
	rounds, err := fillRounds(ctx, lv.base, caps, ew, func(ctx context.Context, slope []float64, _ int) (*roundOutcome, error) {
		lv.slope = slope
		sol, err := rs.solve(ctx, lv, y)
		if err != nil {
			return nil, err
		}
		y = sol.y
		out := &roundOutcome{z: sol.t, value: make([]float64, len(y)), blocked: sol.blocked, dual: sol.dual}
		for c := range y {
			out.value[c] = lv.value(c, y[c])
		}
		return out, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("alloc: %w", err)
	}
	return y, rounds, nil
}

// roundOutcome is what one water-filling round's LP gives fillRounds: the
// level z, each class's value at the solution, the classes blocked (a
// positive dual on their row, or hull slope), and each class's dual per
// job.
type roundOutcome struct {
	z       float64
	value   []float64
	blocked []bool
	dual    []float64
}

// fillRounds drives water filling: round r solves the level with each
// class's weight from ew given the classes stopped, each class's value
// rising by at most its weight times the level over base (which it
// updates). A class stops when it is blocked or reaches its cap. It
// returns the rounds once no class has a positive weight.
func fillRounds(ctx context.Context, base, caps []float64, ew *entityWeights, solve func(ctx context.Context, slope []float64, r int) (*roundOutcome, error)) ([]waterRound, error) {
	n := len(base)
	done := make([]bool, n)
	var rounds []waterRound
	for r := 1; ; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		slope := ew.weights(done)
		if !slices.ContainsFunc(slope, func(w float64) bool { return w > 0 }) {
			return rounds, nil
		}
		out, err := solve(ctx, slope, r)
		if err != nil {
			return nil, fmt.Errorf("water-filling round %d: %w", r, err)
		}
		wr := waterRound{z: out.z, value: make([]float64, n)}
		for c := range base {
			// The level reached is the next round's base. A class may get
			// more in this round's optimum (above its row), but how much
			// depends on the vertex the solver stops at; carrying it over
			// would give the class a head start that leximin does not.
			wr.value[c] = min(out.value[c], base[c]+slope[c]*out.z)
			if !done[c] && (out.blocked[c] || wr.value[c] >= caps[c]*(1-capTol)) {
				done[c] = true
				wr.stopped = append(wr.stopped, c)
			}
		}
		if !slices.ContainsFunc(wr.stopped, func(c int) bool { return slope[c] > 0 }) {
			// Every round stops a growing class in exact arithmetic (the
			// duals of the growing rows sum to 1); when rounding hid
			// them, stop the growing class with the largest dual, so
			// that the rounds still end.
			top := -1
			for c, s := range slope {
				if s > 0 && !done[c] && (top < 0 || out.dual[c] > out.dual[top]) {
					top = c
				}
			}
			done[top] = true
			wr.stopped = append(wr.stopped, top)
		}
		rounds = append(rounds, wr)
		copy(base, wr.value)
	}
}

// levelSlack are the relative slacks by which a water-filling round lowers
// the levels it must keep when they cannot be kept exactly (see
// roundSolver.solve).
var levelSlack = []float64{1e-9, 1e-8, 1e-7}

// roundMethod selects how water-filling rounds are solved.
type roundMethod int

const (
	// warmRounds keeps the round LP loaded and re-solves it from the
	// previous round's basis (roundLP): the default.
	warmRounds roundMethod = iota
	// coldRounds builds and solves each round's LP from scratch: the
	// reference warmRounds is tested against.
	coldRounds
	// decomposedRounds solves each round by the decomposition, whose
	// prices are accurate to its tolerance only.
	decomposedRounds
)

// roundMethodOf returns the method of a policy's Decomposed option.
func roundMethodOf(decomposed bool) roundMethod {
	if decomposed {
		return decomposedRounds
	}
	return warmRounds
}

// roundSolver solves the rounds of one water filling by its method, and
// falls back to the decomposition when the LP backend gives no duals
// (gonum), which the stopping rule needs.
type roundSolver struct {
	method roundMethod
	ew     *entityWeights
	set    *lp.Settings
	warm   *roundLP
	solved int // rounds solved so far
}

// solve solves the round of lv; start is the previous round's bundles (nil
// in the first round).
func (rs *roundSolver) solve(ctx context.Context, lv *levelProblem, start [][]float64) (*levelSolution, error) {
	var sol *levelSolution
	var err error
	switch {
	case rs.method == coldRounds, rs.method == warmRounds && rs.solved == 0:
		// Many water fillings end after a round or two, and the round LP's
		// first solve is cold and bigger than the direct LP's: the first
		// round is solved directly.
		sol, err = solveLevelFull(ctx, lv, rs.set)
	case rs.method == warmRounds:
		if rs.warm == nil {
			if rs.warm, err = newRoundLP(lv, rs.ew, rs.set); err != nil {
				return nil, err
			}
		}
		sol, err = rs.warm.solve(ctx, lv)
		if retryable(err) {
			// Every round is feasible (the last round's levels with z = 0),
			// but CLP's warm dual simplex has called one infeasible after
			// the bounds changed (a rapid case kept under testdata), and
			// the pure-Go simplex has cycled on a warm basis made
			// ill-conditioned by rates equal to 8 digits. The round is
			// solved directly, and the loaded LP rebuilt.
			rs.warm.close()
			rs.warm = nil
			sol, err = solveLevelFull(ctx, lv, rs.set)
		}
	}
	// The previous round's levels were reached within the solver's
	// feasibility tolerance, so demanding them exactly can be infeasible
	// by as much: with two types a class values within 5e-9 of each
	// other, a capped class reached its cap only by borrowing a little of
	// the other type (a rapid case under testdata,
	// TestPropertyAuditEveryPolicy): the solver reports infeasibility or,
	// unable to prove it, a point that breaks a row. The round is solved
	// again with every level lowered by a growing relative slack, at most
	// levelSlack[last], well inside the axioms' tolerance (1e-6 of slack
	// cost a job 1e-6 of its sharing-incentive margin).
	base := slices.Clone(lv.base)
	for _, slack := range levelSlack {
		if !levelsMissed(err) || rs.solved == 0 {
			break
		}
		for c, b := range base {
			lv.base[c] = b * (1 - slack)
		}
		sol, err = solveLevelFull(ctx, lv, rs.set)
	}
	rs.solved++
	if sol != nil && sol.blocked != nil || err != nil {
		return sol, err
	}
	rs.method = decomposedRounds
	return solveLevelDecomposed(ctx, lv, start, rs.set)
}

// close frees the round LP, if any.
func (rs *roundSolver) close() {
	if rs.warm != nil {
		rs.warm.close()
	}
}
