package baseline_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/internal/roundtest"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// Gavel's FIFO baseline: each job in arrival order takes a GPU type drawn
// among those with room; the third job fits nowhere and waits.
func ExampleFIFO() {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k80", Type: "k80", GPUs: 2}, {Name: "v100", Type: "v100", GPUs: 2}}}
	types := []topology.GPUType{"k80", "v100"}
	s, err := baseline.NewFIFO(c, types, &baseline.FIFOSettings{Seed: 1})
	if err != nil {
		panic(err)
	}
	for i, gang := range []int{2, 2, 1} {
		j := alloc.Job{ID: alloc.JobID(fmt.Sprint("job", i)), Gang: gang, Weight: 1, Rates: []float64{1, 4}}
		if err := s.Apply(round.Arrive(float64(i), j, 1000)); err != nil {
			panic(err)
		}
	}
	d, err := s.Decide(context.Background(), 10)
	if err != nil {
		panic(err)
	}
	for _, p := range d.Placements {
		fmt.Println(p.Jobs[0], "on", len(p.GPUs), p.Type)
	}
	// Output:
	// job0 on 2 k80
	// job1 on 2 v100
}

// TestFIFOStateMachine drives Gavel's FIFO baseline through random
// arrivals, departures, failures and snapshots, and checks the contract,
// that a job holding healthy GPUs into a decision keeps exactly them, and
// that no job starts while an earlier one waits.
func TestFIFOStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		snap := rapid.Bool().Draw(t, "snapshots")
		seed := rapid.Uint64().Draw(t, "seed")
		m := roundtest.New(t, testRound, snap, func(c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewFIFO(c, ty, &baseline.FIFOSettings{Round: testRound, Seed: seed})
		})
		decide := func(t *rapid.T) {
			held := map[alloc.JobID]round.Placement{}
			for id := range m.Jobs {
				if p, ok := m.S.Ledger().Holding(id); ok && !slices.ContainsFunc(p.GPUs, func(g topology.GPU) bool { return m.Failed[g] }) {
					held[id] = p
				}
			}
			m.Decide(t, func(now float64, d *round.Decision) {
				if m.Last == nil || m.Last.End < now {
					clear(held) // the lease ended before this decision
				}
				placed := m.CheckPlacements(t, d)
				for id, p := range held {
					if _, ok := m.Jobs[id]; !ok {
						continue
					}
					q := slices.IndexFunc(d.Placements, func(q round.Placement) bool { return q.Jobs[0] == id })
					if q < 0 || !d.Placements[q].Renewed {
						t.Fatalf("job %s held %v and was preempted", id, p.GPUs)
					}
				}
				waiting := false
				for _, j := range m.S.Ledger().Jobs() {
					_, runs := placed.Type[j.ID]
					_, before := held[j.ID]
					if runs && !before && waiting {
						t.Fatalf("job %s started while an earlier job waits", j.ID)
					}
					waiting = waiting || !runs
				}
			})
		}
		t.Repeat(map[string]func(*rapid.T){
			"arrive": func(t *rapid.T) { m.Arrive(t) }, "depart": m.Depart, "progress": m.Progress,
			"fail": m.Fail, "repair": m.Repair, "decide": decide, "badInput": m.BadInput,
			"": m.Check,
		})
	})
}
