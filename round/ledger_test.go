package round_test

import (
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

func testLedger(t *testing.T) *round.Ledger {
	t.Helper()
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "k80", GPUs: 2}, {Name: "b", Type: "v100", GPUs: 2}}}
	l, err := round.NewLedger(c, []topology.GPUType{"k80", "v100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(round.Arrive(10, alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 100)); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLedgerRefusesBadEvents(t *testing.T) {
	job := func(id string, gang int, rates ...float64) alloc.Job {
		return alloc.Job{ID: alloc.JobID(id), Gang: gang, Weight: 1, Rates: rates}
	}
	for _, tc := range []struct {
		name  string
		e     round.Event
		want  error
		field string
	}{
		{"unknown job departs", round.Depart(20, "nobody"), gpufair.ErrUnknownID, "Event[0].Job.ID"},
		{"unknown job progresses", round.Progress(20, "nobody", 1), gpufair.ErrUnknownID, "Event[0].Job.ID"},
		{"unknown GPU fails", round.Fail(20, topology.GPU{Server: 2}), gpufair.ErrUnknownID, "Event[0].GPU"},
		{"unknown slot fails", round.Fail(20, topology.GPU{Server: 0, Slot: 2}), gpufair.ErrUnknownID, "Event[0].GPU"},
		{"healthy GPU repaired", round.Repair(20, topology.GPU{}), gpufair.ErrValue, "Event[0].GPU"},
		{"event out of order", round.Depart(9, "x"), gpufair.ErrOrder, "Event[0].Time"},
		{"NaN time", round.Depart(nan(), "x"), gpufair.ErrValue, "Event[0].Time"},
		{"arrives twice", round.Arrive(20, job("x", 1, 1, 1), 0), gpufair.ErrDuplicate, "Event[0].Job.ID"},
		{"rates of the wrong length", round.Arrive(20, job("y", 1, 1), 0), gpufair.ErrShape, "Event[0].Job.Rates"},
		{"negative rate", round.Arrive(20, job("y", 1, 1, -1), 0), gpufair.ErrValue, "Event[0].Job.Rates"},
		{"gang fits nowhere", round.Arrive(20, job("y", 3, 1, 1), 0), gpufair.ErrTooLarge, "Event[0].Job.Gang"},
		{"no positive rate", round.Arrive(20, job("y", 1, 0, 0), 0), gpufair.ErrValue, "Event[0].Job.Rates"},
		{"zero weight", round.Arrive(20, alloc.Job{ID: "y", Gang: 1, Rates: []float64{1, 1}}, 0), gpufair.ErrValue, "Event[0].Job.Weight"},
		// Taken, these two failed every decision until the job left.
		{"weight the policies refuse", round.Arrive(20, alloc.Job{ID: "y", Gang: 1, Weight: 1e-76, Rates: []float64{1, 1}}, 0), gpufair.ErrValue, "Event[0].Job.Weight"},
		{"rates spread beyond the policies'", round.Arrive(20, job("y", 1, 1e-76, 3), 0), gpufair.ErrValue, "Event[0].Job.Rates"},
		// Each job's rates are within the spread, but not x's and y's.
		{"rates spread beyond the policies' between jobs", round.Arrive(20, job("y", 1, 1e-12, 1e-12), 0), gpufair.ErrValue, "Event[0].Job.Rates"},
		{"progress goes back", round.Progress(20, "x", -1), gpufair.ErrValue, "Event[0].Work"},
		{"measured rates of the wrong length", round.Measure(20, "x", []float64{1}), gpufair.ErrShape, "Event[0].Job.Rates"},
		{"unknown kind", round.Event{Kind: 99, Time: 20}, gpufair.ErrValue, "Event[0].Kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLedger(t)
			before, _ := l.MarshalJSON()
			err := l.Apply(tc.e)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("Apply() = %v, want an *InputError on %s wrapping %v", err, tc.field, tc.want)
			}
			after, _ := l.MarshalJSON()
			if diff := cmp.Diff(string(before), string(after)); diff != "" {
				t.Errorf("a refused event changed the ledger (-before +after):\n%s", diff)
			}
		})
	}
}

