package main

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
)

// restoreFixture is every mechanism with a snapshot of its scheduler after
// two rounds of a small workload.
type restoreFixture struct {
	e     *env
	ms    []mechanism
	snaps [][]byte
}

func newRestoreFixture(tb testing.TB) *restoreFixture {
	cfg := &config{jobs: 8, rate: 20, seed: 1, cluster: []int{2, 2, 2}, perServer: 2, round: 360}
	wl, tp, _, err := workload(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := sim.NewCluster(sim.GavelTypes(), cfg.cluster, cfg.perServer)
	if err != nil {
		tb.Fatal(err)
	}
	// Among them oef-cooperative-warm, whose snapshot carries the warm rows
	// and basis (with the ghosts' speedups) into the next solve.
	fx := &restoreFixture{e: &env{c: c, w: wl, round: cfg.round, tp: tp}, ms: mechanisms()}
	var evs []round.Event
	for _, j := range wl.Jobs {
		aj := j.Job
		if aj.Weight == 0 {
			aj.Weight = 1 // as the simulator reads it
		}
		evs = append(evs, round.Arrive(0, aj, j.Steps))
	}
	for _, m := range fx.ms {
		s, err := m.make(fx.e)
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Apply(evs...); err != nil {
			tb.Fatalf("%s: %v", m.name, err)
		}
		for _, now := range []float64{0, cfg.round} {
			if _, err := s.Decide(context.Background(), now); err != nil {
				tb.Fatalf("%s: %v", m.name, err)
			}
		}
		snap, err := s.Snapshot()
		if err != nil && !errors.Is(err, gpufair.ErrSnapshot) {
			tb.Fatalf("%s: %v", m.name, err)
		}
		fx.snaps = append(fx.snaps, snap)
	}
	return fx
}

// restore restores snap into a fresh scheduler of mechanism i. Restore
// must refuse with an error wrapping gpufair.ErrSnapshot, or accept, and
// then the scheduler must take a decision (unless the restored clock is
// past it), another after a job's arrival, and a snapshot.
func (fx *restoreFixture) restore(t *testing.T, i int, snap []byte) {
	m := fx.ms[i]
	s, err := m.make(fx.e)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(snap); err != nil {
		if !errors.Is(err, gpufair.ErrSnapshot) {
			t.Fatalf("%s: Restore: %v, want an error wrapping ErrSnapshot", m.name, err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// A snapshot may put the clock past the decision's time (ErrOrder).
	if _, err := s.Decide(ctx, 1e6); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, gpufair.ErrOrder) {
		t.Fatalf("%s: Decide after a Restore it accepted: %v", m.name, err)
	}
	// An arrival makes the schedulers that reuse their last target solve
	// again over every job: a restored job that no policy takes failed
	// here and not above.
	j := alloc.Job{ID: "fuzz-arrival", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}}
	err = s.Apply(round.Arrive(1e6, j, 1e3))
	switch {
	case err == nil:
		if _, err := s.Decide(ctx, 1e6+fx.e.round); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: Decide after a Restore it accepted and an arrival: %v", m.name, err)
		}
	case !errors.Is(err, gpufair.ErrOrder) && !errors.Is(err, gpufair.ErrDuplicate):
		t.Fatalf("%s: an arrival after a Restore it accepted: %v", m.name, err)
	}
	if _, err := s.Snapshot(); err != nil && !errors.Is(err, gpufair.ErrSnapshot) {
		t.Fatalf("%s: Snapshot after a Restore it accepted: %v", m.name, err)
	}
}

// FuzzRestore hands every mechanism's scheduler snapshots to restore:
// seeded with each one's own and mutated byte by byte from there. Restore
// must never panic (restoreFixture.restore says what else it must do).
func FuzzRestore(f *testing.F) {
	fx := newRestoreFixture(f)
	for i, snap := range fx.snaps {
		if snap != nil {
			f.Add(uint8(i), snap)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, snap []byte) {
		fx.restore(t, int(i)%len(fx.ms), snap)
	})
}

// FuzzRestoreValues edits one value of a mechanism's own snapshot, as a
// snapshot corrupted on disk or edited by hand would be, rather than its
// bytes: a number (leaf counts the numbers, strings and arrays in the
// order encoding/json writes them) is set to 0, −1, 0.5, 1e18, 1e308,
// −1e308, its integer part plus one or its negation, an array is emptied
// or loses its last element, a string is emptied, extended or made "0"
// (the first job's ID, so that two IDs may clash). Restore must never panic. leaf is taken modulo the number of
// such values.
func FuzzRestoreValues(f *testing.F) {
	fx := newRestoreFixture(f)
	for i, snap := range fx.snaps {
		if snap != nil {
			for leaf := range uint16(8) {
				f.Add(uint8(i), leaf*7, uint8(leaf))
			}
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, leaf uint16, kind uint8) {
		k := int(i) % len(fx.ms)
		if fx.snaps[k] == nil {
			return
		}
		var v any
		if err := json.Unmarshal(fx.snaps[k], &v); err != nil {
			t.Fatal(err)
		}
		count := math.MaxInt
		editValue(v, &count, kind) // counts the values down from MaxInt
		n := int(leaf) % (math.MaxInt - count)
		v, _ = editValue(v, &n, kind)
		snap, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fx.restore(t, k, snap)
	})
}

// editValue walks v in encoding/json's order (object keys sorted) and
// edits the *n-th number, string or array, counting *n down; done reports
// that the edit was made.
func editValue(v any, n *int, kind uint8) (out any, done bool) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for key := range x {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			if x[key], done = editValue(x[key], n, kind); done {
				return x, true
			}
		}
		return x, false
	case []any:
		if *n == 0 {
			if kind%2 == 0 || len(x) == 0 {
				return []any{}, true
			}
			return x[:len(x)-1], true
		}
		*n--
		for i := range x {
			if x[i], done = editValue(x[i], n, kind); done {
				return x, true
			}
		}
		return x, false
	case float64:
		if *n > 0 {
			*n--
			return x, false
		}
		return []float64{0, -1, 0.5, 1e18, 1e308, -1e308, math.Trunc(x) + 1, -x}[kind%8], true
	case string:
		if *n > 0 {
			*n--
			return x, false
		}
		return []string{"", x + "x", "0"}[kind%3], true
	}
	return v, false
}

