package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testTol is the absolute tolerance for comparing solved values with the
// exact optima of the small LPs below.
const testTol = 1e-7

// backends returns every backend compiled into this test binary.
func backends() []Backend {
	if clpAvailable {
		return []Backend{CLP, PureGo, Gonum}
	}
	return []Backend{PureGo, Gonum}
}

// variants returns the settings every table case is solved with: each
// CLP method, with and without presolve, the pure-Go simplex with each
// dual pricing, and Gonum.
func variants() []Settings {
	var v []Settings
	if clpAvailable {
		for _, m := range []Method{Auto, PrimalSimplex, Barrier} {
			v = append(v, Settings{Backend: CLP, Method: m}, Settings{Backend: CLP, Method: m, Presolve: true})
		}
	}
	return append(v, Settings{Backend: PureGo}, Settings{Backend: PureGo, DualPricing: SteepestEdgePricing}, Settings{Backend: Gonum})
}

// solvers returns one Settings for each backend, and the pure-Go simplex
// with steepest-edge pricing as well.
func solvers() []Settings {
	var v []Settings
	for _, b := range backends() {
		v = append(v, Settings{Backend: b})
	}
	return append(v, Settings{Backend: PureGo, DualPricing: SteepestEdgePricing})
}

// lpCase is a small LP with a known answer. build returns the model; want
// holds the unique optimal point (nil when not unique) and wantDuals the
// row duals (∂objective/∂rhs), checked for backends that report duals.
type lpCase struct {
	name      string
	reason    string
	build     func() *Model
	wantErr   error
	wantObj   float64
	wantX     []float64
	wantDuals []float64
}

