package sim

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// TestRunPhasesByHand follows a successive-halving app on one server of 4
// GPUs under FIFO with 10-second rounds: phase 0's two trials (1 GPU, 15
// and 5 steps at 1/s) finish at 15 and 5; phase 1's trial (2 GPUs, 20 steps
// at 2/s) arrives at 15, when the slower of them finishes, is admitted at
// round 2 (20 s) and finishes at 30. Its demand is its larger phase's, 2.
func TestRunPhasesByHand(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 4})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "t0", Owner: "sh", Gang: 1, Rates: []float64{1}}, Steps: 15},
		{Job: alloc.Job{ID: "t1", Owner: "sh", Gang: 1, Rates: []float64{1}}, Steps: 5},
		{Job: alloc.Job{ID: "t0-p1", Owner: "sh", Gang: 2, Rates: []float64{2}}, Steps: 20, Phase: 1},
	}}
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := map[alloc.JobID][3]float64{"t0": {0, 0, 15}, "t1": {0, 0, 5}, "t0-p1": {15, 20, 30}} // arrival, start, finish
	for _, j := range res.Jobs {
		if got := [3]float64{j.Arrival, j.Start, j.Finish}; got != want[j.ID] {
			t.Errorf("job %s: arrival, start, finish = %v, want %v", j.ID, got, want[j.ID])
		}
	}
	// B = 15 + 5 + 20·2/2 = 40 GPU-seconds over min(4, 2) GPUs; the app is
	// alone (N_avg = 1) for its 30 s.
	wantApp := []AppResult{{App: "sh", Jobs: 3, Arrival: 0, Finish: 30, Work: 40, Demand: 2, Contention: 1, Isolated: 20, JCT: 30, Rho: 1.5, GPUSeconds: 40}}
	if diff := cmp.Diff(wantApp, res.Apps, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("Run() apps mismatch (-want +got):\n%s", diff)
	}
	if _, err := Ideal(context.Background(), w, c, equalShare{}, nil); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("Ideal() of phased jobs: error = %v, want ErrValue", err)
	}
	w.Jobs[2].Phase = -1
	var ie *gpufair.InputError
	if _, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), nil); !errors.As(err, &ie) || ie.Field != "Jobs.Phase" {
		t.Errorf("negative phase: error = %v, want an InputError on Jobs.Phase", err)
	}
}

// arrivals is a fifo that records when each job's Arrived event says it
// arrived, and the round that reported it.
type arrivals struct {
	*fifo
	at, seen map[alloc.JobID]float64
	fresh    []alloc.JobID // arrived since the last decision
}

func (a *arrivals) Apply(ev ...round.Event) error {
	for _, e := range ev {
		if e.Kind == round.Arrived {
			a.at[e.Job.ID] = e.Time
			a.fresh = append(a.fresh, e.Job.ID)
		}
	}
	return a.fifo.Apply(ev...)
}

func (a *arrivals) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	for _, id := range a.fresh {
		a.seen[id] = now
	}
	a.fresh = a.fresh[:0]
	return a.fifo.Decide(ctx, now)
}

// TestRunPhaseBarrier checks the barrier on random instances whose jobs
// belong to a few owners in up to three phases each: every job finishes;
// no job of an owner's phase arrives, is reported or starts before every
// job of its lower phases has finished, and it arrives exactly when the
// last of them finishes (or at its own Arrival, if later); an app's demand
// is the largest sum of gangs over its phases, never the sum over all of
// them.
func TestRunPhaseBarrier(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance().Draw(t, "instance")
		for i := range in.w.Jobs {
			j := &in.w.Jobs[i]
			j.Owner = rapid.SampledFrom([]alloc.TenantID{"", "a", "b"}).Draw(t, "owner")
			j.Phase = rapid.IntRange(0, 2).Draw(t, "phase")
		}
		L := rapid.Float64Range(1, 30).Draw(t, "round")
		s := &arrivals{fifo: newFIFO(in.c, in.w.Types, L), at: map[alloc.JobID]float64{}, seen: map[alloc.JobID]float64{}}
		res, err := Run(context.Background(), in.w, in.c, s, &Settings{Round: L, Horizon: 1e6})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[alloc.JobID]*Job{}
		for i := range in.w.Jobs {
			byID[in.w.Jobs[i].ID] = &in.w.Jobs[i]
		}
		type key struct {
			owner alloc.TenantID
			phase int
		}
		demand := map[key]int{}
		for _, j := range res.Jobs {
			if !j.Finished() {
				t.Fatalf("job %s did not finish", j.ID)
			}
			demand[key{j.Owner, j.Phase}] += j.Gang
			lift := byID[j.ID].Arrival // the latest finish of a lower phase, or its own arrival
			for _, x := range res.Jobs {
				if x.Owner == j.Owner && x.Phase < j.Phase {
					lift = math.Max(lift, x.Finish)
				}
			}
			if j.Owner == alloc.TenantID(j.ID) {
				lift = byID[j.ID].Arrival // a job of its own: no barrier
			}
			if j.Arrival != lift || s.at[j.ID] != lift || s.seen[j.ID] < lift || j.Start < lift {
				t.Fatalf("job %s (owner %s, phase %d): arrival %v, reported at %v in the round at %v, start %v; its barrier lifts at %v",
					j.ID, j.Owner, j.Phase, j.Arrival, s.at[j.ID], s.seen[j.ID], j.Start, lift)
			}
		}
		for _, a := range res.Apps {
			most := 0
			for k, d := range demand {
				if k.owner == a.App {
					most = max(most, d)
				}
			}
			if a.Demand != most {
				t.Fatalf("app %s: demand %d, want the largest phase's, %d", a.App, a.Demand, most)
			}
		}
	})
}
