package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyIncrementalBounds changes the row ranges and variable bounds
// of a loaded model between solves, keeping a known point feasible, and
// checks every warm re-solve against a cold solve of the changed model,
// for each backend and warm method.
func TestPropertyIncrementalBounds(t *testing.T) {
	var sets []Settings
	for _, b := range backends() {
		sets = append(sets, Settings{Backend: b})
		if b == CLP {
			sets = append(sets, Settings{Backend: b, Method: PrimalSimplex})
		}
	}
	for _, set := range sets {
		t.Run(fmt.Sprint(set.Backend, "/", set.Method), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				lp, in := drawIncremental(t, set)
				defer in.Close()
				for round := range 3 {
					if round > 0 {
						rebound(t, in, lp.x0)
					}
					checkWarmAgainstCold(t, in, set.Backend, round)
				}
			})
		})
	}
}

// TestPropertyIncrementalObjective changes the objective of a loaded model
// between solves, and now and then the bounds too, and checks every warm
// re-solve against a cold solve of the changed model, for each backend.
func TestPropertyIncrementalObjective(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.String(), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				lp, in := drawIncremental(t, Settings{Backend: b})
				defer in.Close()
				for round := range 4 {
					if round > 0 {
						for j := range in.NumVars() {
							if rapid.Bool().Draw(t, "change cost") {
								in.SetObjective(Var(j), float64(rapid.IntRange(-5, 5).Draw(t, "c")))
							}
						}
						if rapid.IntRange(0, 3).Draw(t, "rebound") == 0 {
							rebound(t, in, lp.x0)
						}
					}
					checkWarmAgainstCold(t, in, b, round)
				}
			})
		})
	}
}

// drawIncremental draws a feasible, bounded LP and loads it with set.
func drawIncremental(t *rapid.T, set Settings) (randomLP, *Incremental) {
	lp := genFeasibleLP().Draw(t, "lp")
	in, err := NewIncremental(lp.m, &set)
	if err != nil {
		t.Fatal(err)
	}
	return lp, in
}

// checkWarmAgainstCold re-solves in warm and its model cold with backend
// b, and fails unless both reach the same objective.
func checkWarmAgainstCold(t *rapid.T, in *Incremental, b Backend, round int) {
	warm, err := in.Solve(context.Background())
	if err != nil {
		t.Fatalf("round %d: warm solve: %v", round, err)
	}
	cold, err := Solve(context.Background(), in.m, &Settings{Backend: b})
	if err != nil {
		t.Fatalf("round %d: cold solve: %v", round, err)
	}
	if math.Abs(warm.Objective-cold.Objective) > objTol*math.Max(1, math.Abs(cold.Objective)) {
		t.Fatalf("round %d: warm objective %v, cold %v", round, warm.Objective, cold.Objective)
	}
}

// TestIncrementalObjectiveErrors: a bad objective coefficient or variable
// fails the next Solve with ErrInvalidModel.
func TestIncrementalObjectiveErrors(t *testing.T) {
	for name, set := range map[string]func(in *Incremental){
		"NaN":              func(in *Incremental) { in.SetObjective(0, math.NaN()) },
		"+Inf":             func(in *Incremental) { in.SetObjective(0, math.Inf(1)) },
		"unknown variable": func(in *Incremental) { in.SetObjective(2, 1) },
		"negative index":   func(in *Incremental) { in.SetObjective(-1, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 1, 1)
			m.AddVar("y", 0, 1, 1)
			m.AddConstraint("r", []Term{{x, 1}}, LE, 1)
			in, err := NewIncremental(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if _, err := in.Solve(context.Background()); err != nil {
				t.Fatal(err)
			}
			set(in)
			if _, err := in.Solve(context.Background()); !errors.Is(err, ErrInvalidModel) {
				t.Errorf("Solve() error = %v, want ErrInvalidModel", err)
			}
		})
	}
}

// rebound draws new bounds for some variables and rows of in, each
// containing x0 (so the model stays feasible and bounded).
func rebound(t *rapid.T, in *Incremental, x0 []float64) {
	for j := range in.NumVars() {
		if rapid.Bool().Draw(t, "change var") {
			lo := x0[j] - float64(rapid.IntRange(0, 4).Draw(t, "below"))
			hi := x0[j] + float64(rapid.IntRange(0, 4).Draw(t, "above"))
			in.SetVarBounds(Var(j), lo, hi)
		}
	}
	for i := range in.NumRows() {
		if !rapid.Bool().Draw(t, "change row") {
			continue
		}
		var act float64
		for _, term := range in.m.rows[i] {
			act += term.Coef * x0[term.Var]
		}
		lo, hi := -Inf, Inf
		if rapid.Bool().Draw(t, "lower") {
			lo = act - float64(rapid.IntRange(0, 3).Draw(t, "below"))
		}
		if rapid.Bool().Draw(t, "upper") {
			hi = act + float64(rapid.IntRange(0, 3).Draw(t, "above"))
		}
		in.SetRowBounds(Row(i), lo, hi)
	}
}

