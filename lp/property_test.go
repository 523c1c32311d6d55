package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// randomLP is a generated LP with a known feasible point x0.
type randomLP struct {
	m  *Model
	x0 []float64
}

// genFeasibleLP builds a bounded LP around a point x0 with small integer
// data: every variable is boxed around x0, and every row's range contains
// a·x0, so x0 is feasible and the box bounds the objective. Rows are
// LE, GE, EQ or ranged, with repeated and zero coefficients.
func genFeasibleLP() *rapid.Generator[randomLP] {
	return rapid.Custom(func(t *rapid.T) randomLP {
		n := rapid.IntRange(1, 7).Draw(t, "vars")
		r := rapid.IntRange(0, 7).Draw(t, "rows")
		m := NewModel(Sense(rapid.IntRange(0, 1).Draw(t, "sense")))
		x0 := make([]float64, n)
		for j := range n {
			x0[j] = float64(rapid.IntRange(-5, 5).Draw(t, "x0"))
			lo := x0[j] - float64(rapid.IntRange(0, 4).Draw(t, "below"))
			hi := x0[j] + float64(rapid.IntRange(0, 4).Draw(t, "above"))
			m.AddVar(fmt.Sprint("x", j), lo, hi, float64(rapid.IntRange(-5, 5).Draw(t, "c")))
		}
		for i := range r {
			k := rapid.IntRange(1, n+1).Draw(t, "terms")
			terms := make([]Term, k)
			var act float64
			for p := range terms {
				v := Var(rapid.IntRange(0, n-1).Draw(t, "var"))
				c := float64(rapid.IntRange(-4, 4).Draw(t, "a"))
				terms[p] = Term{v, c}
				act += c * x0[v]
			}
			name := fmt.Sprint("r", i)
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				m.AddConstraint(name, terms, LE, act+float64(rapid.IntRange(0, 3).Draw(t, "slack")))
			case 1:
				m.AddConstraint(name, terms, GE, act-float64(rapid.IntRange(0, 3).Draw(t, "slack")))
			case 2:
				m.AddConstraint(name, terms, EQ, act)
			default:
				m.AddRange(name, terms, act-float64(rapid.IntRange(0, 3).Draw(t, "below")), act+float64(rapid.IntRange(0, 3).Draw(t, "above")))
			}
		}
		return randomLP{m: m, x0: x0}
	})
}

// boxMax returns the largest value of Σ terms over the variables' boxes.
func boxMax(m *Model, terms []Term) float64 {
	var s float64
	for _, t := range terms {
		s += math.Max(t.Coef*m.lower[t.Var], t.Coef*m.upper[t.Var])
	}
	return s
}

// objTol is the tolerance on objectives of generated LPs, whose data are
// small integers: |a-b| ≤ objTol·max(1, |a|).
const objTol = 1e-6

// TestPropertyBackendsAgree checks that every backend (and the pure-Go
// simplex with each dual pricing) solves every feasible bounded LP, that its
// optimum is no worse than the known feasible point, and that they all
// agree on the optimal objective.
func TestPropertyBackendsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		var ref float64
		for i, set := range solvers() {
			b := set.Backend
			sol, err := Solve(context.Background(), lp.m, &set)
			if err != nil {
				t.Fatalf("%v: Solve() error = %v on a feasible bounded LP", b, err)
			}
			var at0 float64
			for j, c := range lp.m.obj {
				at0 += c * lp.x0[j]
			}
			worse := sol.Objective - at0
			if lp.m.sense == Maximize {
				worse = -worse
			}
			if worse > objTol*math.Max(1, math.Abs(at0)) {
				t.Fatalf("%v: objective %v is worse than %v at the feasible point", b, sol.Objective, at0)
			}
			if i == 0 {
				ref = sol.Objective
			} else if math.Abs(sol.Objective-ref) > objTol*math.Max(1, math.Abs(ref)) {
				t.Fatalf("%v (%v pricing): objective %v, %v gave %v", b, set.DualPricing, sol.Objective, backends()[0], ref)
			}
		}
	})
}

// TestPropertyInfeasibleDetected adds to a feasible LP a row that no point
// of the variables' boxes satisfies; every backend must report it.
func TestPropertyInfeasibleDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		n := lp.m.NumVars()
		var terms []Term
		for j := range n {
			if c := rapid.IntRange(-3, 3).Draw(t, "a"); c != 0 {
				terms = append(terms, Term{Var(j), float64(c)})
			}
		}
		if len(terms) == 0 {
			terms = []Term{{0, 1}}
		}
		lp.m.AddConstraint("impossible", terms, GE, boxMax(lp.m, terms)+float64(rapid.IntRange(1, 3).Draw(t, "gap")))
		for _, b := range backends() {
			if _, err := Solve(context.Background(), lp.m, &Settings{Backend: b}); !errors.Is(err, ErrInfeasible) {
				t.Fatalf("%v: Solve() error = %v, want ErrInfeasible", b, err)
			}
		}
	})
}

// dualTol is the tolerance of the optimality certificate check below.
const dualTol = 1e-7

// TestPropertyDualCertificate checks the duals a backend reports: with the
// reduced costs d = c − Aᵀy they must satisfy complementary slackness with
// the right signs, which with primal feasibility proves optimality. The
// convention is y_i = ∂objective/∂rhs_i, so when minimising y_i > 0 only on
// a row at its lower side and d_j > 0 only at a lower bound, and the other
// way round when maximising.
func TestPropertyDualCertificate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		m := lp.m
		for _, b := range backends() {
			for _, method := range []Method{DualSimplex, PrimalSimplex, Barrier} {
				sol, err := Solve(context.Background(), m, &Settings{Backend: b, Method: method})
				if err != nil {
					t.Fatalf("%v %v: Solve() error = %v", b, method, err)
				}
				if sol.RowDuals == nil {
					continue
				}
				sign := 1.0
				if m.sense == Maximize {
					sign = -1
				}
				at := func(v, side float64) bool { return math.Abs(v-side) <= dualTol*math.Max(1, math.Abs(side)) }
				d := append([]float64(nil), m.obj...)
				for i, row := range m.rows {
					var act float64
					for _, tm := range row {
						act += tm.Coef * sol.X[tm.Var]
						d[tm.Var] -= tm.Coef * sol.RowDuals[i]
					}
					y := sign * sol.RowDuals[i]
					if (y > dualTol && !at(act, m.rowLo[i])) || (y < -dualTol && !at(act, m.rowHi[i])) {
						t.Fatalf("%v %v: row %d has dual %v but activity %v in [%v, %v]", b, method, i, sol.RowDuals[i], act, m.rowLo[i], m.rowHi[i])
					}
				}
				for j, dj := range d {
					dj *= sign
					if (dj > dualTol && !at(sol.X[j], m.lower[j])) || (dj < -dualTol && !at(sol.X[j], m.upper[j])) {
						t.Fatalf("%v %v: variable %d has reduced cost %v but value %v in [%v, %v]", b, method, j, d[j], sol.X[j], m.lower[j], m.upper[j])
					}
				}
			}
		}
	})
}

// GoString prints the LP for rapid's failure reports.
func (r randomLP) GoString() string {
	m := r.m
	s := fmt.Sprintf("%v x0=%v\n obj %v\n", m.sense, r.x0, m.obj)
	for j := range m.obj {
		s += fmt.Sprintf(" %v ≤ x%d ≤ %v\n", m.lower[j], j, m.upper[j])
	}
	for i, row := range m.rows {
		s += fmt.Sprintf(" %v ≤ %v ≤ %v\n", m.rowLo[i], row, m.rowHi[i])
	}
	return s
}