var lpCases = []lpCase{
	{
		name:   "textbook max",
		reason: "max 3x+5y, x≤4, 2y≤12, 3x+2y≤18: optimum 36 at (2,6), duals (0, 3/2, 1)",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, Inf, 3)
			y := m.AddVar("y", 0, Inf, 5)
			m.AddConstraint("a", []Term{{x, 1}}, LE, 4)
			m.AddConstraint("b", []Term{{y, 2}}, LE, 12)
			m.AddConstraint("c", []Term{{x, 3}, {y, 2}}, LE, 18)
			return m
		},
		wantObj: 36, wantX: []float64{2, 6}, wantDuals: []float64{0, 1.5, 1},
	},
	{
		name:   "min with GE rows",
		reason: "min x+y, x+2y≥4, 3x+y≥6: optimum 14/5 at (8/5, 6/5), duals (2/5, 1/5)",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, Inf, 1)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("a", []Term{{x, 1}, {y, 2}}, GE, 4)
			m.AddConstraint("b", []Term{{x, 3}, {y, 1}}, GE, 6)
			return m
		},
		wantObj: 2.8, wantX: []float64{1.6, 1.2}, wantDuals: []float64{0.4, 0.2},
	},
	{
		name:   "range and equality rows",
		reason: "min -x-2y, 1≤x+y≤3, x-y=1, box [0,10]: the range's upper side binds, x=2, y=1",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 10, -1)
			y := m.AddVar("y", 0, 10, -2)
			m.AddRange("r", []Term{{x, 1}, {y, 1}}, 1, 3)
			m.AddConstraint("e", []Term{{x, 1}, {y, -1}}, EQ, 1)
			return m
		},
		wantObj: -4, wantX: []float64{2, 1}, wantDuals: []float64{-1.5, 0.5},
	},
	{
		name:   "range lower side binds",
		reason: "min x+y, 1≤x+y≤3, x-y=1: the range's lower side binds, x=1, y=0",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 10, 1)
			y := m.AddVar("y", 0, 10, 1)
			m.AddRange("r", []Term{{x, 1}, {y, 1}}, 1, 3)
			m.AddConstraint("e", []Term{{x, 1}, {y, -1}}, EQ, 1)
			return m
		},
		wantObj: 1, wantX: []float64{1, 0},
	},
	{
		name:   "free variables",
		reason: "min z, z≥x-3, z≥3-x, z free, x≤10 only: z=|x-3| minimised at x=3",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", -Inf, 10, 0)
			z := m.AddVar("z", -Inf, Inf, 1)
			m.AddConstraint("a", []Term{{z, 1}, {x, -1}}, GE, -3)
			m.AddConstraint("b", []Term{{z, 1}, {x, 1}}, GE, 3)
			return m
		},
		wantObj: 0, wantX: []float64{3, 0}, wantDuals: []float64{0.5, 0.5},
	},
	{
		name:   "negative bounds",
		reason: "min x, x∈[-5,5], y∈[-1,1], x+y≥-2: x=-1-... the row binds with y at its upper bound, x=-3",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", -5, 5, 1)
			y := m.AddVar("y", -1, 1, 0)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}}, GE, -2)
			return m
		},
		wantObj: -3, wantX: []float64{-3, 1}, wantDuals: []float64{1},
	},
	{
		name:   "duplicate terms",
		reason: "x listed twice is summed: 2x+y≤4, max x gives x=2",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, Inf, 1)
			y := m.AddVar("y", 0, Inf, 0)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}, {x, 1}}, LE, 4)
			return m
		},
		wantObj: 2, wantX: []float64{2, 0}, wantDuals: []float64{0.5},
	},
	{
		name:   "fixed variable",
		reason: "x fixed at 2, x+y≤5, max y: y=3",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 2, 2, 0)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}}, LE, 5)
			return m
		},
		wantObj: 3, wantX: []float64{2, 3}, wantDuals: []float64{1},
	},
	{
		name:   "upper bound only",
		reason: "max x with x∈(-∞,7] and no rows: x=7",
		build: func() *Model {
			m := NewModel(Maximize)
			m.AddVar("x", -Inf, 7, 1)
			return m
		},
		wantObj: 7, wantX: []float64{7},
	},
	{
		name:   "variable in no row",
		reason: "min x+y, x≥0 in no row sits at 0; y≥1 via a row",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddVar("x", 0, Inf, 1)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("r", []Term{{y, 1}}, GE, 1)
			return m
		},
		wantObj: 1, wantX: []float64{0, 1}, wantDuals: []float64{1},
	},
	{
		name: "empty rows beside a degenerate vertex",
		reason: "found by TestPropertyDualCertificate: CLP's barrier aborted the process on a row " +
			"without nonzeros; x=3 is the only feasible point",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 3, 6, -2)
			m.AddConstraint("a", []Term{{x, 2}}, LE, 6)
			m.AddConstraint("b", []Term{{x, 5}}, EQ, 15)
			m.AddConstraint("c", []Term{{x, -2}}, GE, -7)
			m.AddConstraint("d", []Term{{x, -1}}, EQ, -3)
			m.AddConstraint("e", []Term{{x, 0}}, LE, 3)
			m.AddRange("f", nil, -Inf, Inf)
			return m
		},
		wantObj: -6, wantX: []float64{3},
	},
	{
		name:   "redundant equality rows",
		reason: "found by TestPropertyBackendsAgree: gonum's simplex needs full row rank; x+y=2 twice",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 5, 1)
			y := m.AddVar("y", 0, 5, 0)
			m.AddConstraint("a", []Term{{x, 1}, {y, 1}}, EQ, 2)
			m.AddConstraint("b", []Term{{x, 2}, {y, 2}}, EQ, 4)
			m.AddConstraint("c", []Term{{y, 1}}, LE, 1.5)
			return m
		},
		wantObj: 0.5, wantX: []float64{0.5, 1.5},
	},
	{
		name:   "inconsistent dependent rows",
		reason: "x+y=2 and 2x+2y=5 are parallel and inconsistent",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 5, 1)
			y := m.AddVar("y", 0, 5, 0)
			m.AddConstraint("a", []Term{{x, 1}, {y, 1}}, EQ, 2)
			m.AddConstraint("b", []Term{{x, 2}, {y, 2}}, EQ, 5)
			return m
		},
		wantErr: ErrInfeasible,
	},
	{
		name: "degenerate square system",
		reason: "found by TestPropertyBackendsAgree: gonum solved the square standard form as a linear " +
			"system and called -9e-17 infeasible; the only point is x=0",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 1, 0)
			m.AddConstraint("a", []Term{{x, 1}}, EQ, 0)
			m.AddConstraint("b", []Term{{x, -5}}, GE, -3)
			return m
		},
		wantObj: 0, wantX: []float64{0},
	},
	{
		name:    "empty model",
		reason:  "no variables: trivially optimal with objective 0",
		build:   func() *Model { return NewModel(Maximize) },
		wantObj: 0, wantX: []float64{},
	},
	{
		name:   "empty model with a satisfied row",
		reason: "a row without variables is the constant 0",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddRange("r", nil, -1, 1)
			return m
		},
		wantObj: 0, wantX: []float64{}, wantDuals: []float64{0},
	},
	{
		name:   "empty model with an infeasible row",
		reason: "0 ∉ [1,2]",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddRange("r", nil, 1, 2)
			return m
		},
		wantErr: ErrInfeasible,
	},
	{
		name:   "terms cancelling to zero",
		reason: "x-x ≤ -1 is 0 ≤ -1",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, Inf, 1)
			m.AddConstraint("r", []Term{{x, 1}, {x, -1}}, LE, -1)
			return m
		},
		wantErr: ErrInfeasible,
	},
	{
		name:   "infeasible bounds against a row",
		reason: "x+y≥5 with x,y∈[0,1]",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, 1, 1)
			y := m.AddVar("y", 0, 1, 1)
			m.AddConstraint("r", []Term{{x, 1}, {y, 1}}, GE, 5)
			return m
		},
		wantErr: ErrInfeasible,
	},
	{
		name:   "infeasible rows",
		reason: "x+y≤1 and x+y≥2",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, Inf, 1)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("a", []Term{{x, 1}, {y, 1}}, LE, 1)
			m.AddConstraint("b", []Term{{x, 1}, {y, 1}}, GE, 2)
			return m
		},
		wantErr: ErrInfeasible,
	},
	{
		name:   "unbounded",
		reason: "max x+y with only x-y≤1",
		build: func() *Model {
			m := NewModel(Maximize)
			x := m.AddVar("x", 0, Inf, 1)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("r", []Term{{x, 1}, {y, -1}}, LE, 1)
			return m
		},
		wantErr: ErrUnbounded,
	},
	{
		name:   "unbounded free variable in no row",
		reason: "min x with x free and unconstrained",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddVar("x", -Inf, Inf, 1)
			y := m.AddVar("y", 0, Inf, 1)
			m.AddConstraint("r", []Term{{y, 1}}, GE, 1)
			return m
		},
		wantErr: ErrUnbounded,
	},
	{
		name:   "NaN coefficient",
		reason: "invalid input is reported by Solve",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 1, 1)
			m.AddConstraint("r", []Term{{x, math.NaN()}}, LE, 1)
			return m
		},
		wantErr: ErrInvalidModel,
	},
	{
		name:   "empty bounds",
		reason: "lower above upper",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddVar("x", 2, 1, 1)
			return m
		},
		wantErr: ErrInvalidModel,
	},
	{
		name:   "empty row range",
		reason: "lo above hi",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 1, 1)
			m.AddRange("r", []Term{{x, 1}}, 2, 1)
			return m
		},
		wantErr: ErrInvalidModel,
	},
	{
		name:   "unknown variable",
		reason: "a Var that the model never returned",
		build: func() *Model {
			m := NewModel(Minimize)
			m.AddVar("x", 0, 1, 1)
			m.AddConstraint("r", []Term{{Var(5), 1}}, LE, 1)
			return m
		},
		wantErr: ErrInvalidModel,
	},
	{
		name:   "infinite objective",
		reason: "SetObjective with +Inf",
		build: func() *Model {
			m := NewModel(Minimize)
			x := m.AddVar("x", 0, 1, 1)
			m.SetObjective(x, math.Inf(1))
			return m
		},
		wantErr: ErrInvalidModel,
	},
}

