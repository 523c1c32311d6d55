package round_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// TestEventJSON: every kind of event reads back from JSON as it was
// written, its kind by name, and unknown kinds are refused both ways.
func TestEventJSON(t *testing.T) {
	gpu := topology.GPU{Server: 1, Slot: 3}
	events := []round.Event{
		round.Arrive(1, alloc.Job{ID: "x", Owner: "u", Gang: 2, Weight: 1, Rates: []float64{1, 2}}, 100),
		round.Depart(2, "x"),
		round.Progress(3, "x", 40),
		round.Fail(4, gpu),
		round.Repair(5, gpu),
		round.Measure(6, "x", []float64{1.5, 2.5}),
	}
	b, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	var back []round.Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(events, back); diff != "" {
		t.Errorf("events read back (-written +read):\n%s", diff)
	}
	var raw []map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"arrived", "departed", "progressed", "failed", "repaired", "measured"} {
		if raw[i]["kind"] != name || events[i].Kind.String() != name {
			t.Errorf("event %d: kind written as %v, named %q, want %q", i, raw[i]["kind"], events[i].Kind, name)
		}
	}

	if _, err := json.Marshal(round.Event{Kind: 0}); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("marshalling kind 0: error %v, want ErrValue", err)
	}
	var e round.Event
	err = json.Unmarshal([]byte(`{"kind":"exploded","time":1}`), &e)
	var in *gpufair.InputError
	if !errors.As(err, &in) || in.Field != "Event.Kind" || !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("unmarshalling kind %q: error %v, want an input error on Event.Kind", "exploded", err)
	}
	if got := round.Kind(42).String(); got != "Kind(42)" {
		t.Errorf("Kind(42).String() = %q", got)
	}
}

// TestDecisionCounts: a decision's restarts, renewals and GPUs.
func TestDecisionCounts(t *testing.T) {
	g := func(i int) topology.GPU { return topology.GPU{Slot: i} }
	d := round.Decision{Placements: []round.Placement{
		{Jobs: []alloc.JobID{"x"}, Type: "k80", GPUs: []topology.GPU{g(0), g(1)}, Renewed: true},
		{Jobs: []alloc.JobID{"y", "z"}, Type: "k80", GPUs: []topology.GPU{g(2)}, Restart: true},
		{Jobs: []alloc.JobID{"w"}, Type: "k80", GPUs: []topology.GPU{g(3)}},
		{Jobs: []alloc.JobID{"v"}, Type: "k80", GPUs: []topology.GPU{g(4), g(5), g(6)}, Restart: true},
	}}
	if got := [3]int{d.Restarts(), d.Renewals(), d.GPUs()}; got != [3]int{2, 1, 7} {
		t.Errorf("restarts, renewals, GPUs = %v, want [2 1 7]", got)
	}
	var empty round.Decision
	if got := [3]int{empty.Restarts(), empty.Renewals(), empty.GPUs()}; got != [3]int{} {
		t.Errorf("empty decision: restarts, renewals, GPUs = %v, want zeros", got)
	}
}
