package stride_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// readjustErr returns the error of stride.Readjust.
func readjustErr(gpus float64, tickets, demand []float64) error {
	_, _, err := stride.Readjust(gpus, tickets, demand)
	return err
}

// fromAllocationErr returns the error of stride.FromAllocation with one
// 1-GPU job "x".
func fromAllocationErr(a *alloc.Allocation) error {
	_, err := stride.FromAllocation([]alloc.Job{{ID: "x", Owner: "u", Gang: 1, Weight: 1}}, a)
	return err
}

func TestBadInput(t *testing.T) {
	s, _ := stride.NewScheduler(4)
	f, _ := stride.NewFair(servers(2, 4, "v100"), &stride.Settings{Rank: []topology.GPUType{"tpu", "v100"}})
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 1})
	split, _ := stride.NewSplit(servers(2, 4, "v100"))
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"job larger than the server", s.Add(alloc.Job{ID: "x", Gang: 5, Weight: 1}), gpufair.ErrTooLarge},
		{"zero tickets", s.Add(alloc.Job{ID: "x", Gang: 1, Weight: 0}), gpufair.ErrValue},
		{"NaN tickets", s.Add(alloc.Job{ID: "x", Gang: 1, Weight: math.NaN()}), gpufair.ErrValue},
		{"infinite tickets", s.Add(alloc.Job{ID: "x", Gang: 1, Weight: math.Inf(1)}), gpufair.ErrValue},
		{"zero gang", s.Add(alloc.Job{ID: "x", Gang: 0, Weight: 1}), gpufair.ErrValue},
		{"tickets whose stride overflows", s.Add(alloc.Job{ID: "x", Gang: 1, Weight: 1e-320}), gpufair.ErrValue},
		{"stride above 1e250", s.Add(alloc.Job{ID: "x", Gang: 2, Weight: 1e-250}), gpufair.ErrValue},
		{"large job's stride above 1e250", split.AddLarge(alloc.Job{ID: "L", Gang: 8, Weight: 1e-250}, []stride.Part{{Server: 0, GPUs: 4}, {Server: 1, GPUs: 4}}), gpufair.ErrValue},
		{"tickets set with a stride above 1e250", func() error {
			if err := split.AddSmall(alloc.Job{ID: "s", Gang: 2, Weight: 1}, 0); err != nil {
				return err
			}
			return split.SetWeight("s", 1e-250)
		}(), gpufair.ErrValue},
		{"tenant weight below 1e-200", f.AddTenant(alloc.Tenant{ID: "t", Weight: 1e-201}), gpufair.ErrValue},
		{"no server GPUs", func() error { _, err := stride.NewScheduler(0); return err }(), gpufair.ErrValue},
		{"job larger than the cluster", func() error {
			_, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 9})
			return err
		}(), gpufair.ErrTooLarge},
		{"unknown GPU type", func() error {
			_, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 1, Type: "tpu"})
			return err
		}(), gpufair.ErrUnknownType},
		{"unknown owner", func() error {
			_, err := f.Submit(stride.Submission{ID: "x", Owner: "b", Gang: 1})
			return err
		}(), gpufair.ErrUnknownID},
		{"zero tenant weight", f.AddTenant(alloc.Tenant{ID: "z", Weight: 0}), gpufair.ErrValue},
		{"duplicate tenant", f.AddTenant(alloc.Tenant{ID: "a", Weight: 1}), gpufair.ErrDuplicate},
		{"parts that do not add up", split.AddLarge(alloc.Job{ID: "L", Gang: 8, Weight: 1}, []stride.Part{{Server: 0, GPUs: 4}}), gpufair.ErrValue},
		{"part larger than its server", split.AddLarge(alloc.Job{ID: "L", Gang: 8, Weight: 1}, []stride.Part{{Server: 0, GPUs: 5}, {Server: 1, GPUs: 3}}), gpufair.ErrTooLarge},
		{"part on a missing server", split.AddLarge(alloc.Job{ID: "L", Gang: 8, Weight: 1}, []stride.Part{{Server: 0, GPUs: 4}, {Server: 7, GPUs: 4}}), gpufair.ErrUnknownID},
		{"small job on a missing server", split.AddSmall(alloc.Job{ID: "x", Gang: 1, Weight: 1}, 2), gpufair.ErrUnknownID},
		{"unknown job tickets", split.SetWeight("nope", 1), gpufair.ErrUnknownID},
		{"finish unknown job", f.Finish("nope"), gpufair.ErrUnknownID},
		{"allocation rows without GPUs", fromAllocationErr(&alloc.Allocation{Rows: []string{"x"}, Types: []topology.GPUType{"v100"}}), gpufair.ErrShape},
		{"allocation row of the wrong length", fromAllocationErr(&alloc.Allocation{Rows: []string{"x"}, Types: []topology.GPUType{"v100"}, GPUs: [][]float64{{1, 1}}}), gpufair.ErrShape},
		{"allocation row not a job", fromAllocationErr(&alloc.Allocation{Rows: []string{"y"}, Types: []topology.GPUType{"v100"}, GPUs: [][]float64{{1}}}), gpufair.ErrUnknownID},
		{"nil allocation", fromAllocationErr(nil), gpufair.ErrEmpty},
		{"readjust: lengths differ", readjustErr(8, []float64{1, 1}, []float64{1}), gpufair.ErrShape},
		{"readjust: zero tickets", readjustErr(8, []float64{1, 0}, []float64{1, 1}), gpufair.ErrValue},
		{"readjust: NaN demand", readjustErr(8, []float64{1, 1}, []float64{1, math.NaN()}), gpufair.ErrValue},
		{"readjust: negative demand", readjustErr(8, []float64{1, 1}, []float64{-1, 1}), gpufair.ErrValue},
		{"readjust: infinite capacity", readjustErr(math.Inf(1), []float64{1}, []float64{1}), gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Fatalf("error = %v, want %v", tc.err, tc.want)
			}
			var ie *gpufair.InputError
			if !errors.As(tc.err, &ie) {
				t.Errorf("error %T is not an *gpufair.InputError", tc.err)
			}
		})
	}
	if _, err := s.Schedule(3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Schedule(2); !errors.Is(err, gpufair.ErrOrder) {
		t.Errorf("quantum going back: %v", err)
	}
	// Settings.Rank skips types the cluster lacks: a job without a type
	// goes to v100.
	p, err := f.Submit(stride.Submission{ID: "ok", Owner: "a", Gang: 1})
	if err != nil || p.Type != "v100" {
		t.Errorf("Submit() = %v, %v", p, err)
	}
}