func TestSolveCases(t *testing.T) {
	for _, set := range variants() {
		b := set.Backend
		for _, tc := range lpCases {
			t.Run(fmt.Sprintf("%v-%v-presolve=%v/%s", b, set.Method, set.Presolve, tc.name), func(t *testing.T) {
				m := tc.build()
				got, err := Solve(context.Background(), m, &set)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Solve() error = %v, want %v (%s)", err, tc.wantErr, tc.reason)
				}
				if tc.wantErr != nil {
					return
				}
				if got.Status != Optimal || got.Backend != b {
					t.Errorf("Solve() status %v backend %v, want Optimal %v", got.Status, got.Backend, b)
				}
				if math.Abs(got.Objective-tc.wantObj) > testTol {
					t.Errorf("Solve() objective = %v, want %v (%s)", got.Objective, tc.wantObj, tc.reason)
				}
				if tc.wantX != nil {
					if diff := cmp.Diff(tc.wantX, got.X, cmpopts.EquateApprox(0, testTol)); diff != "" {
						t.Errorf("Solve() X mismatch (-want +got) (%s):\n%s", tc.reason, diff)
					}
				}
				if tc.wantDuals != nil && got.RowDuals != nil {
					if diff := cmp.Diff(tc.wantDuals, got.RowDuals, cmpopts.EquateApprox(0, testTol)); diff != "" {
						t.Errorf("Solve() RowDuals mismatch (-want +got), duals are ∂objective/∂rhs (%s):\n%s", tc.reason, diff)
					}
				}
				if got.MaxViolation > DefaultFeasibilityTol {
					t.Errorf("Solve() MaxViolation = %v", got.MaxViolation)
				}
			})
		}
	}
}

