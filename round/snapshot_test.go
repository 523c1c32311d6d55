package round_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
)

// TestOpenRefusesBadJobs: a snapshot whose jobs hold a value that Apply
// refuses is refused too (and one with a good value in its place taken). Restored, such a job sat unseen while a
// scheduler reused its last target, then failed every decision after the
// next event.
func TestOpenRefusesBadJobs(t *testing.T) {
	l := testLedger(t) // x, rates 1 and 2, arrived at 10
	if err := l.Apply(round.Arrive(20, alloc.Job{ID: "y", Gang: 1, Weight: 1, Rates: []float64{3, 4}}, 50)); err != nil {
		t.Fatal(err)
	}
	snap, err := round.Seal("test", l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := round.Open(snap, "test", l, nil); err != nil {
		t.Fatalf("Open(its own snapshot) = %v", err)
	}
	for _, tc := range []struct {
		name    string
		field   string
		bad, ok any
	}{
		{"negative rate", "rates", []float64{-1, 2}, []float64{1, 2}},
		{"rates spread beyond the policies'", "rates", []float64{1e-13, 2}, []float64{1e-11, 2}},
		{"rates spread beyond the policies' from y's", "rates", []float64{1e-12, 1e-12}, []float64{1e-11, 1e-11}},
		{"weight the policies refuse", "weight", 1e-76, 2},
		{"gang of none", "gang", 0, 2},
		{"negative work", "total_work", -1, 0},
		{"negative work done", "done", -1, 5},
		{"negative time received", "received", []float64{-1, 0}, []float64{1, 0}},
		{"time shared of the wrong sign", "shared", []float64{0, -3}, []float64{0, 3}},
		{"arrival after the ledger's time", "arrival", 1e9, 20},
		{"no owner", "owner", "", "u"},
		{"negative rounds", "rounds", -1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := round.Open(editJob(t, snap, "x", tc.field, tc.ok), "test", l, nil); err != nil {
				t.Fatalf("Open() with %s %v = %v", tc.field, tc.ok, err)
			}
			if _, err := round.Open(editJob(t, snap, "x", tc.field, tc.bad), "test", l, nil); !errors.Is(err, gpufair.ErrSnapshot) {
				t.Errorf("Open() = %v, want an error wrapping ErrSnapshot", err)
			}
		})
	}
}

// TestOpenRefusesRepeatedKeys: encoding/json kept the last of a repeated
// key, so an edited snapshot naming a job's rates twice was taken with the
// second. Open refuses it; keys that differ in case only are distinct.
func TestOpenRefusesRepeatedKeys(t *testing.T) {
	l := testLedger(t)
	snap, err := round.Seal("test", l, nil)
	if err != nil {
		t.Fatal(err)
	}
	twice := bytes.Replace(snap, []byte(`"rates":`), []byte(`"rates":[5,6],"rates":`), 1)
	if bytes.Equal(twice, snap) {
		t.Fatalf("no rates in %s", snap)
	}
	if _, err := round.Open(twice, "test", l, nil); !errors.Is(err, gpufair.ErrSnapshot) || !strings.Contains(err.Error(), `"rates"`) {
		t.Errorf("Open() of a job with its rates twice = %v, want an error wrapping ErrSnapshot naming the key", err)
	}
}

// editJob returns snap with the ledger's job id's field set to value.
func editJob(t *testing.T, snap []byte, id, field string, value any) []byte {
	return editLedger(t, snap, func(ledger map[string]any) {
		for _, j := range ledger["jobs"].([]any) {
			if job := j.(map[string]any); job["id"] == id {
				job[field] = value
			}
		}
	})
}

// editLedger returns snap with its ledger, decoded, changed by edit.
func editLedger(t *testing.T, snap []byte, edit func(ledger map[string]any)) []byte {
	t.Helper()
	var env map[string]json.RawMessage
	var ledger map[string]any
	if err := json.Unmarshal(snap, &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env["ledger"], &ledger); err != nil {
		t.Fatal(err)
	}
	edit(ledger)
	b, err := json.Marshal(ledger)
	if err != nil {
		t.Fatal(err)
	}
	env["ledger"] = b
	if snap, err = json.Marshal(env); err != nil {
		t.Fatal(err)
	}
	return snap
}

// TestOpenRefusesLeaseAfterClock: a lease that starts after the ledger's
// time was taken, and every decision after it refused as out of order.
func TestOpenRefusesLeaseAfterClock(t *testing.T) {
	l := testLedger(t)
	if err := l.Begin(10); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(&round.Decision{Start: 10, End: 20}); err != nil {
		t.Fatal(err)
	}
	snap, err := round.Seal("test", l, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []float64{10, 15} {
		bad := editLedger(t, snap, func(ledger map[string]any) { ledger["lease"].(map[string]any)["start"] = start })
		_, err := round.Open(bad, "test", l, nil)
		if start == 10 && err != nil {
			t.Fatalf("Open(its own snapshot) = %v", err)
		}
		if start != 10 && !errors.Is(err, gpufair.ErrSnapshot) {
			t.Errorf("Open() of a lease from %v at time 10 = %v, want an error wrapping ErrSnapshot", start, err)
		}
	}
}

// TestOpenTakesJobMeasuredToRunNowhere: Apply takes a measurement of 0 on
// every type (the job then waits until it departs or is measured again),
// so its snapshot opens. Open checked the job as an arrival, which must
// run somewhere, and every scheduler's own snapshot failed to restore.
func TestOpenTakesJobMeasuredToRunNowhere(t *testing.T) {
	l := testLedger(t) // x, rates 1 and 2, arrived at 10
	if err := l.Apply(round.Measure(20, "x", []float64{0, 0})); err != nil {
		t.Fatalf("Apply(Measure to 0 everywhere) = %v", err)
	}
	snap, err := round.Seal("test", l, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := round.Open(snap, "test", l, nil)
	if err != nil {
		t.Fatalf("Open(its own snapshot) = %v", err)
	}
	if j, ok := r.Job("x"); !ok || j.Rates[0] != 0 || j.Rates[1] != 0 {
		t.Errorf("restored x = %+v, want rates 0 and 0", j)
	}
}