// TestLedgerRateSpreadBetweenJobs: the ledger refuses a batch after which
// two jobs' rates spread wider than alloc.MaxRateSpread, as every policy
// would, and blames the later event that set either job's rates. A batch
// that makes the same jobs consistent by its end is taken.
func TestLedgerRateSpreadBetweenJobs(t *testing.T) {
	job := func(id string, rate float64) alloc.Job {
		return alloc.Job{ID: alloc.JobID(id), Gang: 1, Weight: 1, Rates: []float64{rate, rate}}
	}
	l := testLedger(t) // x, rates 1 and 2
	if err := l.Apply(round.Arrive(20, job("y", 1e-12), 0), round.Depart(20, "x")); err != nil {
		t.Fatalf("y arriving as x departs: %v", err)
	}
	for _, tc := range []struct {
		name   string
		events []round.Event
		field  string
		id     string
	}{
		{"an arrival above", []round.Event{round.Arrive(30, job("w", 1), 0), round.Arrive(30, job("z", 1e3), 0)}, "Event[1].Job.Rates", "z"},
		{"a measurement above", []round.Event{round.Arrive(30, job("w", 1), 0), round.Measure(30, "w", []float64{1, 1e3})}, "Event[1].Job.Rates", "w"},
		{"a measurement below", []round.Event{round.Arrive(30, job("w", 1), 0), round.Measure(30, "y", []float64{1e-15, 1e-15})}, "Event[1].Job.Rates", "y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := l.Apply(tc.events...)
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != tc.id {
				t.Fatalf("Apply() = %v, want an *InputError on %s[%s] wrapping ErrValue", err, tc.field, tc.id)
			}
			if _, ok := l.Job("w"); ok {
				t.Error("a refused batch added its job")
			}
		})
	}
	if err := l.Apply(round.Measure(40, "y", []float64{1e-3, 1e-3}), round.Arrive(40, job("z", 1e8), 0)); err != nil {
		t.Errorf("y measured faster as z arrives: %v", err)
	}
}

func nan() float64 {
	z := 0.0
	return z / z
}