func TestSolveContext(t *testing.T) {
	m := lpCases[0].build()
	for _, b := range backends() {
		t.Run(fmt.Sprint(b), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := Solve(ctx, m, &Settings{Backend: b}); !errors.Is(err, context.Canceled) {
				t.Errorf("Solve(cancelled) error = %v, want context.Canceled", err)
			}
			ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			defer cancel()
			_, err := Solve(ctx, m, &Settings{Backend: b})
			if !errors.Is(err, ErrTimeLimit) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Solve(past deadline) error = %v, want ErrTimeLimit and context.DeadlineExceeded", err)
			}
		})
	}
}

func TestSolveInvalidSettings(t *testing.T) {
	m := lpCases[0].build()
	for _, s := range []Settings{
		{FeasibilityTol: -1},
		{FeasibilityTol: math.NaN()},
		{MaxIterations: -1},
		{Backend: Backend(9)},
		{Method: Method(9)},
		{DualPricing: DualPricing(9)}, // was taken, and read as Devex
	} {
		if _, err := Solve(context.Background(), m, &s); !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("Solve(%+v) error = %v, want ErrInvalidSettings", s, err)
		}
	}
	if _, err := Solve(context.Background(), nil, nil); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("Solve(nil model) error = %v, want ErrInvalidModel", err)
	}
}

func TestBackendAvailability(t *testing.T) {
	_, err := Solve(context.Background(), lpCases[0].build(), &Settings{Backend: CLP})
	if clpAvailable && err != nil {
		t.Errorf("Solve(CLP) error = %v with CLP compiled in", err)
	}
	if !clpAvailable && !errors.Is(err, ErrBackendUnavailable) {
		t.Errorf("Solve(CLP) error = %v without cgo, want ErrBackendUnavailable", err)
	}
}

// TestSetSense: a model's sense is Minimize unless set, Sense reports what
// SetSense set, and the solve follows it: x − y with x in [1, 3], y in
// [0, 2] and x + y ≤ 4 is -1 at its minimum (1, 2) and 3 at its maximum
// (3, 0).
func TestSetSense(t *testing.T) {
	var zero Model
	if zero.Sense() != Minimize {
		t.Errorf("zero Model's Sense() = %v, want Minimize", zero.Sense())
	}
	m := NewModel(Minimize)
	x := m.AddVar("x", 1, 3, 1)
	y := m.AddVar("y", 0, 2, -1)
	m.AddConstraint("cap", []Term{{x, 1}, {y, 1}}, LE, 4)
	for _, tc := range []struct {
		sense Sense
		obj   float64
		x     []float64
	}{
		{Minimize, -1, []float64{1, 2}},
		{Maximize, 3, []float64{3, 0}},
		{Minimize, -1, []float64{1, 2}},
	} {
		m.SetSense(tc.sense)
		if m.Sense() != tc.sense {
			t.Errorf("Sense() = %v after SetSense(%v)", m.Sense(), tc.sense)
		}
		for _, b := range backends() {
			sol, err := Solve(context.Background(), m, &Settings{Backend: b})
			if err != nil {
				t.Fatalf("%v, %v: %v", b, tc.sense, err)
			}
			if math.Abs(sol.Objective-tc.obj) > testTol || math.Abs(sol.X[0]-tc.x[0]) > testTol || math.Abs(sol.X[1]-tc.x[1]) > testTol {
				t.Errorf("%v, %v: objective %v at %v, want %v at %v", b, tc.sense, sol.Objective, sol.X, tc.obj, tc.x)
			}
		}
	}
}