func TestIncrementalBoundsCases(t *testing.T) {
	for _, b := range backends() {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			// max x+y, x+y ≤ 4, 0 = 0·x (an empty row), x, y in [0, 3].
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 3, 1)
			y := m.AddVar("y", 0, 3, 1)
			sum := m.AddConstraint("sum", []Term{{x, 1}, {y, 1}}, LE, 4)
			empty := m.AddConstraint("empty", []Term{{x, 0}}, EQ, 0)
			in, err := NewIncremental(m, &Settings{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			solveWant := func(name string, want float64, wantErr error) {
				t.Helper()
				sol, err := in.Solve(context.Background())
				if !errors.Is(err, wantErr) {
					t.Fatalf("%s: error %v, want %v", name, err, wantErr)
				}
				if err == nil && math.Abs(sol.Objective-want) > testTol {
					t.Errorf("%s: objective %v, want %v", name, sol.Objective, want)
				}
			}
			solveWant("start", 4, nil)
			in.SetRowBounds(sum, -Inf, 5)
			solveWant("row relaxed", 5, nil)
			in.SetVarBounds(y, 0, 1)
			solveWant("variable tightened", 4, nil)
			in.SetRowBounds(sum, 4.5, 4.5)
			in.SetVarBounds(y, 0, 3)
			solveWant("row fixed", 4.5, nil)
			in.SetRowBounds(empty, 1, 2)
			solveWant("empty row excludes 0", 0, ErrInfeasible)
			in.SetRowBounds(empty, -1, 1)
			solveWant("empty row restored", 4.5, nil)
			in.SetVarBounds(x, 0, 1)
			solveWant("now infeasible", 0, ErrInfeasible)
			in.SetVarBounds(x, 0, 3)
			solveWant("feasible again", 4.5, nil)

			in.SetRowBounds(Row(7), 0, 1)
			solveWant("unknown row", 0, ErrInvalidModel)
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*Incremental)
	}{
		{"unknown variable", func(in *Incremental) { in.SetVarBounds(Var(-1), 0, 1) }},
		{"empty variable bounds", func(in *Incremental) { in.SetVarBounds(0, 2, 1) }},
		{"NaN variable bound", func(in *Incremental) { in.SetVarBounds(0, math.NaN(), 1) }},
		{"empty row range", func(in *Incremental) { in.SetRowBounds(0, 1, 0) }},
		{"row range +Inf below", func(in *Incremental) { in.SetRowBounds(0, Inf, Inf) }},
	} {
		m := NewModel(Minimize)
		x := m.AddVar("x", 0, 1, 1)
		m.AddConstraint("r", []Term{{x, 1}}, GE, 0)
		in, err := NewIncremental(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(in)
		if _, err := in.Solve(context.Background()); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("%s: error %v, want ErrInvalidModel", tc.name, err)
		}
		in.Close()
	}
}

// TestIncrementalAddRange adds ranged rows to a loaded model, max x + 2y
// with x + y ≤ 4 and x, y in [0, 3] (optimum (1, 3), 7): 1 ≤ x − y ≤ 2
// cuts it off at its lower side, x + y = 4 and x − y = 1 meeting at
// (2.5, 1.5), 5.5; then 0 ≤ y ≤ 1 moves it to (3, 1), 5, where x − y
// reaches the row's upper side.
func TestIncrementalAddRange(t *testing.T) {
	for _, b := range backends() {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 3, 1)
			y := m.AddVar("y", 0, 3, 2)
			m.AddConstraint("sum", []Term{{x, 1}, {y, 1}}, LE, 4)
			in, err := NewIncremental(m, &Settings{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			solveWant := func(name string, obj float64, at []float64) {
				t.Helper()
				sol, err := in.Solve(context.Background())
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if math.Abs(sol.Objective-obj) > testTol {
					t.Errorf("%s: objective %v, want %v", name, sol.Objective, obj)
				}
				for j, v := range at {
					if math.Abs(sol.X[j]-v) > testTol {
						t.Errorf("%s: x = %v, want %v", name, sol.X, at)
						break
					}
				}
			}
			solveWant("loaded", 7, []float64{1, 3})
			if r := in.AddRange("diff", []Term{{x, 1}, {y, -1}}, 1, 2); r != 1 {
				t.Errorf("AddRange(diff) = row %d, want 1", r)
			}
			if in.NumRows() != 2 {
				t.Errorf("%d rows after AddRange, want 2", in.NumRows())
			}
			solveWant("lower side", 5.5, []float64{2.5, 1.5})
			if r := in.AddRange("y", []Term{{y, 1}}, 0, 1); r != 2 {
				t.Errorf("AddRange(y) = row %d, want 2", r)
			}
			solveWant("upper side", 5, []float64{3, 1})
			in.AddRange("empty", []Term{{x, 1}}, 2, 1)
			if _, err := in.Solve(context.Background()); !errors.Is(err, ErrInvalidModel) {
				t.Errorf("empty range: error %v, want ErrInvalidModel", err)
			}
		})
	}
}