// Each rejected input is named by the field of alloc.Tenant, alloc.Job or
// Submission that holds it.
func TestBadInputField(t *testing.T) {
	s, _ := stride.NewScheduler(4)
	f, _ := stride.NewFair(servers(2, 4, "v100"), nil)
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 1})
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"tenant weight", f.AddTenant(alloc.Tenant{ID: "z", Weight: -1}), "Tenant.Weight"},
		{"job weight", s.Add(alloc.Job{ID: "x", Gang: 1, Weight: 0}), "Job.Weight"},
		{"job gang", s.Add(alloc.Job{ID: "x", Gang: 0, Weight: 1}), "Job.Gang"},
		{"profiled rate", func() error {
			_, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 1, Rates: map[topology.GPUType]float64{"v100": math.Inf(1)}})
			return err
		}(), "Job.Rates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ie *gpufair.InputError
			if !errors.As(tc.err, &ie) || !errors.Is(tc.err, gpufair.ErrValue) {
				t.Fatalf("error = %v, want an *gpufair.InputError wrapping gpufair.ErrValue", tc.err)
			}
			if ie.Field != tc.want {
				t.Errorf("Field = %q, want %q", ie.Field, tc.want)
			}
		})
	}
}

// Weight readjustment (the bonus share): a user whose jobs need fewer GPUs
// than its tickets' share keeps what it needs and the rest is shared by the
// others in proportion to their tickets.
func TestReadjust(t *testing.T) {
	for _, tc := range []struct {
		name          string
		gpus          float64
		tickets, need []float64
		eff, share    []float64
	}{
		{"Figure 1: C needs 2 of 8/3", 8, []float64{100, 100, 100}, []float64{4, 4, 2}, []float64{100, 100, 200. / 3}, []float64{3, 3, 2}},
		{"nobody capped", 8, []float64{1, 3}, []float64{8, 8}, []float64{1, 3}, []float64{2, 6}},
		{"everyone capped", 8, []float64{1, 1}, []float64{1, 2}, []float64{1, 1}, []float64{1, 2}},
		{"two rounds of capping", 12, []float64{1, 1, 1, 1}, []float64{1, 2, 10, 10}, []float64{2. / 9, 4. / 9, 1, 1}, []float64{1, 2, 4.5, 4.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eff, share, err := stride.Readjust(tc.gpus, tc.tickets, tc.need)
			if err != nil {
				t.Fatal(err)
			}
			for i := range eff {
				if math.Abs(eff[i]-tc.eff[i]) > 1e-12 || math.Abs(share[i]-tc.share[i]) > 1e-12 {
					t.Errorf("user %d: effective %v share %v, want %v %v", i, eff[i], share[i], tc.eff[i], tc.share[i])
				}
			}
		})
	}
}

