// Package roundtest drives a round.Scheduler through random events and
// decisions with rapid, and checks what the round contract promises of
// every scheduler: valid placements, refused input that changes nothing,
// refused snapshots, and snapshots that restore to the same next decision.
// A scheduler's own properties (work conservation, priorities, lease
// budgets) are checked by its package's tests on the decisions Machine
// returns. Only tests import this package.
package roundtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// Scheduler is a round.Scheduler with its ledger, as every scheduler of the
// library has.
type Scheduler interface {
	round.Scheduler
	Ledger() *round.Ledger
}

// Work is the total work of every job that arrives.
const Work = 1000.0

// Machine is one run: the cluster, the scheduler, and a model of what it
// was told. Its exported methods with a *rapid.T are rapid actions.
type Machine struct {
	C     topology.Cluster
	Types []topology.GPUType
	S     Scheduler
	// Make builds a fresh scheduler of the same mechanism and settings on
	// a cluster with the same types.
	Make func(c topology.Cluster) (Scheduler, error)
	// Round is the usual time between decisions.
	Round float64
	// Snap makes every decision a snapshot round trip: the scheduler is
	// snapshotted, restored into a fresh one, both decide, and the
	// decisions must be equal; the restored one carries on.
	Snap bool

	Now    float64
	Jobs   map[alloc.JobID]alloc.Job
	Done   map[alloc.JobID]float64 // work done, as reported
	Failed map[topology.GPU]bool
	// Last is the lease in force, nil before the first decision; Cut the
	// jobs whose part of it a failure ended, and when.
	Last *round.Decision
	Cut  map[alloc.JobID]float64
	next int
}

// New draws a cluster of 1 to 3 GPU types, each on 1 to 3 servers of 1 to
// 4 GPUs, and builds the scheduler on it with make.
func New(t *rapid.T, round float64, snap bool, make func(c topology.Cluster, types []topology.GPUType) (Scheduler, error)) *Machine {
	m := &Machine{
		Round: round, Snap: snap,
		Jobs: map[alloc.JobID]alloc.Job{}, Done: map[alloc.JobID]float64{},
		Failed: map[topology.GPU]bool{}, Cut: map[alloc.JobID]float64{},
	}
	for k := range rapid.IntRange(1, 3).Draw(t, "types") {
		typ := topology.GPUType(fmt.Sprint("T", k))
		m.Types = append(m.Types, typ)
		for s := range rapid.IntRange(1, 3).Draw(t, "servers") {
			m.C.Servers = append(m.C.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", typ, s), Type: typ, GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
		}
	}
	m.Make = func(c topology.Cluster) (Scheduler, error) { return make(c, m.Types) }
	var err error
	if m.S, err = m.Make(m.C); err != nil {
		t.Fatal(err)
	}
	return m
}

// Count returns the GPUs of the k-th type, failed ones included.
func (m *Machine) Count(k int) int {
	n := 0
	for _, s := range m.C.Servers {
		if s.Type == m.Types[k] {
			n += s.GPUs
		}
	}
	return n
}

// IDs returns the jobs in the system, sorted.
func (m *Machine) IDs() []alloc.JobID {
	ids := make([]alloc.JobID, 0, len(m.Jobs))
	for id := range m.Jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *Machine) apply(t *rapid.T, e round.Event) {
	if err := m.S.Apply(e); err != nil {
		t.Fatalf("Apply(%v %s): %v", e.Kind, e.Job.ID, err)
	}
}

// Arrive submits a job of 1 to 4 GPUs, of Work units of work, with rates
// drawn over the types (at least one type it fits), owned by one of three
// tenants, and returns it.
func (m *Machine) Arrive(t *rapid.T) alloc.Job {
	m.Now += rapid.SampledFrom([]float64{0, 0, 10}).Draw(t, "dt")
	id := alloc.JobID(fmt.Sprintf("j%03d", m.next))
	m.next++
	gang := rapid.SampledFrom([]int{1, 1, 1, 2, 4}).Draw(t, "gang")
	rates := make([]float64, len(m.Types))
	fits := false
	for k := range rates {
		rates[k] = rapid.SampledFrom([]float64{0, 0.5, 1, 2, 3.5}).Draw(t, "rate")
		fits = fits || (rates[k] > 0 && gang <= m.Count(k))
	}
	if !fits {
		k := rapid.IntRange(0, len(m.Types)-1).Draw(t, "k")
		rates[k] = 1
		gang = min(gang, m.Count(k))
	}
	j := alloc.Job{ID: id, Owner: alloc.TenantID(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "owner")), Gang: gang, Weight: 1, Rates: rates}
	m.apply(t, round.Arrive(m.Now, j, Work))
	m.Jobs[id] = j
	return j
}

