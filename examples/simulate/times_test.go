package main

import (
	"context"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
)

// TestHugeTimes: every mechanism decides at times where a round's length
// is below the clock's resolution, with a job that arrived then or at 0.
// From 1e20 s on, now + six minutes was now, and the ledger refused every
// decision as a lease that ended where it began (round.LeaseEnd); Themis'
// arbiter, counting in time.Duration, saw 6.95e10 s as a time in 1677.
func TestHugeTimes(t *testing.T) {
	fx := newRestoreFixture(t)
	for _, at := range []float64{6.95e10, 1e20, 1e300, 1.7e308} {
		// Each decision a little later: the caller's clock must move on.
		step := max(fx.e.round, at*1e-15)
		for _, m := range fx.ms {
			for _, arrival := range []float64{0, at} {
				s, err := m.make(fx.e)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Apply(round.Arrive(arrival, alloc.Job{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}}, 1000)); err != nil {
					t.Fatalf("%s at %v: %v", m.name, arrival, err)
				}
				decideFrom(t, m.name, s, at, step)
			}
		}
	}
}

// decideFrom takes three decisions, step apart from at.
func decideFrom(t *testing.T, name string, s round.Scheduler, at, step float64) {
	t.Helper()
	for i := range 3 {
		d, err := s.Decide(context.Background(), at+float64(i)*step)
		if err != nil {
			t.Fatalf("%s: decision %d from %v: %v", name, i, at, err)
		}
		if !(d.End > d.Start) {
			t.Fatalf("%s: lease [%v, %v)", name, d.Start, d.End)
		}
	}
}
