package stride_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// gandivaMachine drives stride.GandivaFair through random arrivals,
// departures, progress reports, failures and repairs, and checks every
// decision: valid placements on healthy GPUs of a type each job can run
// on, every admitted job's tenant known, and a snapshot restored into a
// fresh scheduler deciding exactly the same next round.
type gandivaMachine struct {
	c       topology.Cluster
	types   []topology.GPUType
	set     stride.GandivaSettings
	s       *stride.GandivaFair
	now     float64
	next    int
	jobs    map[alloc.JobID]alloc.Job
	speed   map[alloc.JobID][]float64 // true rates, the scheduler only sees runs
	done    map[alloc.JobID]float64
	failed  map[topology.GPU]bool
	pending []round.Event
}

const gandivaQuantum = 60.0

func newGandivaMachine(t *rapid.T) *gandivaMachine {
	m := &gandivaMachine{jobs: map[alloc.JobID]alloc.Job{}, speed: map[alloc.JobID][]float64{}, done: map[alloc.JobID]float64{}, failed: map[topology.GPU]bool{}}
	for k := range rapid.IntRange(1, 3).Draw(t, "types") {
		typ := topology.GPUType(fmt.Sprint("T", k))
		m.types = append(m.types, typ)
		for s := range rapid.IntRange(1, 3).Draw(t, "servers") {
			m.c.Servers = append(m.c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", typ, s), Type: typ, GPUs: rapid.SampledFrom([]int{1, 2, 4}).Draw(t, "gpus")})
		}
	}
	m.set = stride.GandivaSettings{
		Quantum:    gandivaQuantum,
		Trading:    rapid.Bool().Draw(t, "trading"),
		Migrations: rapid.IntRange(1, 3).Draw(t, "migrations"),
		MaxPerGPU:  rapid.SampledFrom([]int{0, 1, 2}).Draw(t, "maxPerGPU"),
		Tickets:    func(id alloc.TenantID) float64 { return float64(len(id)) },
		Pack:       rapid.Bool().Draw(t, "pack"),
	}
	var err error
	if m.s, err = stride.NewGandivaFair(m.c, m.types, &m.set); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *gandivaMachine) count(k int) int {
	n := 0
	for _, s := range m.c.Servers {
		if s.Type == m.types[k] {
			n += s.GPUs
		}
	}
	return n
}

func (m *gandivaMachine) ids() []alloc.JobID {
	var ids []alloc.JobID
	for id := range m.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *gandivaMachine) apply(t *rapid.T, e ...round.Event) {
	if err := m.s.Apply(e...); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func (m *gandivaMachine) Arrive(t *rapid.T) {
	m.flush(t)
	m.now += rapid.SampledFrom([]float64{0, 10}).Draw(t, "dt")
	id := alloc.JobID(fmt.Sprintf("j%03d", m.next))
	m.next++
	gang := rapid.SampledFrom([]int{1, 1, 1, 2, 4, 8}).Draw(t, "gang")
	rates := make([]float64, len(m.types))
	speed := make([]float64, len(m.types))
	fits := false
	for k := range rates {
		rates[k] = rapid.SampledFrom([]float64{0, 1, 1, 1}).Draw(t, "runs")
		speed[k] = float64(k+1) * rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, "speed")
		fits = fits || (rates[k] > 0 && gang <= m.count(k))
	}
	if !fits {
		k := rapid.IntRange(0, len(m.types)-1).Draw(t, "k")
		rates[k] = 1
		gang = min(gang, m.count(k))
	}
	j := alloc.Job{ID: id, Owner: alloc.TenantID(rapid.SampledFrom([]string{"a", "bb", "ccc", "dddd"}).Draw(t, "owner")), Gang: gang, Weight: 1, Rates: rates}
	m.apply(t, round.Arrive(m.now, j, 0))
	m.jobs[id], m.speed[id] = j, speed
}

func (m *gandivaMachine) Depart(t *rapid.T) {
	if len(m.jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.ids()).Draw(t, "job")
	m.flush(t)
	m.now += rapid.SampledFrom([]float64{0, 5}).Draw(t, "dt")
	m.apply(t, round.Depart(m.now, id))
	delete(m.jobs, id)
}

// flush reports the progress made in the last lease.
func (m *gandivaMachine) flush(t *rapid.T) {
	var ev []round.Event
	for _, e := range m.pending {
		if _, ok := m.jobs[e.Job.ID]; ok {
			ev = append(ev, e)
		}
	}
	m.pending = nil
	if len(ev) > 0 {
		m.apply(t, ev...)
	}
}

func (m *gandivaMachine) gpus() []topology.GPU { return m.c.AllGPUs() }

func (m *gandivaMachine) Fail(t *rapid.T) {
	var ok []topology.GPU
	for _, g := range m.gpus() {
		if !m.failed[g] {
			ok = append(ok, g)
		}
	}
	if len(ok) <= 1 {
		t.Skip("too few GPUs left")
	}
	g := rapid.SampledFrom(ok).Draw(t, "gpu")
	m.flush(t)
	m.apply(t, round.Fail(m.now, g))
	m.failed[g] = true
}

func (m *gandivaMachine) Repair(t *rapid.T) {
	var bad []topology.GPU
	for _, g := range m.gpus() {
		if m.failed[g] {
			bad = append(bad, g)
		}
	}
	if len(bad) == 0 {
		t.Skip("nothing failed")
	}
	g := rapid.SampledFrom(bad).Draw(t, "gpu")
	m.flush(t)
	m.apply(t, round.Repair(m.now, g))
	delete(m.failed, g)
}

// BadInput feeds input the scheduler must refuse with a typed error, and
// checks that it leaves the state unchanged.
func (m *gandivaMachine) BadInput(t *rapid.T) {
	before, err := m.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	some := alloc.JobID("nobody")
	if ids := m.ids(); len(ids) > 0 {
		some = ids[0]
	}
	huge := alloc.Job{ID: "huge", Gang: len(m.gpus()) + 1, Weight: 1, Rates: slices.Repeat([]float64{1}, len(m.types))}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"NaN time", m.s.Profile(some, m.types[0], math.NaN()), gpufair.ErrValue},
		{"zero time", m.s.Profile(some, m.types[0], 0), gpufair.ErrValue},
		{"negative time", m.s.Profile(some, m.types[0], -1), gpufair.ErrValue},
		{"time whose rate overflows", m.s.Profile(some, m.types[0], 1e-320), gpufair.ErrValue},
		{"unknown type", m.s.Profile(some, "TPU", 1), gpufair.ErrUnknownType},
		{"unknown job", m.s.Profile("nobody", m.types[0], 1), gpufair.ErrUnknownID},
		{"job larger than every type", m.s.Apply(round.Arrive(m.now, huge, 0)), gpufair.ErrTooLarge},
	} {
		if tc.name != "unknown job" && some == "nobody" && tc.want != gpufair.ErrTooLarge {
			continue
		}
		var ie *gpufair.InputError
		if !errors.Is(tc.err, tc.want) || !errors.As(tc.err, &ie) {
			t.Fatalf("%s: %v, want an *InputError wrapping %v", tc.name, tc.err, tc.want)
		}
	}
	after, err := m.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Fatalf("refused input changed the state (-before +after):\n%s", diff)
	}
}