// Depart withdraws a job.
func (m *Machine) Depart(t *rapid.T) {
	if len(m.Jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.IDs()).Draw(t, "job")
	m.Now += rapid.SampledFrom([]float64{0, 5, 30}).Draw(t, "dt")
	m.apply(t, round.Depart(m.Now, id))
	delete(m.Jobs, id)
	delete(m.Done, id)
}

// Progress reports work done by a job.
func (m *Machine) Progress(t *rapid.T) {
	if len(m.Jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.IDs()).Draw(t, "job")
	m.Done[id] = min(m.Done[id]+rapid.SampledFrom([]float64{10, 100, 400}).Draw(t, "work"), Work)
	m.apply(t, round.Progress(m.Now, id, m.Done[id]))
}

// Fail fails a working GPU, which ends the lease of the gang on it.
func (m *Machine) Fail(t *rapid.T) {
	var ok []topology.GPU
	for _, g := range m.C.AllGPUs() {
		if !m.Failed[g] {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		t.Skip("every GPU failed")
	}
	g := rapid.SampledFrom(ok).Draw(t, "gpu")
	m.Now += rapid.SampledFrom([]float64{0, 20, 60}).Draw(t, "dt")
	m.apply(t, round.Fail(m.Now, g))
	m.Failed[g] = true
	if m.Last == nil {
		return
	}
	for _, p := range m.Last.Placements {
		if slices.Contains(p.GPUs, g) {
			for _, id := range p.Jobs {
				if _, done := m.Cut[id]; !done {
					m.Cut[id] = m.Now
				}
			}
		}
	}
}

// Repair repairs a failed GPU.
func (m *Machine) Repair(t *rapid.T) {
	var bad []topology.GPU
	for _, g := range m.C.AllGPUs() {
		if m.Failed[g] {
			bad = append(bad, g)
		}
	}
	if len(bad) == 0 {
		t.Skip("nothing failed")
	}
	g := rapid.SampledFrom(bad).Draw(t, "gpu")
	m.apply(t, round.Repair(m.Now, g))
	delete(m.Failed, g)
}

// BadInput feeds calls the scheduler must refuse (events after a good one
// in the same call, a decision out of order or with its context done), and
// checks that they leave its state unchanged.
func (m *Machine) BadInput(t *rapid.T) {
	before, err := m.S.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	ones := slices.Repeat([]float64{1}, len(m.Types))
	bad := []struct {
		e    round.Event
		want error
	}{
		{round.Depart(m.Now, "nobody"), gpufair.ErrUnknownID},
		{round.Fail(m.Now, topology.GPU{Server: len(m.C.Servers), Slot: 0}), gpufair.ErrUnknownID},
		{round.Arrive(m.Now-1, alloc.Job{ID: "late", Gang: 1, Weight: 1, Rates: ones}, 0), gpufair.ErrOrder},
		{round.Arrive(m.Now, alloc.Job{ID: "short", Gang: 1, Weight: 1, Rates: []float64{1, 1, 1, 1}}, 0), gpufair.ErrShape},
		{round.Arrive(m.Now, alloc.Job{ID: "huge", Gang: 100, Weight: 1, Rates: ones}, 0), gpufair.ErrTooLarge},
	}
	i := rapid.IntRange(0, len(bad)-1).Draw(t, "bad")
	evs := []round.Event{round.Arrive(m.Now, alloc.Job{ID: "good", Gang: 1, Weight: 1, Rates: ones}, 0), bad[i].e}
	err = m.S.Apply(evs...)
	var ie *gpufair.InputError
	if !errors.Is(err, bad[i].want) || !errors.As(err, &ie) {
		t.Fatalf("Apply(%v) = %v, want an *InputError wrapping %v", bad[i].e.Kind, err, bad[i].want)
	}
	if m.Last != nil {
		if _, err := m.S.Decide(context.Background(), m.Last.Start); !errors.Is(err, gpufair.ErrOrder) {
			t.Fatalf("Decide at the start of the lease in force: %v, want ErrOrder", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.S.Decide(ctx, m.Now+m.Round); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide with a cancelled context: %v, want context.Canceled", err)
	}
	after, _ := m.S.Snapshot()
	if string(before) != string(after) {
		t.Fatalf("a refused call changed the state:\n%s", cmp.Diff(string(before), string(after)))
	}
}

// BadSnapshot restores snapshots the scheduler must refuse (corrupt, of
// another cluster, and others, for example of other mechanisms), and
// checks that they leave its state unchanged.
func (m *Machine) BadSnapshot(t *rapid.T, others ...[]byte) {
	before, _ := m.S.Snapshot()
	other := topology.Cluster{Servers: slices.Clone(m.C.Servers)}
	other.Servers[0].GPUs++
	o, err := m.Make(other)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := o.Snapshot()
	for _, snap := range append([][]byte{before[:len(before)/2], []byte(`{"version": 1}`), foreign, []byte("null")}, others...) {
		if err := m.S.Restore(snap); !errors.Is(err, gpufair.ErrSnapshot) {
			t.Fatalf("Restore(%.60q) = %v, want ErrSnapshot", snap, err)
		}
	}
	after, _ := m.S.Snapshot()
	if string(before) != string(after) {
		t.Fatal("a refused Restore changed the state")
	}
}

// Decide takes the next decision, a round or so after the latest event
// (with Snap, through a snapshot round trip), hands it to check with its
// time while Last and Cut still describe the lease before it, then makes
// it the lease in force.
func (m *Machine) Decide(t *rapid.T, check func(now float64, d *round.Decision)) {
	now := m.Now + rapid.SampledFrom([]float64{m.Round, m.Round, 0.4 * m.Round, 2.5 * m.Round}).Draw(t, "wait")
	if m.Last != nil {
		now = max(now, m.Last.Start+1)
	}
	var restored Scheduler
	if m.Snap {
		snap, err := m.S.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if restored, err = m.Make(m.C); err != nil {
			t.Fatal(err)
		}
		if err := restored.Restore(snap); err != nil {
			t.Fatalf("Restore of its own snapshot: %v", err)
		}
	}
	d, err := m.S.Decide(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if restored != nil {
		got, err := restored.Decide(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(d, got); diff != "" {
			t.Fatalf("the restored scheduler's decision differs (-original +restored):\n%s", diff)
		}
		m.S = restored
	}
	check(now, d)
	m.Last, m.Now = d, now
	clear(m.Cut)
}

// Placed is what CheckPlacements found in a decision: the type index each
// placed job runs on, and the GPUs of each type left free and healthy.
type Placed struct {
	Type    map[alloc.JobID]int
	Free    []int
	Healthy []int
}

// CheckPlacements checks that every placement of d runs one job in the
// system, on Gang healthy slots of one type it has a rate on, no slot used
// twice and no job placed twice.
func (m *Machine) CheckPlacements(t *rapid.T, d *round.Decision) Placed {
	used := map[topology.GPU]bool{}
	p := Placed{Type: map[alloc.JobID]int{}, Free: make([]int, len(m.Types))}
	for k := range m.Types {
		p.Free[k] = m.Count(k)
	}
	for g := range m.Failed {
		p.Free[slices.Index(m.Types, m.C.Servers[g.Server].Type)]--
	}
	p.Healthy = slices.Clone(p.Free)
	for _, pl := range d.Placements {
		k := slices.Index(m.Types, pl.Type)
		if len(pl.Jobs) != 1 {
			t.Fatalf("placement of %d jobs", len(pl.Jobs))
		}
		j, ok := m.Jobs[pl.Jobs[0]]
		if !ok || len(pl.GPUs) != j.Gang || k < 0 || !(j.Rates[k] > 0) {
			t.Fatalf("placement %+v of job %+v", pl, j)
		}
		if _, twice := p.Type[j.ID]; twice {
			t.Fatalf("job %s placed twice", j.ID)
		}
		p.Type[j.ID] = k
		for _, g := range pl.GPUs {
			if !m.C.Has(g) || m.C.Servers[g.Server].Type != pl.Type || used[g] || m.Failed[g] {
				t.Fatalf("job %s on slot %v: used %v, failed %v", j.ID, g, used[g], m.Failed[g])
			}
			used[g] = true
		}
		p.Free[k] -= j.Gang
	}
	return p
}

// CheckWorkConserving checks that no waiting job fits the GPUs p left idle.
func (m *Machine) CheckWorkConserving(t *rapid.T, p Placed) {
	for _, id := range m.IDs() {
		if _, ok := p.Type[id]; ok {
			continue
		}
		j := m.Jobs[id]
		for k, r := range j.Rates {
			if r > 0 && j.Gang <= p.Free[k] {
				t.Fatalf("job %s waits while %d %s GPUs are idle (gang %d)", id, p.Free[k], m.Types[k], j.Gang)
			}
		}
	}
}

// Check is the invariant: the scheduler's snapshot is JSON.
func (m *Machine) Check(t *rapid.T) {
	snap, err := m.S.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(snap) {
		t.Fatal("snapshot is not JSON")
	}
}
