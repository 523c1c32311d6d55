package lp

import (
	"context"
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/internal/stopctx"
)

// hintBackends are the backends that take basis hints and report bases.
func hintBackends() []Backend {
	if clpAvailable {
		return []Backend{PureGo, CLP}
	}
	return []Backend{PureGo}
}

// TestPropertyBasisHintFromOptimum: a model hinted with the basis its own
// solve ended on is solved again to the same optimum; by the pure-Go
// simplex, started at its point too (SetStart, which puts the nonbasic
// variables at the bounds they held), with no iteration.
func TestPropertyBasisHintFromOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		for _, b := range hintBackends() {
			set := &Settings{Backend: b}
			cold, err := Solve(context.Background(), lp.m, set)
			if err != nil {
				t.Fatalf("%v: cold Solve() error = %v on a feasible bounded LP", b, err)
			}
			if cold.Basis == nil || len(cold.Basis.Vars) != len(cold.Basis.Tight) {
				t.Fatalf("%v: Basis = %+v: want as many basic variables as tight rows", b, cold.Basis)
			}
			m := lp.m.Clone()
			m.SetBasisHint(*cold.Basis)
			for j, x := range cold.X {
				m.SetStart(Var(j), x)
			}
			warm, err := Solve(context.Background(), m, set)
			if err != nil {
				t.Fatalf("%v: hinted Solve() error = %v", b, err)
			}
			if math.Abs(warm.Objective-cold.Objective) > objTol*math.Max(1, math.Abs(cold.Objective)) {
				t.Fatalf("%v: hinted objective %v, cold %v", b, warm.Objective, cold.Objective)
			}
			if b == PureGo && warm.Iterations != 0 {
				t.Fatalf("hinted with its own optimal basis %+v: %d iterations, want 0", *cold.Basis, warm.Iterations)
			}
		}
	})
}

// TestPropertyBasisHintAnyBasis: whatever the hint (dependent columns,
// names repeated, more columns than rows or fewer), the pure-Go simplex
// and CLP reach the optimum of the unhinted solve, and report
// infeasibility where the model has no point.
func TestPropertyBasisHintAnyBasis(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		m := lp.m.Clone()
		if rapid.Bool().Draw(t, "infeasible") {
			m.AddConstraint("out", []Term{{0, 1}}, GE, m.upper[0]+1)
		}
		var hint Basis
		for range rapid.IntRange(0, m.NumVars()+1).Draw(t, "basic") {
			hint.Vars = append(hint.Vars, Var(rapid.IntRange(0, m.NumVars()-1).Draw(t, "var")))
		}
		if m.NumRows() > 0 {
			for range rapid.IntRange(0, m.NumRows()+1).Draw(t, "tight") {
				hint.Tight = append(hint.Tight, Row(rapid.IntRange(0, m.NumRows()-1).Draw(t, "row")))
			}
		}
		ref, refErr := Solve(context.Background(), m, &Settings{Backend: PureGo})
		m.SetBasisHint(hint)
		for _, b := range hintBackends() {
			sol, err := Solve(context.Background(), m, &Settings{Backend: b})
			switch {
			case errors.Is(refErr, ErrInfeasible):
				if !errors.Is(err, ErrInfeasible) {
					t.Fatalf("%v, hint %+v: error %v on an infeasible model", b, hint, err)
				}
			case refErr != nil:
				t.Fatalf("unhinted Solve() error = %v", refErr)
			case err != nil:
				t.Fatalf("%v, hint %+v: Solve() error = %v", b, hint, err)
			case math.Abs(sol.Objective-ref.Objective) > objTol*math.Max(1, math.Abs(ref.Objective)):
				t.Fatalf("%v, hint %+v: objective %v, unhinted %v", b, hint, sol.Objective, ref.Objective)
			}
		}
	})
}

// TestBasisHintIncremental: an Incremental's first solve starts from the
// hint of the model it was made from, and row generation goes on warm from
// there; Gonum reports no basis.
func TestBasisHintIncremental(t *testing.T) {
	build := func() *Model {
		m := NewModel(Maximize)
		x := m.AddVar("x", 0, Inf, 3)
		y := m.AddVar("y", 0, Inf, 2)
		m.AddConstraint("a", []Term{{x, 1}, {y, 1}}, LE, 5)
		m.AddConstraint("b", []Term{{x, 1}, {y, 3}}, LE, 9)
		m.AddConstraint("c", []Term{{x, 1}}, LE, 4)
		return m
	}
	cold, err := Solve(context.Background(), build(), &Settings{Backend: PureGo})
	if err != nil || cold.Objective != 14 {
		t.Fatalf("cold: objective %v (%v), want 14", cold.Objective, err)
	}
	m := build()
	m.SetBasisHint(*cold.Basis)
	in, err := NewIncremental(m, &Settings{Backend: PureGo})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	sol, err := in.Solve(context.Background())
	if err != nil || sol.Objective != 14 || sol.Iterations != 0 {
		t.Fatalf("hinted: objective %v after %d iterations (%v), want 14 after 0", sol.Objective, sol.Iterations, err)
	}
	in.AddConstraint("d", []Term{{0, 1}, {1, 1}}, LE, 4)
	if sol, err = in.Solve(context.Background()); err != nil || math.Abs(sol.Objective-12) > 1e-9 {
		t.Fatalf("with row d: objective %v (%v), want 12", sol.Objective, err)
	}
	if sol, err := Solve(context.Background(), m, &Settings{Backend: Gonum}); err == nil && sol.Basis != nil {
		t.Errorf("Gonum: Basis %+v, want nil (it reports none)", *sol.Basis)
	}
}