// Migration: after a burst of departures leaves one server loaded and the
// other idle, Rebalance moves a job over, and only above the threshold.
func TestRebalance(t *testing.T) {
	f, _ := stride.NewFair(servers(2, 4, "v100"), nil)
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 100})
	for _, id := range []alloc.JobID{"j0", "j1", "j2", "j3"} {
		_, _ = f.Submit(stride.Submission{ID: id, Owner: "a", Gang: 1})
	}
	// j0, j2 on s0; j1, j3 on s1. Both of s1's jobs end.
	_ = f.Finish("j1")
	_ = f.Finish("j3")
	if got := f.Loads(); got[0] != 25 || got[1] != 0 {
		t.Fatalf("loads %v", got)
	}
	if m := f.Rebalance(30); len(m) != 0 {
		t.Errorf("migrated below the threshold: %v", m)
	}
	m := f.Rebalance(10)
	if len(m) != 1 || m[0].From != "s0" || m[0].To != "s1" || m[0].Job != "j0" {
		t.Fatalf("Rebalance() = %v", m)
	}
	if got := f.Loads(); got[0] != 12.5 || got[1] != 12.5 {
		t.Errorf("loads after migration %v", got)
	}
	if m := f.Rebalance(0); len(m) != 0 {
		t.Errorf("balanced cluster migrated %v", m)
	}
}

// Algorithm 2 line 5: a profiled job goes to the type of least mini-batch
// time per ticket per GPU, which is the greatest rate times tickets per GPU;
// once the user crowds the fast type, its next job goes to the slow one.
func TestSubmitByProfile(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 4}, {Name: "v", Type: "v100", GPUs: 4}}}
	f, _ := stride.NewFair(c, nil)
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 100})
	// Mini-batch times of 400 and 100: 4x faster on V100.
	rates := map[topology.GPUType]float64{"k80": 1.0 / 400, "v100": 1.0 / 100}
	var got []topology.GPUType
	for _, id := range []alloc.JobID{"j0", "j1", "j2", "j3", "j4", "j5"} {
		p, err := f.Submit(stride.Submission{ID: id, Owner: "a", Gang: 1, Rates: rates})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.Type)
	}
	// Cost time·(demand after)/tickets, the reciprocal of rate·tickets per
	// GPU: V100 1, 2, 3, 4, ... against K80 4, 8, ...: three V100 jobs,
	// then a tie at 4 goes to K80 (listed first), then V100 again until
	// its cost passes 8.
	want := []topology.GPUType{"v100", "v100", "v100", "k80", "v100", "v100"}
	if !slices.Equal(want, got) {
		t.Errorf("types %v, want %v", got, want)
	}
	if _, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 1, Rates: map[topology.GPUType]float64{"tpu": 1}}); !errors.Is(err, gpufair.ErrUnknownType) {
		t.Errorf("profile on an unknown type: %v", err)
	}
	if _, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 1, Rates: map[topology.GPUType]float64{"v100": 0}}); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("zero profiled rate: %v", err)
	}
}