func (m *gandivaMachine) Decide(t *rapid.T) {
	m.flush(t)
	m.now += gandivaQuantum
	snap, err := m.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.s.Decide(context.Background(), m.now)
	if err != nil {
		t.Fatalf("Decide(%v): %v", m.now, err)
	}
	// A scheduler restored from the snapshot decides the same round.
	r, err := stride.NewGandivaFair(m.c, m.types, &m.set)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	d2, err := r.Decide(context.Background(), m.now)
	if err != nil {
		t.Fatalf("restored Decide: %v", err)
	}
	if diff := cmp.Diff(d, d2); diff != "" {
		t.Fatalf("restored scheduler decides otherwise (-live +restored):\n%s", diff)
	}
	m.check(t, d)
	m.checkRunnable(t)
	for _, p := range d.Placements {
		k := slices.Index(m.types, p.Type)
		for _, id := range p.Jobs {
			m.done[id] += gandivaQuantum * m.speed[id][k]
			m.pending = append(m.pending, round.Progress(m.now+gandivaQuantum, id, m.done[id]))
		}
	}
	m.now += gandivaQuantum
}

func (m *gandivaMachine) check(t *rapid.T, d *round.Decision) {
	used := map[topology.GPU]bool{}
	for _, p := range d.Placements {
		k := slices.Index(m.types, p.Type)
		if len(p.Jobs) != 1 {
			t.Fatalf("placement of %d jobs", len(p.Jobs))
		}
		j, ok := m.jobs[p.Jobs[0]]
		switch {
		case !ok:
			t.Fatalf("placed %s, not in the system", p.Jobs[0])
		case k < 0 || !(j.Rates[k] > 0):
			t.Fatalf("%s on %q, where it cannot run", j.ID, p.Type)
		case len(p.GPUs) != j.Gang:
			t.Fatalf("%s has %d GPUs for a gang of %d", j.ID, len(p.GPUs), j.Gang)
		}
		for _, g := range p.GPUs {
			if m.failed[g] || used[g] || m.c.Servers[g.Server].Type != p.Type {
				t.Fatalf("%s on GPU %v: failed %v, used %v, type %q", j.ID, g, m.failed[g], used[g], m.c.Servers[g.Server].Type)
			}
			used[g] = true
		}
	}
}

