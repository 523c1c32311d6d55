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

// TestWideWorkEveryMechanism: every mechanism decides over work far apart
// and progress far past the work, each a case FuzzEvents found failing
// every decision: unknown work (0) beside 1e-3 steps (min-cost with SLOs
// was given +Inf steps, makespan broke its rows), 6e116 steps beside 1e3
// (makespan's LP too wide), 1e300 steps at 3e-12 a second (overflow), and
// 6.4e119 steps done of 49,000 (finish-time fairness broke a time row).
func TestWideWorkEveryMechanism(t *testing.T) {
	fx := newRestoreFixture(t)
	job := func(id string, rate float64) alloc.Job {
		return alloc.Job{ID: alloc.JobID(id), Gang: 1, Weight: 1, Rates: []float64{rate, 2 * rate, 3 * rate}}
	}
	for name, evs := range map[string][]round.Event{
		"unknown beside 1e-3": {round.Arrive(0, job("a", 1), 0), round.Arrive(0, job("b", 1), 1e-3)},
		"6e116 beside 1e3":    {round.Arrive(0, job("a", 1), 6e116), round.Arrive(0, job("b", 1), 1e3)},
		"1e300 at 3e-12":      {round.Arrive(0, job("a", 1e-12), 1e300), round.Arrive(0, job("b", 1e-12), 1)},
		"progress past work":  {round.Arrive(0, job("a", 1), 49000), round.Progress(0, "a", 6.4e119), round.Arrive(0, job("b", 1), 1e3)},
	} {
		for _, m := range fx.ms {
			s, err := m.make(fx.e)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(evs...); err != nil {
				t.Fatalf("%s, %s: %v", name, m.name, err)
			}
			decideFrom(t, name+", "+m.name, s, fx.e.round, fx.e.round)
		}
	}
}