// TestPropertyIncrementalDropRows drops every row the optimal basis does
// not use and checks that the warm re-solve keeps the optimum, that the
// dropped rows have zero duals, and that a cold solve of the model left
// agrees.
func TestPropertyIncrementalDropRows(t *testing.T) {
	for _, b := range exactBackends() {
		t.Run(b.String(), func(t *testing.T) { testIncrementalDropRows(t, b) })
	}
}

func testIncrementalDropRows(t *testing.T, b Backend) {
	rapid.Check(t, func(t *rapid.T) {
		_, in := drawIncremental(t, Settings{Backend: b})
		defer in.Close()
		before, err := in.Solve(context.Background())
		if err != nil {
			t.Fatalf("first solve: %v", err)
		}
		all := make([]Row, in.NumRows())
		for i := range all {
			all[i] = Row(i)
		}
		dropped := in.DropRows(all)
		after, err := in.Solve(context.Background())
		if err != nil {
			t.Fatalf("solve after dropping %v: %v", dropped, err)
		}
		scale := math.Max(1, math.Abs(before.Objective))
		if math.Abs(after.Objective-before.Objective) > objTol*scale {
			t.Fatalf("objective %v after dropping %v, %v before", after.Objective, dropped, before.Objective)
		}
		for _, r := range dropped {
			if after.RowDuals[r] != 0 {
				t.Fatalf("dropped row %d has dual %v", r, after.RowDuals[r])
			}
		}
		cold, err := Solve(context.Background(), in.m, &Settings{Backend: b})
		if err != nil {
			t.Fatalf("cold solve of the model left: %v", err)
		}
		if math.Abs(cold.Objective-after.Objective) > objTol*scale {
			t.Fatalf("warm objective %v, cold %v", after.Objective, cold.Objective)
		}
		// A row added after the drop, met at the optimum and possibly
		// binding, over columns that lost their entries on the dropped
		// rows: the warm solve must agree with a cold one.
		terms := make([]Term, in.NumVars())
		var rhs float64
		for j := range terms {
			k := float64(rapid.IntRange(-2, 2).Draw(t, "k"))
			terms[j] = Term{Var: Var(j), Coef: k}
			rhs += k * after.X[j]
		}
		in.AddConstraint("added", terms, LE, rhs)
		added, err := in.Solve(context.Background())
		if err != nil {
			t.Fatalf("solve after adding a row: %v", err)
		}
		cold, err = Solve(context.Background(), in.m, &Settings{Backend: b})
		if err != nil {
			t.Fatalf("cold solve with the added row: %v", err)
		}
		if math.Abs(cold.Objective-added.Objective) > objTol*math.Max(1, math.Abs(cold.Objective)) {
			t.Fatalf("warm objective %v with the added row, cold %v", added.Objective, cold.Objective)
		}
		if len(dropped) > 0 {
			in.SetRowBounds(dropped[0], 0, 1)
			if _, err := in.Solve(context.Background()); !errors.Is(err, ErrInvalidModel) {
				t.Fatalf("Solve after bounding dropped row %d: error %v, want ErrInvalidModel", dropped[0], err)
			}
		}
	})
}

// TestIncrementalBoundsFlip is the rapid case of
// TestPropertyIncrementalBounds whose warm CLP re-solve reported a
// feasible model infeasible: a basic variable (x5 = 0.75) fixed at 0, and
// a row's range moved from ≤ 0 to ≥ 0. Every backend must find -1.
func TestIncrementalBoundsFlip(t *testing.T) {
	m := NewModel(Minimize)
	for j, hi := range []float64{0, 1, 0, 1, 0, 1, 1} {
		obj := 0.0
		if j >= 5 {
			obj = -1
		}
		m.AddVar(fmt.Sprint("x", j), 0, hi, obj)
	}
	r0 := m.AddRange("r0", []Term{{3, -4}, {5, 2}, {0, 0}}, -Inf, 0)
	r1 := m.AddRange("r1", []Term{{6, -1}, {0, 0}, {3, -2}}, -1, Inf)
	m.AddRange("r2", []Term{{0, 0}}, -Inf, 0)
	r3 := m.AddRange("r3", []Term{{6, 1}}, -Inf, 0)
	r4 := m.AddRange("r4", []Term{{5, 2}, {3, -1}}, -Inf, 1)
	m.AddRange("r5", []Term{{1, 5}, {0, 0}, {3, 1}}, -Inf, 1)
	for _, b := range backends() {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			in, err := NewIncremental(m, &Settings{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if sol, err := in.Solve(context.Background()); err != nil || math.Abs(sol.Objective+0.75) > testTol {
				t.Fatalf("first solve: %v, error %v; want -0.75", sol, err)
			}
			in.SetVarBounds(5, 0, 0)
			in.SetRowBounds(r0, 0, Inf)
			in.SetRowBounds(r1, -3, Inf)
			in.SetRowBounds(r3, -Inf, Inf)
			in.SetRowBounds(r4, -Inf, Inf)
			sol, err := in.Solve(context.Background())
			if err != nil {
				t.Fatalf("re-solve: %v", err)
			}
			if math.Abs(sol.Objective+1) > testTol {
				t.Errorf("re-solve: objective %v, want -1", sol.Objective)
			}
		})
	}
}