// checkRunnable: after a decision, every admitted job can run where it is
// placed, on healthy GPUs, unless no type it runs on could hold its gang:
// on one server with that many healthy GPUs for a gang that fits a server,
// on the type's healthy GPUs for a larger one.
func (m *gandivaMachine) checkRunnable(t *rapid.T) {
	up := make([]int, len(m.c.Servers))
	for _, g := range m.gpus() {
		if !m.failed[g] {
			up[g.Server]++
		}
	}
	fits := func(typ topology.GPUType, gang int) bool {
		largest, total, healthy := 0, 0, 0
		for l, sv := range m.c.Servers {
			if sv.Type == typ {
				largest, total, healthy = max(largest, sv.GPUs), total+up[l], max(healthy, up[l])
			}
		}
		if gang > largest {
			return gang <= total
		}
		return gang <= healthy
	}
	f := m.s.Fair()
	for _, u := range f.Tenants() {
		for _, id := range f.TenantJobs(u.ID) {
			runs := true
			for _, p := range f.Split().Parts(id) {
				runs = runs && p.GPUs <= up[p.Server]
			}
			if runs {
				continue
			}
			j := m.jobs[id]
			for k, typ := range m.types {
				if j.Rates[k] > 0 && fits(typ, j.Gang) {
					typ0, _ := f.Type(id)
					t.Fatalf("%s (gang %d) left on %q servers it cannot run on, though %q could hold it", id, j.Gang, typ0, typ)
				}
			}
		}
	}
}

// Check: every admitted job is in the system, on a type it can run on.
func (m *gandivaMachine) Check(t *rapid.T) {
	f := m.s.Fair()
	for _, u := range f.Tenants() {
		for _, id := range f.TenantJobs(u.ID) {
			j, ok := m.jobs[id]
			typ, _ := f.Type(id)
			if !ok || j.Owner != u.ID || !(j.Rates[slices.Index(m.types, typ)] > 0) {
				t.Fatalf("admitted %s of %s on %q: in the system %v", id, u.ID, typ, ok)
			}
		}
	}
}

func TestGandivaFairMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newGandivaMachine(t)
		t.Repeat(map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "fail": m.Fail, "repair": m.Repair,
			"decide": m.Decide, "bad": m.BadInput, "": m.Check,
		})
	})
}