// TestSetStart: start hints change where the pure-Go simplex starts, not
// the optimum it reaches, feasible hint or not, in every backend; a NaN
// hint is a malformed model.
func TestSetStart(t *testing.T) {
	build := func(hint []float64) *Model {
		m := NewModel(Maximize)
		x := m.AddVar("x", 0, 4, 3)
		y := m.AddVar("y", 0, Inf, 2)
		m.AddConstraint("a", []Term{{x, 1}, {y, 1}}, LE, 5)
		m.AddConstraint("b", []Term{{x, 1}, {y, 3}}, LE, 9)
		if hint != nil {
			m.SetStart(x, hint[0])
			m.SetStart(y, hint[1])
		}
		return m
	}
	for _, b := range backends() {
		for _, hint := range [][]float64{nil, {1, 1}, {4, 1}, {10, 10}, {-3, 0}} {
			sol, err := Solve(context.Background(), build(hint), &Settings{Backend: b})
			if err != nil || math.Abs(sol.Objective-14) > 1e-9 {
				t.Errorf("%v, start %v: objective %v (%v), want 14", b, hint, sol.Objective, err)
			}
		}
	}
	if _, err := Solve(context.Background(), build([]float64{math.NaN(), 0}), nil); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("NaN start: error %v, want ErrInvalidModel", err)
	}
}

// TestUnknownVariablePanicsNot: SetObjective and SetStart of a variable
// not of the model panicked (index out of range); they record a malformed
// input, as AddConstraint does, and Solve returns it.
func TestUnknownVariablePanicsNot(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *Model)
	}{
		{"objective past the end", func(m *Model) { m.SetObjective(Var(7), 1) }},
		{"objective of a negative variable", func(m *Model) { m.SetObjective(Var(-1), 1) }},
		{"start past the end", func(m *Model) { m.SetStart(Var(7), 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := lpCases[0].build()
			tc.set(m)
			if !errors.Is(m.Err(), ErrInvalidModel) {
				t.Fatalf("Err() = %v, want ErrInvalidModel", m.Err())
			}
			if _, err := Solve(context.Background(), m, nil); !errors.Is(err, ErrInvalidModel) {
				t.Errorf("Solve() error = %v, want ErrInvalidModel", err)
			}
		})
	}
}

// TestScalingLosesNothing: maximise x + y over [0, 1]² subject to
// a·x + y/a ≤ 1. For a of 1e200 and 1e300 the scaling took y's bound of 1,
// beside x's coefficient, below float64's range, and the pure-Go simplex
// reported the optimum 0 with y fixed at 0 (it is about 1). Such a model is
// refused now, and one the scaling keeps whole (1e150) still solves.
func TestScalingLosesNothing(t *testing.T) {
	build := func(a float64) *Model {
		m := NewModel(Maximize)
		x := m.AddVar("x", 0, 1, 1)
		y := m.AddVar("y", 0, 1, 1)
		m.AddConstraint("r", []Term{{x, a}, {y, 1 / a}}, LE, 1)
		return m
	}
	for _, a := range []float64{1e200, 1e300} {
		if sol, err := Solve(context.Background(), build(a), &Settings{Backend: PureGo}); !errors.Is(err, ErrInvalidModel) {
			t.Errorf("a = %g: Solve() = %+v, %v; want ErrInvalidModel", a, sol, err)
		}
	}
	sol, err := Solve(context.Background(), build(1e150), &Settings{Backend: PureGo})
	if err != nil || math.Abs(sol.Objective-1) > 1e-9 {
		t.Errorf("a = 1e150: Solve() = %+v, %v; want the optimum 1", sol, err)
	}
}