// TestBasisHintSingular: a hint whose columns are linearly dependent
// leaves the dependent ones nonbasic, and one whose basis is nearly
// singular is dropped whole, so that the solve takes the path it takes
// without a hint; both reach the optimum.
func TestBasisHintSingular(t *testing.T) {
	build := func(eps float64) *Model {
		m := NewModel(Maximize)
		x := m.AddVar("x", 0, Inf, 3)
		y := m.AddVar("y", 0, Inf, 2)
		z := m.AddVar("z", 0, Inf, 1)
		m.AddConstraint("a", []Term{{x, 1}, {y, 1}, {z, 1}}, LE, 5)
		m.AddConstraint("b", []Term{{x, 1}, {y, 1 + eps}, {z, 1}}, LE, 9)
		m.AddConstraint("c", []Term{{x, 1}, {z, 3}}, LE, 4)
		return m
	}
	for _, eps := range []float64{0, 1e-9} {
		ref, err := Solve(context.Background(), build(eps), &Settings{Backend: PureGo})
		if err != nil {
			t.Fatal(err)
		}
		m := build(eps)
		// x and y are (nearly) dependent on rows a and b: (1, 1) and
		// (1, 1+eps).
		m.SetBasisHint(Basis{Vars: []Var{0, 1}, Tight: []Row{0, 1}})
		sol, err := Solve(context.Background(), m, &Settings{Backend: PureGo})
		if err != nil || math.Abs(sol.Objective-ref.Objective) > 1e-9 {
			t.Errorf("eps %v: objective %v (%v), without a hint %v", eps, sol.Objective, err, ref.Objective)
		}
		if eps > 0 && sol.Iterations != ref.Iterations {
			t.Errorf("eps %v: %d iterations, %d without a hint: the nearly singular hint was not dropped", eps, sol.Iterations, ref.Iterations)
		}
	}
}

// TestBasisHintMalformed: a hint naming a variable or row the model does
// not have is a malformed model.
func TestBasisHintMalformed(t *testing.T) {
	for _, hint := range []Basis{
		{Vars: []Var{2}},
		{Vars: []Var{-1}},
		{Tight: []Row{1}},
		{Tight: []Row{-1}},
	} {
		m := NewModel(Minimize)
		x := m.AddVar("x", 0, 1, 1)
		m.AddVar("y", 0, 1, 1)
		m.AddConstraint("a", []Term{{x, 1}}, GE, 0.5)
		m.SetBasisHint(hint)
		if _, err := Solve(context.Background(), m, nil); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("hint %+v: error %v, want ErrInvalidModel", hint, err)
		}
	}
}

// TestBasisHintResumesStoppedSolve: a pure-Go solve stopped by its
// context reports the basis it had reached, and a copy of the model
// hinted with it (and started at its point) goes on to the optimum.
func TestBasisHintResumesStoppedSolve(t *testing.T) {
	m, _ := newGavelInstance(256, 4, 2).maxMinModel(false)
	want, checks := pureGoChecks(t, m)
	resumed := 0
	for n := 0; n < checks; n += max(1, checks/20) {
		in, err := NewIncremental(m, &Settings{Backend: PureGo})
		if err != nil {
			t.Fatal(err)
		}
		stopped, err := in.Solve(&stopctx.Countdown{Context: context.Background(), N: n})
		in.Close()
		if !errors.Is(err, context.Canceled) || stopped == nil || stopped.Basis == nil {
			continue // stopped while loading, before a basis, or not at all
		}
		if b := stopped.Basis; len(b.Vars) != len(b.Tight) {
			t.Fatalf("stopped at check %d: %d basic variables, %d tight rows", n, len(b.Vars), len(b.Tight))
		}
		next := m.Clone()
		next.SetBasisHint(*stopped.Basis)
		for j, x := range stopped.X {
			next.SetStart(Var(j), x)
		}
		got, err := Solve(context.Background(), next, &Settings{Backend: PureGo})
		if err != nil {
			t.Fatalf("resumed from check %d: %v", n, err)
		}
		if math.Abs(got.Objective-want.Objective) > 1e-7*math.Max(1, math.Abs(want.Objective)) {
			t.Fatalf("resumed from check %d: objective %v, want %v", n, got.Objective, want.Objective)
		}
		resumed++
	}
	if resumed == 0 {
		t.Fatalf("no stop out of %d checks left a basis", checks)
	}
}

// TestBasisHintGoesOnOverStops stops a solve again and again, each run
// hinted with the basis the run before it stopped at, as a scheduler
// whose every round is cut short goes on (alloc.OEFStopped): the runs
// must end, at the optimum.
func TestBasisHintGoesOnOverStops(t *testing.T) {
	m, _ := newGavelInstance(256, 4, 2).maxMinModel(false)
	want, checks := pureGoChecks(t, m)
	for _, share := range []int{3, 4, 6} {
		next := m.Clone()
		for run := 0; ; run++ {
			if run == 60 {
				t.Fatalf("runs of %d of a cold solve's %d checks: no end after %d", checks/share, checks, run)
			}
			got, err := Solve(&stopctx.Countdown{Context: context.Background(), N: checks / share}, next, &Settings{Backend: PureGo})
			if err == nil {
				if math.Abs(got.Objective-want.Objective) > 1e-7*math.Max(1, math.Abs(want.Objective)) {
					t.Fatalf("runs of %d checks: objective %v after %d, want %v", checks/share, got.Objective, run, want.Objective)
				}
				t.Logf("runs of %d of %d checks: optimal after %d stops", checks/share, checks, run)
				break
			}
			if !errors.Is(err, context.Canceled) || got == nil || got.Basis == nil {
				t.Fatalf("run %d of %d checks: %v, basis %v", run, checks/share, err, got != nil && got.Basis != nil)
			}
			next = m.Clone()
			next.SetBasisHint(*got.Basis)
		}
	}
}