func TestLedgerAccountsLeases(t *testing.T) {
	l := testLedger(t)
	if err := l.Begin(10); err != nil {
		t.Fatal(err)
	}
	d := &round.Decision{Start: 10, End: 110, Placements: []round.Placement{{Jobs: []alloc.JobID{"x"}, Type: "v100", GPUs: []topology.GPU{{Server: 1, Slot: 0}}}}}
	if err := l.Commit(d); err != nil {
		t.Fatal(err)
	}
	// The GPU fails 40 s into the lease: x ran 40 s on v100.
	if err := l.Apply(round.Fail(50, topology.GPU{Server: 1, Slot: 0})); err != nil {
		t.Fatal(err)
	}
	if l.Now() != 50 || l.Rounds() != 1 {
		t.Errorf("Now() = %v, Rounds() = %d, want 50 and 1", l.Now(), l.Rounds())
	}
	if err := l.Begin(110); err != nil {
		t.Fatal(err)
	}
	j, _ := l.Job("x")
	if diff := cmp.Diff([]float64{0, 40}, j.Received); diff != "" {
		t.Errorf("received (-want +got):\n%s", diff)
	}
	if got := j.Fraction(1, 110); got != 0.4 {
		t.Errorf("Fraction(v100) = %v, want 0.4", got)
	}
	// A type index out of range has no time (it indexed past Received
	// and panicked).
	for _, k := range []int{-1, 2} {
		if got := j.Fraction(k, 110); got != 0 {
			t.Errorf("Fraction(%d) = %v, want 0", k, got)
		}
	}
	// A decision on the failed GPU breaks the contract, and aborts.
	bad := &round.Decision{Start: 110, End: 210, Placements: []round.Placement{{Jobs: []alloc.JobID{"x"}, Type: "v100", GPUs: []topology.GPU{{Server: 1, Slot: 0}}}}}
	if err := l.Commit(bad); !errors.Is(err, round.ErrPlacement) {
		t.Fatalf("Commit on a failed GPU = %v, want ErrPlacement", err)
	}
	if got := j.Received[1]; got != 0 {
		t.Errorf("after Abort, received on v100 = %v, want 0", got)
	}
	// Slots kept across leases are a renewal; other slots, a restart.
	if err := l.Begin(110); err != nil {
		t.Fatal(err)
	}
	d2 := &round.Decision{Start: 110, End: 210, Placements: []round.Placement{{Jobs: []alloc.JobID{"x"}, Type: "v100", GPUs: []topology.GPU{{Server: 1, Slot: 1}}}}}
	if err := l.Commit(d2); err != nil {
		t.Fatal(err)
	}
	if p := d2.Placements[0]; p.Renewed || !p.Restart {
		t.Errorf("placement on new slots: renewed %v, restart %v; want false, true", p.Renewed, p.Restart)
	}
	if err := l.Begin(210); err != nil {
		t.Fatal(err)
	}
	d3 := &round.Decision{Start: 210, End: 310, Placements: []round.Placement{{Jobs: []alloc.JobID{"x"}, Type: "v100", GPUs: []topology.GPU{{Server: 1, Slot: 1}}}}}
	if err := l.Commit(d3); err != nil {
		t.Fatal(err)
	}
	if p := d3.Placements[0]; !p.Renewed || p.Restart {
		t.Errorf("placement on the same slots: renewed %v, restart %v; want true, false", p.Renewed, p.Restart)
	}
	if err := l.Begin(210); !errors.Is(err, gpufair.ErrOrder) {
		t.Errorf("Begin at the start of the lease in force = %v, want ErrOrder", err)
	}
}

func TestLeaseEnd(t *testing.T) {
	for _, tc := range []struct{ now, length, want float64 }{
		{0, 360, 360},
		{1e9, 360, 1e9 + 360},
		{1e20, 360, math.Nextafter(1e20, math.Inf(1))},
		{math.MaxFloat64, 360, math.Inf(1)},
	} {
		if got := round.LeaseEnd(tc.now, tc.length); got != tc.want {
			t.Errorf("LeaseEnd(%v, %v) = %v, want %v", tc.now, tc.length, got, tc.want)
		}
	}
}

// A lease ending at +Inf (LeaseEnd of an infinite round length) was
// committed, and every later Seal failed on the +Inf.
func TestCommitRefusesEndlessLease(t *testing.T) {
	l := testLedger(t)
	if err := l.Begin(10); err != nil {
		t.Fatal(err)
	}
	d := &round.Decision{Start: 10, End: round.LeaseEnd(10, math.Inf(1)), Placements: []round.Placement{{Jobs: []alloc.JobID{"x"}, Type: "v100", GPUs: []topology.GPU{{Server: 1, Slot: 0}}}}}
	err := l.Commit(d)
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "Decision.End" {
		t.Fatalf("Commit of a lease to +Inf = %v, want an *InputError on Decision.End wrapping gpufair.ErrValue", err)
	}
	if l.Lease() != nil || l.Rounds() != 0 {
		t.Errorf("the refused decision was committed")
	}
	if _, err := round.Seal("m", l, nil); err != nil {
		t.Errorf("Seal after the refused decision: %v", err)
	}
}

// TypeOf gives each server's type index, and -1 for a server out of range
// (it indexed past the servers and panicked).
func TestTypeOf(t *testing.T) {
	l := testLedger(t)
	for s, want := range map[int]int{0: 0, 1: 1, -1: -1, 2: -1} {
		if got := l.TypeOf(s); got != want {
			t.Errorf("TypeOf(%d) = %d, want %d", s, got, want)
		}
	}
}
