package stride_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// oneV100 is a cluster of one V100, and its one type.
func oneV100() (topology.Cluster, []topology.GPUType) {
	return topology.Cluster{Servers: []topology.Server{{Name: "v100-0", Type: "v100", GPUs: 1}}}, []topology.GPUType{"v100"}
}

// unitJob is a single-GPU job of weight 1 that runs at 1 step/s on every
// one of n types.
func unitJob(id alloc.JobID, n int) alloc.Job {
	rates := make([]float64, n)
	for k := range rates {
		rates[k] = 1
	}
	return alloc.Job{ID: id, Gang: 1, Weight: 1, Rates: rates}
}

// runs returns the jobs d places, one letter each, in placement order.
func runs(d *round.Decision) string {
	s := ""
	for _, p := range d.Placements {
		for _, id := range p.Jobs {
			s += string(id)
		}
	}
	return s
}

// TestGavelResetRealisesNewShares: job A runs alone on one V100 for 20
// rounds, then B arrives and max-min gives each X = 0.5. Counting f from
// arrival, A has run all of its 20 rounds and waits until its share since
// arrival falls to 0.5: it runs in 7 of the 20 rounds from B's arrival.
// Counting f from the re-solve at B's arrival, as the paper
// does, A and B take turns from the first round on.
func TestGavelResetRealisesNewShares(t *testing.T) {
	c, types := oneV100()
	for _, tc := range []struct {
		name  string
		reset float64
		want  string // the jobs run in rounds 20 to 39
	}{
		{"since arrival", 0, "BABBBBABBABBABABBABA"},
		{"since the re-solve", stride.GavelResetInterval, "ABABABABABABABABABAB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{ResetInterval: tc.reset})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(round.Arrive(0, unitJob("A", 1), 0)); err != nil {
				t.Fatal(err)
			}
			got := ""
			for r := range 40 {
				now := float64(r) * stride.DefaultRound
				if r == 20 {
					if err := s.Apply(round.Arrive(now, unitJob("B", 1), 0)); err != nil {
						t.Fatal(err)
					}
				}
				d, err := s.Decide(context.Background(), now)
				if err != nil {
					t.Fatal(err)
				}
				if r >= 20 {
					got += runs(d)
				}
			}
			if x, _ := s.Target("A"); math.Abs(x[0]-0.5) > 1e-9 {
				t.Fatalf("X_A = %v, want 0.5", x[0])
			}
			if got != tc.want {
				t.Errorf("rounds 20-39 ran %s, want %s", got, tc.want)
			}
			// A and B within one round of each other at every round, with
			// the reset; A well behind without it.
			lead, worst := 0, 0
			for _, id := range got {
				if id == 'A' {
					lead++
				} else {
					lead--
				}
				worst = max(worst, -lead)
			}
			if withReset := tc.reset > 0; withReset != (worst <= 1) {
				t.Errorf("B ran up to %d rounds more than A (reset interval %v)", worst, tc.reset)
			}
		})
	}
}

