package lp

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzSolve builds small models from arbitrary numbers (any float64 bit
// pattern now and then) and solves them with the default backend. Solve
// must never panic or kill the process (CLP aborted on an objective of
// 1e25 and segfaulted in its barrier on a 1e24 coefficient span); it must
// return a typed error or a solution within its bounds and rows. Run
// longer with make fuzz.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{1, 2, 16, 32, 0, 17, 33, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(append([]byte{0, 1, 0}, fuzzdata.Bytes(1e30, 1e-12, 1e12, 1e300)...))
	f.Add([]byte{3, 3, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		m := NewModel(Sense(r.Int(2)))
		nv := 1 + r.Int(3)
		vars := make([]Var, nv)
		for j := range vars {
			lo, hi := 0.0, Inf
			switch r.Int(4) {
			case 1:
				lo = -Inf
			case 2:
				hi = r.Number()
			case 3:
				lo, hi = -r.Number(), r.Number()
			}
			vars[j] = m.AddVar("x", lo, hi, r.Number()-r.Number())
		}
		for range r.Int(4) {
			terms := make([]Term, nv)
			for j, v := range vars {
				terms[j] = Term{Var: v, Coef: r.Number() - r.Number()}
			}
			m.AddConstraint("r", terms, Op(r.Int(3)), r.Number())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sol, err := Solve(ctx, m, nil)
		if err != nil {
			for _, e := range []error{ErrInvalidModel, ErrInfeasible, ErrUnbounded, ErrNumerical, ErrIterationLimit, ErrTimeLimit, ErrViolation} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("Solve() error %v wraps no lp sentinel", err)
		}
		if sol.MaxViolation > DefaultFeasibilityTol || math.IsNaN(sol.Objective) {
			t.Fatalf("Solve() = violation %v, objective %v with a nil error", sol.MaxViolation, sol.Objective)
		}
	})
}
