package lp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// cancelLatency bounds the time from a cancel to Solve's return: CLP is
// asked after every simplex iteration whether to go on (clp_stop.cpp), and
// one iteration of the model below takes well under a millisecond.
const cancelLatency = 50 * time.Millisecond

// TestSolveCancelStopsCLP cancels CLP solves in flight. Before the stop
// handler, a solve ran to its end after a cancel: cooperative OEF returned
// 1.5 to 2.2 s late.
func TestSolveCancelStopsCLP(t *testing.T) {
	if !clpAvailable {
		t.Skip("CLP not compiled in")
	}
	m, _ := newGavelInstance(4096, 8, 1).maxMinModel(false)
	for _, s := range []Settings{{Backend: CLP}, {Backend: CLP, Presolve: true}, {Backend: CLP, Method: PrimalSimplex}} {
		t.Run(methodName(s), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var cancelled time.Time
			timer := time.AfterFunc(100*time.Millisecond, func() {
				cancelled = time.Now()
				cancel()
			})
			defer timer.Stop()
			_, err := Solve(ctx, m, &s)
			back := time.Now()
			if cancelled.IsZero() {
				t.Skipf("solved in under 100 ms (error %v): nothing to cancel", err)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Solve() error = %v, want context.Canceled", err)
			}
			d := back.Sub(cancelled)
			t.Logf("returned %v after the cancel", d)
			if d > cancelLatency && !raceEnabled {
				t.Errorf("Solve() returned %v after the cancel, want at most %v", d, cancelLatency)
			}
		})
	}
}

// TestIncrementalCancel: a warm model stopped by a cancel solves again
// afterwards.
func TestIncrementalCancel(t *testing.T) {
	if !clpAvailable {
		t.Skip("CLP not compiled in")
	}
	m, _ := newGavelInstance(2048, 4, 2).maxMinModel(false)
	in, err := NewIncremental(m, &Settings{Backend: CLP})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := in.Solve(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Solve() error = %v, want context.DeadlineExceeded or none", err)
	}
	if _, err := in.Solve(context.Background()); err != nil {
		t.Fatalf("Solve() after a stopped solve: %v", err)
	}
}

func methodName(s Settings) string {
	name := map[Method]string{Auto: "dual", PrimalSimplex: "primal", Barrier: "barrier"}[s.Method]
	if s.Presolve {
		name += "+presolve"
	}
	return name
}
