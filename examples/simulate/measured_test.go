package main

import (
	"context"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
)

// TestMeasuredOffHeldType: a measurement that gives a running job no rate
// on the type it holds moves it, in every mechanism. Gavel's FIFO baseline
// kept a job on its GPUs until it finished, the Gavel scheduler's
// preemption budget kept a job (and its co-located partner) on its type,
// and Gandiva_fair kept the job scheduled on its type: each placed a job
// where the ledger refuses it.
func TestMeasuredOffHeldType(t *testing.T) {
	fx := newRestoreFixture(t)
	ctx := context.Background()
	for _, m := range fx.ms {
		t.Run(m.name, func(t *testing.T) {
			s, err := m.make(fx.e)
			if err != nil {
				t.Fatal(err)
			}
			var evs []round.Event
			for _, j := range fx.e.w.Jobs {
				aj := j.Job
				aj.Weight = max(aj.Weight, 1)
				evs = append(evs, round.Arrive(0, aj, j.Steps))
			}
			if err := s.Apply(evs...); err != nil {
				t.Fatal(err)
			}
			d, err := s.Decide(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			rates := map[alloc.JobID][]float64{}
			for _, j := range fx.e.w.Jobs {
				rates[j.ID] = j.Rates
			}
			var moved []round.Event
			off := map[alloc.JobID]int{}
			for _, p := range d.Placements {
				k := slices.Index(fx.e.w.Types, p.Type)
				for _, id := range p.Jobs {
					r := slices.Clone(rates[id])
					if r[k] = 0; slices.Max(r) > 0 {
						moved = append(moved, round.Measure(fx.e.round/2, id, r))
						off[id] = k
					}
				}
			}
			if len(moved) == 0 {
				t.Fatal("the fixture placed no job that runs on a second type: nothing to measure off")
			}
			if err := s.Apply(moved...); err != nil {
				t.Fatal(err)
			}
			// Several rounds: a time-sliced job runs again on its type
			// only after the others have had their turn.
			for r := 1; r <= 4; r++ {
				if d, err = s.Decide(ctx, float64(r)*fx.e.round); err != nil {
					t.Fatalf("Decide %d after %d jobs were measured off their type: %v", r, len(moved), err)
				}
				for _, p := range d.Placements {
					for _, id := range p.Jobs {
						if k, ok := off[id]; ok && p.Type == fx.e.w.Types[k] {
							t.Errorf("job %s placed on %s, where it was measured at 0", id, p.Type)
						}
					}
				}
			}
		})
	}
}