// FuzzEvents feeds every mechanism's scheduler arbitrary events: arrivals
// of jobs with any gang and weight (NaN, ±Inf, negative, huge) and rates
// of any sign and length (fuzzRates),
// departures, progress and new rates of jobs known or not, failures and
// repairs of GPUs that exist or not, at any times. Apply must refuse a
// batch with an *gpufair.InputError or take it, and the scheduler must
// then decide (unless the batch's times are past the decision's) without
// panicking.
func FuzzEvents(f *testing.F) {
	fx := newRestoreFixture(f)
	f.Add(uint8(0), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add(uint8(7), []byte{0, 0, 1, 1, 2, 2, 0, 3, 3, 5, 5, 1, 0, 4, 2, 200, 9, 9})
	ids := []alloc.JobID{"a", "b", "c", ""}
	f.Fuzz(func(t *testing.T, i uint8, data []byte) {
		m := fx.ms[int(i)%len(fx.ms)]
		s, err := m.make(fx.e)
		if err != nil {
			t.Fatal(err)
		}
		r := fuzzdata.New(data)
		now := 0.0
		for range 1 + r.Int(4) {
			var evs []round.Event
			for range 1 + r.Int(4) {
				at := now + float64(r.Int(3))*fx.e.round/2
				if r.Int(8) == 0 {
					at = r.Number()
				}
				id := ids[r.Int(len(ids))]
				switch r.Int(6) {
				case 0, 1:
					j := alloc.Job{ID: id, Owner: alloc.TenantID(ids[r.Int(2)]), Gang: r.Int(4), Weight: 1, Rates: []float64{1, 2, 3}}
					if r.Int(2) == 0 {
						j.Weight, j.Rates = r.Number(), fuzzRates(r)
					}
					// Work of 6e116 steps beside 1e3 made the makespan LP
					// too wide to solve, and 1e-3 beside unknown work (0)
					// gave min-cost with SLOs an infinite work left.
					evs = append(evs, round.Arrive(at, j, fuzzWork(r)))
				case 2:
					evs = append(evs, round.Depart(at, id))
				case 3:
					// Progress of 6e119 steps on work of 49,000 made
					// finish-time fairness's LP fail its check.
					evs = append(evs, round.Progress(at, id, fuzzWork(r)))
				case 4:
					evs = append(evs, round.Measure(at, id, fuzzRates(r)))
				default:
					g := topology.GPU{Server: r.Int(8) - 1, Slot: r.Int(4) - 1}
					if r.Int(2) == 0 {
						evs = append(evs, round.Fail(at, g))
					} else {
						evs = append(evs, round.Repair(at, g))
					}
				}
			}
			if err := s.Apply(evs...); err != nil {
				if ie := (*gpufair.InputError)(nil); !errors.As(err, &ie) {
					t.Fatalf("%s: Apply(%v) = %v, want an *gpufair.InputError", m.name, evs, err)
				}
				continue
			}
			now += fx.e.round
			if r.Int(2) == 0 {
				// Decide at the batch's latest time, however late: from
				// 1e20 s on, a lease of six minutes ended where it began.
				for _, e := range evs {
					now = max(now, e.Time)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := s.Decide(ctx, now)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, gpufair.ErrOrder) {
				t.Fatalf("%s: Decide after events %v: %v", m.name, evs, err)
			}
		}
	})
}

// fuzzRates returns 1 to 4 rates, each NaN, ±Inf, negative, zero or a
// positive rate, spread within a job by up to 1e6 and scaled by up to
// 1e±12 as a whole: two jobs' rates, each within alloc.MaxRateSpread, were
// taken by the ledger while every policy refused them together.
func fuzzRates(r *fuzzdata.Reader) []float64 {
	out := make([]float64, r.Int(4)+1)
	scale := []float64{1, 1, 1e-12, 1e-6, 1e6, 1e12}[r.Int(6)]
	for k := range out {
		out[k] = scale * []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 1e-3, 0.5, 1, 3, 1e3}[r.Int(10)]
	}
	return out
}

// fuzzWork returns an amount of work: unknown (0), small, huge or in
// between.
func fuzzWork(r *fuzzdata.Reader) float64 {
	if r.Int(4) == 0 {
		return []float64{0, 1e-300, 1e-3, 1, 1e15, 6e116, 1e300}[r.Int(7)]
	}
	return 1e3 * float64(1+r.Int(1000))
}
