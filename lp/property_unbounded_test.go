package lp

import (
	"context"
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyUnboundedDetected adds to a feasible LP a column z ≥ 0 that
// improves the objective and enters rows only where growing it never breaks
// them (with a non-positive coefficient in a row bounded only above, a
// non-negative one in a row bounded only below): x0 with z = 0 stays
// feasible and z → ∞ is an improving ray, so every backend must report
// ErrUnbounded.
func TestPropertyUnboundedDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lp := genFeasibleLP().Draw(t, "lp")
		m := lp.m
		gain := float64(rapid.IntRange(1, 5).Draw(t, "gain"))
		if m.sense == Minimize {
			gain = -gain
		}
		z := m.AddVar("z", 0, Inf, gain)
		for i := range m.rows {
			d := float64(rapid.IntRange(0, 3).Draw(t, "d"))
			switch {
			case math.IsInf(m.rowLo[i], -1) && !math.IsInf(m.rowHi[i], 1):
				d = -d
			case math.IsInf(m.rowHi[i], 1) && !math.IsInf(m.rowLo[i], -1):
			default:
				d = 0
			}
			if d != 0 {
				m.rows[i] = append(m.rows[i], Term{z, d})
			}
		}
		for _, b := range backends() {
			if _, err := Solve(context.Background(), m, &Settings{Backend: b}); !errors.Is(err, ErrUnbounded) {
				t.Fatalf("%v: Solve() error = %v, want ErrUnbounded", b, err)
			}
		}
	})
}
