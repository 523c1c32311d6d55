package lp

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/stopctx"
)

// maxTotalModel is MaxTotalThroughput's LP over in: maximise the total
// throughput subject to each job's time (at most 1, and at least floor
// where floor > 0: a row the slack basis breaks) and each type's GPUs.
func (in gavelInstance) maxTotalModel(floor float64) (*Model, Grid) {
	m := NewModel(Maximize)
	x := m.AddGrid("x", len(in.tput), len(in.count), 0, Inf)
	ones := make([]float64, len(in.count))
	for k := range ones {
		ones[k] = 1
	}
	for j, row := range in.tput {
		for k, v := range row {
			m.SetObjective(x.At(j, k), v)
		}
		m.AddConstraint("time", x.RowTerms(j, ones), LE, 1)
		if floor > 0 {
			m.AddConstraint("floor", x.RowTerms(j, ones), GE, floor)
		}
	}
	for k, c := range in.count {
		m.AddConstraint("gpus", x.ColTerms(k, in.gang), LE, c)
	}
	return m, x
}

// TestPivotRowWays checks that the pivot row summed over the row-wise copy
// of A (pivotRow with a sparse ρ) equals, bit for bit, the column-wise sum
// over every nonbasic column, in an optimal basis of MaxTotalThroughput's
// LP, for every row of the basis.
func TestPivotRowWays(t *testing.T) {
	m, _ := newGavelInstance(400, 4, 1).maxTotalModel(0)
	s, err := newSimplex(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := s.run(context.Background(), 0); out != spxOptimal || err != nil {
		t.Fatalf("run: %v, %v", out, err)
	}
	if err := s.refactor(context.Background()); err != nil {
		t.Fatal(err)
	}
	sparse := 0
	for r := range s.m {
		clear(s.rho)
		s.rho[r] = 1
		s.btran(s.rho)
		s.pivotRow()
		var work int
		for i, v := range s.rho {
			if v != 0 {
				work += s.rowStart[i+1] - s.rowStart[i]
			}
		}
		if float64(work) <= rowwiseShare*float64(len(s.colEnt)) {
			sparse++
		}
		listed := make(map[int]bool)
		for _, j := range s.alphaNZ {
			if listed[j] {
				t.Fatalf("row %d: column %d listed twice", r, j)
			}
			listed[j] = true
		}
		for j := range s.n + s.m {
			var want float64
			if s.where[j] < 0 {
				if j >= s.n {
					want = s.rho[j-s.n]
				} else {
					for _, e := range s.col(j) {
						want += e.val * s.rho[e.row]
					}
				}
			}
			if s.alpha[j] != want || (want != 0 && !listed[j]) {
				t.Fatalf("row %d, column %d: pivot row entry %v (listed %v), want %v", r, j, s.alpha[j], listed[j], want)
			}
		}
	}
	if sparse == 0 {
		t.Fatal("no row took the row-wise sum")
	}
}

// TestWarmFeasibleSkipsDualPhase re-solves after bound changes, as water
// filling's rounds do. One opens a column whose favoured bound is infinite
// and keeps the last optimal basis primal feasible: the run must go
// straight to the primal simplex (the dual phase would box that column far
// out and make rows infeasible: 1,000 to 1,500 dual iterations a round in
// water filling, where the primal simplex needs a handful). The other cuts
// a basic variable's bound: that basis is infeasible and the dual phase
// runs.
func TestWarmFeasibleSkipsDualPhase(t *testing.T) {
	const k = 50
	m := NewModel(Maximize)
	g := m.AddVar("g", 0, 0, k+1)
	x := m.AddGrid("x", 1, k, 0, Inf)
	for i := range k {
		m.SetObjective(x.At(0, i), 1)
		m.AddConstraint("r", []Term{{x.At(0, i), 1}, {g, 1}}, LE, 1)
	}
	ctx := context.Background()
	in, err := NewIncremental(m, &Settings{Backend: PureGo})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if sol, err := in.Solve(ctx); err != nil || sol.Objective != k {
		t.Fatalf("first solve: objective %v, %v; want %v", sol.Objective, err, k)
	}
	for _, c := range []struct {
		change    func()
		feasible  bool
		objective float64
	}{
		{func() { in.SetVarBounds(g, 0, Inf) }, true, k + 1},
		{func() { in.SetVarBounds(g, 0, 0.5) }, false, k/2 + (k+1)*0.5},
	} {
		c.change()
		if err := in.loadPureGo(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := in.spx.startsFeasible(ctx); got != c.feasible || err != nil {
			t.Fatalf("startsFeasible() = %v, %v; want %v", got, err, c.feasible)
		}
		sol, err := in.Solve(ctx)
		if err != nil || math.Abs(sol.Objective-c.objective) > 1e-9*c.objective {
			t.Fatalf("warm solve: objective %v, %v; want %v", sol.Objective, err, c.objective)
		}
	}
}

// steepestEdgeError returns the largest relative difference between a row
// weight of s and ‖eᵢᵀB⁻¹‖² (BTRAN of the unit row).
func steepestEdgeError(s *simplex) (worst float64) {
	for i, j := range s.head {
		clear(s.rho)
		s.rho[i] = 1
		s.btran(s.rho)
		var exact float64
		for _, v := range s.rho {
			exact += v * v
		}
		worst = max(worst, math.Abs(s.dualWeights[j]-exact)/max(1, exact))
	}
	return worst
}

// TestDualSteepestEdgeWeights checks that the dual phase, started from a
// slack basis with SteepestEdgePricing on MaxTotalThroughput's LP with a
// floor on each job's time, keeps each row's weight at its exact
// steepest-edge value ‖eᵢᵀB⁻¹‖² along its pivots and across
// refactorisations.
func TestDualSteepestEdgeWeights(t *testing.T) {
	m, _ := newGavelInstance(200, 3, 2).maxTotalModel(0.2)
	ctx := context.Background()
	for _, iters := range []int{5, refactorEvery + 10, 3 * refactorEvery} {
		s, err := newSimplex(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		s.isShifted = make([]bool, s.n+s.m) // as run sets up
		s.resetDevex()
		s.steepest = true
		if !s.slackBasis() {
			t.Fatal("a new simplex should start from the slack basis")
		}
		if _, err := s.dualPhase(ctx, iters); err != nil {
			t.Fatal(err)
		}
		if s.iters != iters {
			t.Fatalf("the dual phase stopped after %d iterations, before the %d the test needs", s.iters, iters)
		}
		if worst := steepestEdgeError(s); worst > 1e-9 {
			t.Errorf("after %d pivots: a weight is %.3g (relative) from ‖eᵢᵀB⁻¹‖²", iters, worst)
		}
	}
}

// TestSteepestEdgeWarmRounds checks that an Incremental with
// SteepestEdgePricing keeps its row weights from one round to the next,
// with rows added and idle ones dropped: after each warm round every
// weight is the exact ‖eᵢᵀB⁻¹‖² of the basis it ended on; and that the
// rounds reach the optimum that Devex pricing reaches.
func TestSteepestEdgeWarmRounds(t *testing.T) {
	in := newGavelInstance(200, 3, 3)
	m, x := in.maxTotalModel(0.2)
	ctx := context.Background()
	var obj [2][]float64
	for p, pricing := range []DualPricing{SteepestEdgePricing, DevexPricing} {
		inc, err := NewIncremental(m, &Settings{Backend: PureGo, DualPricing: pricing})
		if err != nil {
			t.Fatal(err)
		}
		defer inc.Close()
		var added []Row
		for round := range 4 {
			if round == 3 && len(inc.DropRows(added)) == 0 {
				t.Fatal("no idle row to drop: the test needs some")
			}
			if round > 0 {
				for j := round; j < len(in.tput); j += 4 {
					added = append(added, inc.AddConstraint("cap", x.RowTerms(j, []float64{1, 1, 1}), LE, 0.5))
				}
			}
			sol, err := inc.Solve(ctx)
			if err != nil {
				t.Fatalf("%v, round %d: %v", pricing, round, err)
			}
			obj[p] = append(obj[p], sol.Objective)
			if pricing != SteepestEdgePricing {
				continue
			}
			s := inc.spx
			if !s.weightsKept || s.weightsAt != s.iters {
				t.Fatalf("round %d: the weights were not kept (the round ended in the primal simplex?)", round)
			}
			if worst := steepestEdgeError(s); worst > 1e-9 {
				t.Errorf("round %d: a weight is %.3g (relative) from ‖eᵢᵀB⁻¹‖²", round, worst)
			}
		}
	}
	for round := range obj[0] {
		if a, b := obj[0][round], obj[1][round]; math.Abs(a-b) > 1e-7*max(1, math.Abs(b)) {
			t.Errorf("round %d: objective %v with the steepest edge, %v with Devex", round, a, b)
		}
	}
}

// TestSteepestEdgeWeighingStopped stops a warm steepest-edge round at each
// of its context checks in turn, those between blocks of weighNewRows
// among them (weighing the noisy 2,000 jobs' rows took 0.7 s a round, and
// a deadline waited for it), and checks the next solve: the same optimum,
// and, where it keeps weights, every one within 1e-9 of ‖eᵢᵀB⁻¹‖². A stop
// inside a refactorisation leaves another basis (simplex.refactor); its
// weights were kept as exact, off by a factor of up to 1,446, until the
// refactorisation dropped them.
func TestSteepestEdgeWeighingStopped(t *testing.T) {
	in := newGavelInstance(200, 3, 3)
	m, x := in.maxTotalModel(0.2)
	ctx := context.Background()
	// warm returns a model solved once, with rows added since.
	warm := func() *Incremental {
		inc, err := NewIncremental(m, &Settings{Backend: PureGo, DualPricing: SteepestEdgePricing})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inc.Solve(ctx); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < len(in.tput); j += 2 {
			inc.AddConstraint("cap", x.RowTerms(j, []float64{1, 1, 1}), LE, 0.5)
		}
		return inc
	}
	ref := warm()
	count := &stopctx.Countdown{Context: ctx, N: math.MaxInt}
	want, err := ref.Solve(count)
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}
	checks := math.MaxInt - count.N
	inWeighing := 0
	for n := range checks {
		inc := warm()
		if _, err := inc.Solve(&stopctx.Countdown{Context: ctx, N: n}); !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at check %d of %d: error %v, want context.Canceled", n, checks, err)
		}
		s := inc.spx
		for i, j := range s.head {
			if j == s.n+i && s.dualWeights[j] == 0 {
				inWeighing++ // stopped with a row left to weigh
				break
			}
		}
		got, err := inc.Solve(ctx)
		if err != nil {
			t.Fatalf("after a stop at check %d: %v", n, err)
		}
		if math.Abs(got.Objective-want.Objective) > 1e-7*max(1, math.Abs(want.Objective)) {
			t.Errorf("after a stop at check %d: objective %v, want %v", n, got.Objective, want.Objective)
		}
		if s.weightsKept && s.weightsAt == s.iters {
			if worst := steepestEdgeError(s); worst > 1e-9 {
				t.Errorf("after a stop at check %d: a weight is %.3g (relative) from ‖eᵢᵀB⁻¹‖²", n, worst)
			}
		}
		inc.Close()
	}
	if inWeighing == 0 {
		t.Errorf("none of the %d stops came while rows were left to weigh", checks)
	}
}

// basisTimes returns Bv (transposed: Bᵀv) for the simplex's basis, from
// its columns: position i holds basic variable head[i].
func basisTimes(s *simplex, v []float64, transposed bool) []float64 {
	out := make([]float64, s.m)
	for i, j := range s.head {
		if j >= s.n { // a logical: the unit column of its row
			if transposed {
				out[i] = v[j-s.n]
			} else {
				out[j-s.n] += v[i]
			}
			continue
		}
		for _, e := range s.col(j) {
			if transposed {
				out[i] += e.val * v[e.row]
			} else {
				out[e.row] += e.val * v[i]
			}
		}
	}
	return out
}

// TestSolvesWithGrownBump checks the pure-Go simplex's solves against its
// basis after pivots that bring rows into the bump (grow) and pivots on
// it, with and without a refactorisation since: B(B⁻¹v) = v,
// Bᵀ(B⁻ᵀv) = v, and btranUnit's B⁻ᵀeᵣ equals btran's, for rows on and
// off the bump.
func TestSolvesWithGrownBump(t *testing.T) {
	m, _ := newGavelInstance(200, 3, 2).maxTotalModel(0.2)
	ctx := context.Background()
	for _, iters := range []int{7, refactorEvery + 5, 3*refactorEvery + 1} {
		s, err := newSimplex(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		s.isShifted = make([]bool, s.n+s.m)
		s.resetDevex()
		if _, err := s.dualPhase(ctx, iters); err != nil {
			t.Fatal(err)
		}
		if s.iters != iters {
			t.Fatalf("the dual phase stopped after %d iterations, before the %d the test needs", s.iters, iters)
		}
		var on, off int
		for i := range s.m {
			if s.inBump[i] {
				on++
			} else {
				off++
			}
		}
		if on == 0 || off == 0 {
			t.Fatalf("after %d pivots: %d rows on the bump, %d off: the test needs both", iters, on, off)
		}
		v := make([]float64, s.m)
		for i := range v {
			v[i] = math.Sin(float64(3*i + iters))
		}
		for _, transposed := range []bool{false, true} {
			x := append([]float64(nil), v...)
			if transposed {
				s.btran(x)
			} else {
				s.ftran(x)
			}
			back := basisTimes(s, x, transposed)
			for i := range v {
				if math.Abs(back[i]-v[i]) > 1e-9 {
					t.Fatalf("after %d pivots (transposed %v): row %d gives %v, want %v", iters, transposed, i, back[i], v[i])
				}
			}
		}
		for r := range s.m {
			unit, full := make([]float64, s.m), make([]float64, s.m)
			s.btranUnit(r, unit)
			full[r] = 1
			s.btran(full)
			for i := range unit {
				if math.Abs(unit[i]-full[i]) > 1e-12*max(1, math.Abs(full[i])) {
					t.Fatalf("after %d pivots: B⁻ᵀe_%d differs at %d: %v against %v", iters, r, i, unit[i], full[i])
				}
			}
		}
	}
}

// TestIsBasicFollowsPivots solves the max-min and max-total-throughput
// LPs at 400 jobs × 4 types with the pure-Go simplex, then again warm after
// a bound change, with pivotRow checking, each time it relies on isBasic,
// that it agrees with where: basisChange keeps it, and every other change
// of where must make pivotRow build it again.
func TestIsBasicFollowsPivots(t *testing.T) {
	in := newGavelInstance(400, 4, 1)
	maxMin, _ := in.maxMinModel(false)
	maxTotal, _ := in.maxTotalModel(0)
	checks := 0
	for _, m := range []*Model{maxMin, maxTotal} {
		inc, err := NewIncremental(m, &Settings{Backend: PureGo})
		if err != nil {
			t.Fatal(err)
		}
		if err := inc.loadPureGo(context.Background()); err != nil {
			t.Fatal(err)
		}
		inc.spx.checkBasic = true
		if _, err := inc.Solve(context.Background()); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < inc.NumVars(); j += 5 {
			inc.SetVarBounds(Var(j), 0, 0)
		}
		if _, err := inc.Solve(context.Background()); err != nil {
			t.Fatal(err)
		}
		if inc.spx.basicWrong > 0 {
			t.Fatalf("isBasic disagreed with where on %d variables over %d checks", inc.spx.basicWrong, inc.spx.basicChecks)
		}
		checks += inc.spx.basicChecks
		inc.Close()
	}
	if checks == 0 {
		t.Fatal("pivotRow never relied on isBasic: the check saw nothing")
	}
	t.Logf("%d checks", checks)
}
