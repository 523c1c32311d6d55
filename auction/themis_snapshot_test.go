package auction_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// themisScript drives a Themis scheduler round by round: apps of one to
// three jobs arrive over time, jobs report the work their placements did
// and depart when done, and a GPU fails and is repaired. Its events depend
// only on the decisions, so two schedulers that decide alike see the same
// events.
type themisScript struct {
	done map[alloc.JobID]float64
	work map[alloc.JobID]float64
	left map[alloc.JobID]bool // in the system
}

const scriptRound = 360.0

// events returns the events after round q's decision d (q = −1 and nil
// before the first), at the time of round q+1's.
func (sc *themisScript) events(q int, d *round.Decision) []round.Event {
	end := float64(q+1) * scriptRound
	var ev []round.Event
	if d != nil {
		for _, p := range d.Placements {
			id := p.Jobs[0]
			sc.done[id] = min(sc.done[id]+(d.End-d.Start)*float64(len(p.GPUs)), sc.work[id])
			ev = append(ev, round.Progress(d.End, id, sc.done[id]))
		}
		for _, id := range slices.Sorted(func(yield func(alloc.JobID) bool) {
			for id := range sc.left {
				if !yield(id) {
					return
				}
			}
		}) {
			if sc.done[id] >= sc.work[id] {
				ev = append(ev, round.Depart(d.End, id))
				delete(sc.left, id)
			}
		}
	}
	if q%3 == 0 && q < 18 {
		app := alloc.TenantID(fmt.Sprint("app", q/3))
		for i := range 1 + q%2 + (q/3)%2 {
			id := alloc.JobID(fmt.Sprintf("%s-%d", app, i))
			gang := 1 << ((q + i) % 3)
			sc.work[id], sc.left[id] = float64(1800*(1+i+q%4))*float64(gang), true
			ev = append(ev, round.Arrive(end, alloc.Job{ID: id, Owner: app, Gang: gang, Weight: 1, Rates: []float64{1, 3}, Elastic: i == 1}, sc.work[id]))
		}
	}
	switch q {
	case 6:
		ev = append(ev, round.Fail(end, topology.GPU{Server: 2, Slot: 1}))
	case 12:
		ev = append(ev, round.Repair(end, topology.GPU{Server: 2, Slot: 1}))
	}
	return ev
}

// TestThemisSnapshotRestore snapshots Themis before each round of a
// script, restores the snapshot into a fresh scheduler, and runs both on:
// they decide alike round after round (the arbiter's random draws
// included). A restored snapshot is the one it was taken from, byte for
// byte.
func TestThemisSnapshotRestore(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 4}, {Name: "k80-1", Type: "k80", GPUs: 4}, {Name: "v100-0", Type: "v100", GPUs: 4},
	}}
	types := []topology.GPUType{"k80", "v100"}
	set := &auction.ThemisSettings{Arbiter: auction.ArbiterSettings{Filter: 0.5, Patience: 2}}
	newThemis := func() *auction.Themis {
		s, err := auction.NewThemis(c, types, set, rand.NewPCG(3, 4))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	const rounds = 24
	for from := range rounds {
		live, sc := newThemis(), &themisScript{done: map[alloc.JobID]float64{}, work: map[alloc.JobID]float64{}, left: map[alloc.JobID]bool{}}
		var restored *auction.Themis
		var d *round.Decision
		for q := range rounds {
			ev := sc.events(q-1, d)
			for _, s := range []*auction.Themis{live, restored} {
				if s != nil {
					if err := s.Apply(ev...); err != nil {
						t.Fatalf("round %d: %v", q, err)
					}
				}
			}
			if q == from {
				snap, err := live.Snapshot()
				if err != nil {
					t.Fatalf("round %d: Snapshot: %v", q, err)
				}
				restored = newThemis()
				if err := restored.Restore(snap); err != nil {
					t.Fatalf("round %d: Restore: %v", q, err)
				}
				again, err := restored.Snapshot()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(snap), string(again)); diff != "" {
					t.Fatalf("round %d: the restored scheduler's snapshot differs (-taken +restored):\n%s", q, diff)
				}
			}
			var err error
			if d, err = live.Decide(ctx, float64(q)*scriptRound); err != nil {
				t.Fatalf("round %d: %v", q, err)
			}
			if restored != nil {
				d2, err := restored.Decide(ctx, float64(q)*scriptRound)
				if err != nil {
					t.Fatalf("round %d, restored at %d: %v", q, from, err)
				}
				if diff := cmp.Diff(d, d2); diff != "" {
					t.Fatalf("round %d, restored at %d: decisions differ (-live +restored):\n%s", q, from, diff)
				}
			}
		}
	}
}

// TestThemisRestoreRefusesInconsistentState edits a snapshot as a
// corrupted or hand-edited file would be: Restore refuses each with an
// error wrapping gpufair.ErrSnapshot and leaves the scheduler as it was.
func TestThemisRestoreRefusesInconsistentState(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: 4}}}
	s, err := auction.NewThemis(c, nil, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "x", Owner: "app", Gang: 2, Weight: 1, Rates: []float64{1}}, 1e4),
		round.Fail(0, topology.GPU{Server: 0, Slot: 3})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"unknown job in an app", `"apps":{"app":{"jobs":["x"]`, `"apps":{"app":{"jobs":["y"]`},
		{"app not joined with jobs", `"joined":true`, `"joined":false`},
		{"lease to an unknown app", `"Slot":1},"lease":{"app":"app"`, `"Slot":1},"lease":{"app":"other"`},
		{"lease ended", `"Slot":1},"lease":{"app":"app","kind":0,"start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:10:00Z"`, `"Slot":1},"lease":{"app":"app","kind":0,"start":"1970-01-01T00:00:00Z","end":"1970-01-01T00:00:00Z"`},
		{"slot outside the cluster", `"slots":[{"gpu":{"Server":0,"Slot":0}`, `"slots":[{"gpu":{"Server":0,"Slot":9}`},
		{"failed GPU the ledger has in service", `"failed":true`, `"failed":false`},
		{"grant kind", `"Slot":1},"lease":{"app":"app","kind":0`, `"Slot":1},"lease":{"app":"app","kind":7`},
		{"best holding", `"best":[2]`, `"best":[5]`},
		{"rho", `"rho":null`, `"rho":-1`},
		{"negative hunger", `"hungry":0`, `"hungry":-1`},
		{"random source", `"source":"`, `"source":"AAAA`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := []byte(replaceOnce(t, string(snap), tc.from, tc.to))
			if err := s.Restore(bad); !errors.Is(err, gpufair.ErrSnapshot) {
				t.Fatalf("Restore: %v, want an error wrapping ErrSnapshot", err)
			}
			after, err := s.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(snap), string(after)); diff != "" {
				t.Fatalf("a refused Restore changed the state (-before +after):\n%s", diff)
			}
		})
	}
}

// replaceOnce replaces the one occurrence of from in s by to.
func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	i := indexOnce(s, from)
	if i < 0 {
		t.Fatalf("%q occurs other than once in the snapshot:\n%s", from, s)
	}
	return s[:i] + to + s[i+len(from):]
}

func indexOnce(s, sub string) int {
	first := -1
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			if first >= 0 {
				return -1
			}
			first = i
		}
	}
	return first
}