// TestGavelResetInterval: job A runs alone on one V100 in rounds of 100 s,
// with resets at least 500 s apart. f_A is 0 at the round of a reset (no
// time since) and 1 at every other, so the rounds where it is 0 are the
// resets. The first solve resets; later, a solve resets only 500 s after
// the previous reset, and a solve sooner makes the reset wait until then.
func TestGavelResetInterval(t *testing.T) {
	c, types := oneV100()
	for _, tc := range []struct {
		name     string
		interval float64
		solveAt  func(now float64) bool // re-solve at the round at now
		want     []float64              // the rounds at which f_A is 0
	}{
		{"no re-solve", 500, func(float64) bool { return false }, []float64{0}},
		{"re-solve every round", 500, func(float64) bool { return true }, []float64{0, 500, 1000}},
		{"one re-solve, sooner than the interval", 500, func(now float64) bool { return now == 200 }, []float64{0, 500}},
		{"one re-solve, later than the interval", 500, func(now float64) bool { return now == 700 }, []float64{0, 700}},
		{"interval shorter than a round", 1, func(float64) bool { return true }, []float64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Round: 100, ResetInterval: tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(round.Arrive(0, unitJob("A", 1), 0)); err != nil {
				t.Fatal(err)
			}
			var got []float64
			for now := 0.0; now < 1200; now += 100 {
				if now > 0 && tc.solveAt(now) {
					// Rates measured anew, the same: the policy is solved again.
					if err := s.Apply(round.Measure(now, "A", []float64{1})); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Decide(context.Background(), now); err != nil {
					t.Fatal(err)
				}
				switch f := s.Fraction("A", 0, now); f {
				case 0:
					got = append(got, now)
				case 1:
				default:
					t.Fatalf("f_A at %v = %v, want 0 or 1", now, f)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rounds with f_A = 0 mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// resetTrace runs max-min on one V100 in rounds of 100 s with resets at
// least 500 s apart: A arrives at 0, B at 300, C at 800 (C departs at
// 1000), from round from to round to (excluded), and returns the decisions.
func resetTrace(t *testing.T, s *stride.Gavel, from, to int) []*round.Decision {
	t.Helper()
	var ds []*round.Decision
	for r := from; r < to; r++ {
		now := float64(100 * r)
		var ev []round.Event
		switch r {
		case 0:
			ev = append(ev, round.Arrive(now, unitJob("A", 1), 0))
		case 3:
			ev = append(ev, round.Arrive(now, unitJob("B", 1), 0))
		case 8:
			ev = append(ev, round.Arrive(now, unitJob("C", 1), 0))
		case 10:
			ev = append(ev, round.Depart(now, "C"))
		}
		if err := s.Apply(ev...); err != nil {
			t.Fatal(err)
		}
		d, err := s.Decide(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestGavelResetSnapshot: a scheduler restored from a snapshot taken
// mid-interval (a reset due at 500 after B's arrival at 300; the counts of
// the reset at 500 in force at 600) makes the same decisions as the one it
// was taken from, and counts the same f.
func TestGavelResetSnapshot(t *testing.T) {
	c, types := oneV100()
	set := &stride.GavelSettings{Round: 100, ResetInterval: 500}
	for _, at := range []int{4, 7} { // snapshot after the round at 300 or at 600
		s, err := stride.NewGavel(alloc.MaxMin{}, c, types, set)
		if err != nil {
			t.Fatal(err)
		}
		resetTrace(t, s, 0, at)
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := stride.NewGavel(alloc.MaxMin{}, c, types, set)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(snap); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if again, _ := r.Snapshot(); string(again) != string(snap) {
			t.Fatalf("snapshot after Restore mismatch (-taken +restored):\n%s", cmp.Diff(string(snap), string(again)))
		}
		want, got := resetTrace(t, s, at, 16), resetTrace(t, r, at, 16)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("snapshot after round %d: decisions mismatch (-original +restored):\n%s", at-1, diff)
		}
		for _, id := range []alloc.JobID{"A", "B"} {
			if f, g := s.Fraction(id, 0, 1600), r.Fraction(id, 0, 1600); f != g {
				t.Errorf("snapshot after round %d: f_%s = %v, restored %v", at-1, id, f, g)
			}
		}
	}
}

// TestGavelResetRestoreRefusesBadCounts: a snapshot whose reset state is
// out of range is refused with an *InputError wrapping ErrSnapshot, and
// leaves the scheduler as it was.
func TestGavelResetRestoreRefusesBadCounts(t *testing.T) {
	c, types := oneV100()
	set := &stride.GavelSettings{Round: 100, ResetInterval: 500}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, set)
	if err != nil {
		t.Fatal(err)
	}
	resetTrace(t, s, 0, 7) // reset at 500: A has run 300 s then, B 100 s
	good, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(st map[string]any)
	}{
		{"reset after the ledger's time", func(st map[string]any) { st["reset_at"] = 1e6 }},
		{"counts for a job not in the system", func(st map[string]any) {
			st["reset_received"].(map[string]any)["Z"] = []any{0.0}
		}},
		{"no counts for a job there before the reset", func(st map[string]any) {
			delete(st["reset_received"].(map[string]any), "A")
		}},
		{"counts for a job that arrived after the reset", func(st map[string]any) { st["reset_at"] = 200.0 }},
		{"wrong number of types", func(st map[string]any) {
			st["reset_received"].(map[string]any)["A"] = []any{0.0, 0.0}
		}},
		{"negative count", func(st map[string]any) {
			st["reset_received"].(map[string]any)["A"] = []any{-1.0}
		}},
		{"more than the time received", func(st map[string]any) {
			st["reset_received"].(map[string]any)["A"] = []any{1e6}
		}},
		{"counts without a reset", func(st map[string]any) { delete(st, "reset") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refuseEditedSnapshot(t, s, good, "reset_received", tc.edit)
		})
	}
}

// refuseEditedSnapshot checks that s refuses snapshot good with its state
// edited by edit (field, which it needs, must be in the state), with an
// *InputError on Snapshot wrapping ErrSnapshot, and changes nothing.
func refuseEditedSnapshot(t *testing.T, s *stride.Gavel, good []byte, field string, edit func(st map[string]any)) {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(good, &env); err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(env["state"], &st); err != nil {
		t.Fatal(err)
	}
	if _, ok := st[field]; !ok {
		t.Fatalf("the snapshot has no %s: %s", field, env["state"])
	}
	edit(st)
	var err error
	if env["state"], err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	bad, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Restore(bad)
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrSnapshot) || !errors.As(err, &ie) || ie.Field != "Snapshot" {
		t.Errorf("Restore() = %v, want an *InputError on Snapshot wrapping ErrSnapshot", err)
	}
	if after, _ := s.Snapshot(); string(after) != string(good) {
		t.Errorf("a refused Restore changed the state")
	}
}

// TestGavelResetCountsSharedTime: a shares its V100 with b in each of 20
// rounds; then b departs and c arrives, and space-sharing max-min (a and c
// at 0.3 and 0.9 of their rates together) pairs a with c for part of a's
// time only. With ResetInterval, whether a takes a partner along turns on
// the part of its time it shared since the re-solve, as f_mk does: none,
// so it takes c at once, and over the 40 rounds its shared part since the
// re-solve is its allocation's to within a round. Counted since arrival,
// 20 of a's 20 rounds were shared, and a ran alone first.
func TestGavelResetCountsSharedTime(t *testing.T) {
	c, types := oneV100()
	ss := alloc.SpaceSharing{Objective: alloc.SharingMaxMin, Pairs: []alloc.PairRate{
		{A: "a", B: "b", Type: "v100", RateA: 0.8, RateB: 0.8},
		{A: "a", B: "c", Type: "v100", RateA: 0.3, RateB: 0.9},
	}}
	s, err := stride.NewGavel(ss, c, types, &stride.GavelSettings{ResetInterval: stride.GavelResetInterval})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, unitJob("a", 1), 0), round.Arrive(0, unitJob("b", 1), 0)); err != nil {
		t.Fatal(err)
	}
	var ranAt, sharedAt float64
	for r := range 60 {
		now := float64(r) * stride.DefaultRound
		if r == 20 {
			if err := s.Apply(round.Depart(now, "b"), round.Arrive(now, unitJob("c", 1), 0)); err != nil {
				t.Fatal(err)
			}
			a, _ := s.Ledger().Job("a")
			ranAt, sharedAt = a.Received[0], a.Shared[0]
		}
		d, err := s.Decide(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if r == 20 && runs(d) != "ac" {
			t.Errorf("round 20 ran %q, want a with c", runs(d))
		}
	}
	// The allocation's shared part of a's time, from the policy itself.
	p, err := alloc.NewJobProblem(alloc.Capacity{Types: types, Count: []float64{1}}, nil,
		[]alloc.Job{unitJob("a", 1), unitJob("c", 1)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ss.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	pair := 0.0
	for _, ps := range res.Partners[0] {
		pair += ps.Time
	}
	want := pair / (pair + res.Alone[0][0])
	a, _ := s.Ledger().Job("a")
	got := (a.Shared[0] - sharedAt) / (a.Received[0] - ranAt)
	if math.Abs(got-want) > 1.0/40 || want >= 1 {
		t.Errorf("a shared %.3f of its time since the re-solve, its allocation %.3f", got, want)
	}
}