// TestBadInputNamesTheFirst checks that an input with several bad entries
// in a map is reported by the first of them in order, every time, rather
// than by whichever the map's iteration order gives.
func TestBadInputNamesTheFirst(t *testing.T) {
	f, _ := stride.NewFair(servers(2, 4, "v100"), nil)
	_ = f.AddTenant(alloc.Tenant{ID: "a", Weight: 1})
	tickets := map[topology.GPUType]float64{"v100": 1}
	for _, k := range []topology.GPUType{"tpu-z", "tpu-y", "tpu-x", "tpu-b", "tpu-a", "tpu-c"} {
		tickets[k] = 1
	}
	for range 20 {
		err := f.SetTypeTickets("a", tickets)
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.ID != "tpu-a" {
			t.Fatalf("SetTypeTickets() error = %v, want one naming tpu-a, the first unknown type", err)
		}
	}
}

// A Fair snapshot whose per-type tickets a tenant could not have set
// (SetTypeTickets refuses them) is refused: tickets above the largest
// weight were taken, and every accounting of the type then panicked.
func TestFairUnmarshalRefusesBadTickets(t *testing.T) {
	f, _ := stride.NewFair(servers(2, 4, "v100"), nil)
	if err := f.AddTenant(alloc.Tenant{ID: "a", Weight: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Submit(stride.Submission{ID: "x", Owner: "a", Gang: 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTypeTickets("a", map[topology.GPUType]float64{"v100": 2}); err != nil {
		t.Fatal(err)
	}
	snap, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, tickets := range []string{`{"v100":1e301}`, `{"v100":-1}`, `{"tpu":2}`} {
		t.Run(tickets, func(t *testing.T) {
			bad := strings.Replace(string(snap), `"type_tickets":{"v100":2}`, `"type_tickets":`+tickets, 1)
			if bad == string(snap) {
				t.Fatalf("snapshot %s has no type tickets to edit", snap)
			}
			g, _ := stride.NewFair(servers(2, 4, "v100"), nil)
			err := g.UnmarshalJSON([]byte(bad))
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrSnapshot) || !errors.As(err, &ie) || ie.Field != "Snapshot" {
				t.Fatalf("UnmarshalJSON() = %v, want an *InputError on Snapshot wrapping ErrSnapshot", err)
			}
			if acc := g.Accounts(); len(acc) != 0 {
				t.Errorf("the refused snapshot changed the cluster: accounts %v", acc)
			}
		})
	}
	// The snapshot as written still restores.
	g, _ := stride.NewFair(servers(2, 4, "v100"), nil)
	if err := g.UnmarshalJSON(snap); err != nil {
		t.Fatal(err)
	}
	if acc := g.Accounts(); len(acc) != 1 || acc[0].WeightPerGPU != 2 {
		t.Errorf("restored accounts %v, want a's 2 tickets on v100", acc)
	}
}

// A tenant of the least weight Fair takes (1e-200) that trades its tickets
// on a type away keeps minTicketShare of them there: its job's stride is
// 1e209, and its pass stays finite, so the state snapshots and restores.
// Below that weight, strides could overflow (AddTenant refuses it).
func TestFairLeastWeightKeepsFinitePasses(t *testing.T) {
	f, _ := stride.NewFair(servers(1, 2, "v100"), nil)
	for _, u := range []alloc.Tenant{{ID: "a", Weight: 1e-200}, {ID: "b", Weight: 1}} {
		if err := f.AddTenant(u); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if _, err := f.Submit(stride.Submission{ID: alloc.JobID(string(u.ID) + string(rune('0'+i))), Owner: u.ID, Gang: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.SetTypeTickets("a", map[topology.GPUType]float64{"v100": 0}); err != nil {
		t.Fatal(err)
	}
	if w, _ := f.JobWeight("a0"); !(w > 0) || w > 1e-200 {
		t.Fatalf("a0's weight %v: want the tenant's vanishing share, below its 1e-200 tickets", w)
	}
	for q := range 20 {
		if _, err := f.Quantum(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []alloc.JobID{"a0", "a1", "b0", "b1"} {
		if p, _ := f.Split().Pass(id); math.IsInf(p, 0) || math.IsNaN(p) {
			t.Errorf("job %s's pass is %v", id, p)
		}
	}
	snap, err := f.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	g, _ := stride.NewFair(servers(1, 2, "v100"), nil)
	if err := g.UnmarshalJSON(snap); err != nil {
		t.Fatalf("restoring the snapshot: %v", err)
	}
}
