package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
)

// extremeCases are models whose magnitudes CLP cannot take as they are.
// Before the models were scaled (scale.go), each one killed the process
// (an assertion or a segfault inside CLP) or came back with a wrong
// answer and no error; they come from an adversarial run over every
// package.
var extremeCases = []struct {
	name    string
	reason  string
	method  Method
	build   func() *Model
	wantErr error
	wantX   []float64
}{
	{
		name:   "objective 1e30",
		reason: "CLP asserts |obj| < 1e25 and aborted the process",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 1, 1e30)
			m.AddConstraint("r", []Term{{x, 1}}, LE, 1)
			return m
		},
		wantX: []float64{1},
	},
	{
		name:   "row bound 1e300",
		reason: "CLP takes a bound of 1e30 or more as infinite: the model came back unbounded",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, Inf, 1)
			m.AddConstraint("r", []Term{{x, 1}}, LE, 1e300)
			return m
		},
		wantX: []float64{1e300},
	},
	{
		name:   "barrier objective 1e300",
		reason: "CLP's barrier aborted the process",
		method: Barrier,
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 1, 1e300)
			m.AddConstraint("r", []Term{{x, 1}}, LE, 1)
			return m
		},
		wantX: []float64{1},
	},
	{
		name:   "barrier on a 1e24 coefficient range",
		reason: "CLP's barrier segfaulted; dual simplex returned 0 against rows ≥ 1",
		method: Barrier,
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, Inf, 1e-12)
			y := m.AddVar("y", 0, Inf, 1e12)
			m.AddConstraint("a", []Term{{x, 1e12}, {y, 1e-12}}, GE, 1)
			m.AddConstraint("b", []Term{{x, 1e-12}, {y, 1e12}}, GE, 1)
			return m
		},
		wantErr: ErrInvalidModel,
	},
	{
		name:   "objective of 1e-8",
		reason: "every reduced cost was below CLP's dual tolerance, so x = 0 came back as optimal",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, Inf, 1e-8)
			y := m.AddVar("y", 0, Inf, 2e-8)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}}, LE, 1)
			return m
		},
		wantX: []float64{0, 1},
	},
	{
		name:   "bounds 1e-300 and 1",
		reason: "bounds are scaled by their largest, never up past the smallest",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 1e-300, 1)
			y := m.AddVar("y", 0, 1, 1)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}}, LE, 2)
			return m
		},
		wantX: []float64{1e-300, 1},
	},
}

// exactBackends returns the backends compiled into this test binary that
// solve every model here (gonum's dense simplex is left out).
func exactBackends() []Backend {
	if clpAvailable {
		return []Backend{CLP, PureGo}
	}
	return []Backend{PureGo}
}

func TestSolveExtremeMagnitudes(t *testing.T) {
	for _, tc := range extremeCases {
		for _, set := range []Settings{{Backend: PureGo}, {Backend: CLP}, {Backend: CLP, Presolve: true}} {
			if set.Backend == CLP && !clpAvailable {
				continue
			}
			set.Method = tc.method
			t.Run(fmt.Sprintf("%s/%v/presolve=%v", tc.name, set.Backend, set.Presolve), func(t *testing.T) {
				sol, err := Solve(context.Background(), tc.build(), &set)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Solve() error = %v, want %v (%s)", err, tc.wantErr, tc.reason)
				}
				if tc.wantErr != nil {
					return
				}
				for j, w := range tc.wantX {
					if got := sol.X[j]; math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
						t.Errorf("x[%d] = %v, want %v (%s)", j, got, w, tc.reason)
					}
				}
			})
		}
	}
}

// TestIncrementalScaledBounds: a warm model keeps the scaling it was
// loaded with, and refuses bounds that scaling cannot pass to CLP.
func TestIncrementalScaledBounds(t *testing.T) {
	for _, b := range exactBackends() {
		t.Run(b.String(), func(t *testing.T) { testIncrementalScaledBounds(t, b) })
	}
}

func testIncrementalScaledBounds(t *testing.T, b Backend) {
	m := NewModel(Maximize)
	x := m.AddVar("x", 0, Inf, 1e-9)
	r := m.AddConstraint("r", []Term{{x, 1e6}}, LE, 1e6)
	in, err := NewIncremental(m, &Settings{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	sol, err := in.Solve(context.Background())
	if err != nil || math.Abs(sol.X[0]-1) > 1e-9 {
		t.Fatalf("Solve() = %v, %v, want x = 1", sol, err)
	}
	in.SetRowBounds(r, -Inf, 3e6)
	if sol, err = in.Solve(context.Background()); err != nil || math.Abs(sol.X[0]-3) > 1e-9 {
		t.Fatalf("Solve() after SetRowBounds = %v, %v, want x = 3", sol, err)
	}
	in.SetRowBounds(r, -Inf, 1e300)
	if _, err = in.Solve(context.Background()); !errors.Is(err, ErrInvalidModel) {
		t.Fatalf("Solve() with a bound of 1e300 error = %v, want ErrInvalidModel", err)
	}
}

// TestLdexpScalesExactly checks the scaling's exponent arithmetic over the
// whole range of factors exp2 makes: x·f·g exactly, including results
// that x·f alone would overflow or flush to zero.
func TestLdexpScalesExactly(t *testing.T) {
	for e := -maxScaleExp; e <= maxScaleExp; e++ {
		f := exp2(float64(e))
		if got := pow2Exp(f); got != e {
			t.Fatalf("pow2Exp(2^%d) = %d", e, got)
		}
		for _, x := range []float64{0, 1, -3.25, math.Inf(1), math.Inf(-1)} {
			if got, want := ldexp(x, f, 1/f), x; got != want {
				t.Fatalf("ldexp(%v, 2^%d, 2^%d) = %v, want %v", x, e, -e, got, want)
			}
		}
		if got, want := ldexp(1.5, f, 2), math.Ldexp(1.5, e+1); got != want {
			t.Fatalf("ldexp(1.5, 2^%d, 2) = %v, want %v", e, got, want)
		}
	}
	if got := ldexp(math.MaxFloat64/4, exp2(maxScaleExp), exp2(-maxScaleExp+1)); got != math.MaxFloat64/2 {
		t.Fatalf("ldexp overflowed on the way: %v", got)
	}
}
