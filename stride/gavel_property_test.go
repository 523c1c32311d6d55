package stride_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// gavelMachine drives stride.Gavel through random events and decisions,
// and checks every decision against a model of its own: valid
// placements, work conservation, the preemption budget across failures,
// the time each job received, and snapshots.
type gavelMachine struct {
	c         topology.Cluster
	types     []topology.GPUType
	set       stride.GavelSettings
	s         *stride.Gavel
	now       float64
	next      int
	jobs      map[alloc.JobID]alloc.Job
	failed    map[topology.GPU]bool
	last      *round.Decision           // the lease in force
	cut       map[alloc.JobID]float64   // jobs whose lease ended early
	held      map[alloc.JobID]int       // rounds in a row on the same slots
	recv      map[alloc.JobID][]float64 // the model's received time
	snapEvery bool
	pol       alloc.Policy
	labels    map[alloc.JobID]string // space sharing: each job's label
}

// sharingPolicy, packingPolicy and fifoPackingPolicy mark the
// space-sharing, Gandiva packing and FIFO packing draws of newGavelMachine.
type (
	sharingPolicy     struct{ alloc.SpaceSharing }
	packingPolicy     struct{ alloc.GandivaPacking }
	fifoPackingPolicy struct{ alloc.FIFOPacking }
)

const gavelRound = 100.0

func newGavelMachine(t *rapid.T, snap bool) *gavelMachine {
	nt := rapid.IntRange(1, 3).Draw(t, "types")
	m := &gavelMachine{
		jobs: map[alloc.JobID]alloc.Job{}, failed: map[topology.GPU]bool{}, cut: map[alloc.JobID]float64{},
		held: map[alloc.JobID]int{}, recv: map[alloc.JobID][]float64{}, snapEvery: snap,
	}
	for k := range nt {
		typ := topology.GPUType(fmt.Sprint("T", k))
		m.types = append(m.types, typ)
		for s := range rapid.IntRange(1, 3).Draw(t, "servers") {
			m.c.Servers = append(m.c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", typ, s), Type: typ, GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
		}
	}
	m.set = stride.GavelSettings{
		Round:              gavelRound,
		MinLease:           rapid.SampledFrom([]int{0, 2, 3}).Draw(t, "minLease"),
		NoWorkConservation: rapid.Bool().Draw(t, "noWorkConservation"),
		ResetInterval:      rapid.SampledFrom([]float64{0, 0, 1, 3 * gavelRound}).Draw(t, "resetInterval"),
		PairPriorities:     rapid.Bool().Draw(t, "pairPriorities"),
	}
	m.pol = rapid.SampledFrom([]alloc.Policy{alloc.MaxMin{}, alloc.MaxTotalThroughput{}, alloc.MaxMinAgnostic{}, sharingPolicy{}, packingPolicy{}, fifoPackingPolicy{}}).Draw(t, "policy")
	_, packing := m.pol.(packingPolicy)
	_, fifo := m.pol.(fifoPackingPolicy)
	if _, ok := m.pol.(sharingPolicy); ok || packing || fifo {
		// Space sharing: jobs labelled a or b and their gang, with drawn
		// co-located rates for each pair of labels of a gang on each type.
		m.labels = map[alloc.JobID]string{}
		var pairs []alloc.PairRate
		for _, typ := range m.types {
			for _, ab := range [][2]string{{"a", "a"}, {"a", "b"}, {"b", "b"}} {
				ra := rapid.SampledFrom([]float64{0, 0.4, 0.8}).Draw(t, "pairRate")
				rb := rapid.SampledFrom([]float64{0, 0.4, 0.8}).Draw(t, "pairRate")
				for _, g := range []string{"1", "2", "4"} {
					pairs = append(pairs, alloc.PairRate{A: ab[0] + g, B: ab[1] + g, Type: typ, RateA: ra, RateB: rb})
				}
			}
		}
		obj := rapid.SampledFrom([]alloc.SharingObjective{alloc.SharingMaxMin, alloc.SharingMaxTotal, alloc.SharingMaxMinThenTotal, alloc.SharingMinMakespan, alloc.SharingMinMakespanThenTotal, alloc.SharingFIFO, alloc.SharingWaterFilling}).Draw(t, "objective")
		m.pol = alloc.SpaceSharing{Objective: obj}
		switch {
		case packing:
			m.pol = alloc.GandivaPacking{Seed: 1}
		case fifo:
			m.pol = alloc.FIFOPacking{}
		}
		m.set.Inputs = func(_ float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
			labels := make([]string, len(jobs))
			for i, j := range jobs {
				labels[i] = fmt.Sprint(m.labels[j.ID], j.Gang)
			}
			var ps []alloc.PairRate // on the types with healthy GPUs
			for _, q := range pairs {
				if slices.Contains(p.Capacity.Types, q.Type) {
					ps = append(ps, q)
				}
			}
			switch {
			case packing:
				return alloc.GandivaPacking{JobTypes: labels, Pairs: ps, Seed: 1}
			case fifo:
				arr := make([]float64, len(jobs))
				for i, j := range jobs {
					arr[i] = j.Arrival
				}
				return alloc.FIFOPacking{Arrival: arr, JobTypes: labels, Pairs: ps, Threshold: 1}
			}
			arr := make([]float64, len(jobs))
			for i, j := range jobs {
				arr[i] = j.Arrival
			}
			return alloc.SpaceSharing{Objective: obj, JobTypes: labels, Pairs: ps, RemainingSteps: stride.RemainingSteps(p, jobs), Arrival: arr}
		}
	}
	var err error
	if m.s, err = stride.NewGavel(m.pol, m.c, m.types, &m.set); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *gavelMachine) count(k int) int {
	n := 0
	for _, s := range m.c.Servers {
		if s.Type == m.types[k] {
			n += s.GPUs
		}
	}
	return n
}

func (m *gavelMachine) allGPUs() []topology.GPU {
	var out []topology.GPU
	for s, sv := range m.c.Servers {
		for i := range sv.GPUs {
			out = append(out, topology.GPU{Server: s, Slot: i})
		}
	}
	return out
}

func (m *gavelMachine) ids() []alloc.JobID {
	var ids []alloc.JobID
	for id := range m.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *gavelMachine) apply(t *rapid.T, e round.Event) {
	if err := m.s.Apply(e); err != nil {
		t.Fatalf("Apply(%v %s): %v", e.Kind, e.Job.ID, err)
	}
}

func (m *gavelMachine) Arrive(t *rapid.T) {
	m.now += rapid.SampledFrom([]float64{0, 0, 10}).Draw(t, "dt")
	id := alloc.JobID(fmt.Sprintf("j%03d", m.next))
	m.next++
	gang := rapid.SampledFrom([]int{1, 1, 1, 2, 4}).Draw(t, "gang")
	if m.labels != nil {
		m.labels[id] = rapid.SampledFrom([]string{"a", "b"}).Draw(t, "label")
	}
	rates := make([]float64, len(m.types))
	fits := false
	for k := range rates {
		rates[k] = rapid.SampledFrom([]float64{0, 0.5, 1, 2, 3.5}).Draw(t, "rate")
		fits = fits || (rates[k] > 0 && gang <= m.count(k))
	}
	if !fits {
		k := rapid.IntRange(0, len(m.types)-1).Draw(t, "k")
		rates[k] = 1
		gang = min(gang, m.count(k))
	}
	j := alloc.Job{ID: id, Owner: alloc.TenantID(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "owner")), Gang: gang, Weight: 1, Rates: rates}
	m.apply(t, round.Arrive(m.now, j, 1000))
	m.jobs[id] = j
	m.recv[id] = make([]float64, len(m.types))
}

func (m *gavelMachine) Depart(t *rapid.T) {
	if len(m.jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.ids()).Draw(t, "job")
	m.now += rapid.SampledFrom([]float64{0, 5, 30}).Draw(t, "dt")
	m.apply(t, round.Depart(m.now, id))
	delete(m.jobs, id)
	delete(m.recv, id)
}

func (m *gavelMachine) Fail(t *rapid.T) {
	var ok []topology.GPU
	for _, g := range m.allGPUs() {
		if !m.failed[g] {
			ok = append(ok, g)
		}
	}
	if len(ok) == 0 {
		t.Skip("every GPU failed")
	}
	g := rapid.SampledFrom(ok).Draw(t, "gpu")
	m.now += rapid.SampledFrom([]float64{0, 20, 60}).Draw(t, "dt")
	m.apply(t, round.Fail(m.now, g))
	m.failed[g] = true
	if m.last != nil {
		for _, p := range m.last.Placements {
			if slices.Contains(p.GPUs, g) {
				for _, id := range p.Jobs {
					if _, done := m.cut[id]; !done {
						m.cut[id] = m.now
					}
				}
			}
		}
	}
}

func (m *gavelMachine) Repair(t *rapid.T) {
	var bad []topology.GPU
	for _, g := range m.allGPUs() {
		if m.failed[g] {
			bad = append(bad, g)
		}
	}
	if len(bad) == 0 {
		t.Skip("nothing failed")
	}
	g := rapid.SampledFrom(bad).Draw(t, "gpu")
	m.apply(t, round.Repair(m.now, g))
	delete(m.failed, g)
}

// BadInput feeds events the scheduler must refuse, and checks that they
// leave its state unchanged.
func (m *gavelMachine) BadInput(t *rapid.T) {
	before, err := m.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		e    round.Event
		want error
	}{
		{round.Depart(m.now, "nobody"), gpufair.ErrUnknownID},
		{round.Fail(m.now, topology.GPU{Server: len(m.c.Servers), Slot: 0}), gpufair.ErrUnknownID},
		{round.Arrive(m.now-1, alloc.Job{ID: "late", Gang: 1, Weight: 1, Rates: make([]float64, len(m.types))}, 0), gpufair.ErrOrder},
		{round.Arrive(m.now, alloc.Job{ID: "short", Gang: 1, Weight: 1, Rates: []float64{1, 1, 1, 1}}, 0), gpufair.ErrShape},
	}
	i := rapid.IntRange(0, len(bad)-1).Draw(t, "bad")
	// A good event before the bad one must not be applied either.
	evs := []round.Event{round.Arrive(m.now, alloc.Job{ID: "good", Gang: 1, Weight: 1, Rates: slices.Repeat([]float64{1}, len(m.types))}, 0), bad[i].e}
	err = m.s.Apply(evs...)
	var ie *gpufair.InputError
	if !errors.Is(err, bad[i].want) || !errors.As(err, &ie) {
		t.Fatalf("Apply(%v) = %v, want an *InputError wrapping %v", bad[i].e.Kind, err, bad[i].want)
	}
	if _, err := m.s.Decide(context.Background(), m.now-1); m.last != nil && m.now-1 >= m.last.Start && !errors.Is(err, gpufair.ErrOrder) {
		t.Fatalf("Decide before the latest event: %v, want ErrOrder", err)
	}
	after, _ := m.s.Snapshot()
	if string(before) != string(after) {
		t.Fatalf("a refused call changed the state:\n%s", cmp.Diff(string(before), string(after)))
	}
}

// BadSnapshot restores snapshots that must be refused, and checks that
// they leave the state unchanged.
func (m *gavelMachine) BadSnapshot(t *rapid.T) {
	before, _ := m.s.Snapshot()
	other := topology.Cluster{Servers: slices.Clone(m.c.Servers)}
	other.Servers[0].GPUs++
	o, err := stride.NewGavel(alloc.MaxMin{}, other, m.types, &m.set)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := o.Snapshot()
	for _, snap := range [][]byte{before[:len(before)/2], []byte(`{"version": 1}`), foreign, []byte("null")} {
		if err := m.s.Restore(snap); !errors.Is(err, gpufair.ErrSnapshot) {
			t.Fatalf("Restore(%.40q) = %v, want ErrSnapshot", snap, err)
		}
	}
	after, _ := m.s.Snapshot()
	if string(before) != string(after) {
		t.Fatal("a refused Restore changed the state")
	}
}

func (m *gavelMachine) Decide(t *rapid.T) {
	now := m.now + rapid.SampledFrom([]float64{gavelRound, gavelRound, 40, 250}).Draw(t, "wait")
	if m.last != nil {
		now = max(now, m.last.Start+1)
	}
	s := m.s
	if m.snapEvery {
		// A scheduler restored from a snapshot makes the same decision.
		snap, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		// A max-min scheduler must refuse another policy's snapshot.
		if m.s.Name() != "max-min" {
			o, err := stride.NewGavel(alloc.MaxMin{}, m.c, m.types, &m.set)
			if err != nil {
				t.Fatal(err)
			}
			if err := o.Restore(snap); !errors.Is(err, gpufair.ErrSnapshot) {
				t.Fatalf("a %s snapshot restored into max-min: %v", m.s.Name(), err)
			}
		}
		r, err := stride.NewGavel(m.pol, m.c, m.types, &m.set)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(snap); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		{
			want, err := m.s.Decide(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Decide(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("restored scheduler's decision differs (-original +restored):\n%s", diff)
			}
			m.s = r
			m.check(t, now, got)
			return
		}
	}
	d, err := s.Decide(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, now, d)
}

// check checks decision d, taken at now, and updates the model.
func (m *gavelMachine) check(t *rapid.T, now float64, d *round.Decision) {
	// The time received up to now.
	if m.last != nil {
		for _, p := range m.last.Placements {
			k := slices.Index(m.types, p.Type)
			for _, id := range p.Jobs {
				if _, ok := m.jobs[id]; !ok {
					continue
				}
				end := min(now, m.last.End)
				if c, ok := m.cut[id]; ok {
					end = min(end, c)
				}
				m.recv[id][k] += max(end-m.last.Start, 0)
			}
		}
	}
	for id, r := range m.recv {
		j, _ := m.s.Ledger().Job(id)
		if diff := cmp.Diff(r, j.Received); diff != "" {
			t.Fatalf("job %s received (-model +ledger):\n%s", id, diff)
		}
	}
	// Valid placements.
	used := map[topology.GPU]bool{}
	placed := map[alloc.JobID]round.Placement{}
	free := make([]int, len(m.types))
	for k := range m.types {
		free[k] = m.count(k)
	}
	for g := range m.failed {
		free[slices.Index(m.types, m.c.Servers[g.Server].Type)]--
	}
	for _, p := range d.Placements {
		k := slices.Index(m.types, p.Type)
		if len(p.Jobs) != 1 && (m.labels == nil || len(p.Jobs) != 2) {
			t.Fatalf("placement of %d jobs", len(p.Jobs))
		}
		var j alloc.Job
		for _, id := range p.Jobs {
			var ok bool
			j, ok = m.jobs[id]
			if !ok || len(p.GPUs) != j.Gang || !(j.Rates[k] > 0) {
				t.Fatalf("placement %+v of job %+v", p, j)
			}
			if _, twice := placed[j.ID]; twice {
				t.Fatalf("job %s placed twice", j.ID)
			}
			placed[j.ID] = p
		}
		for _, g := range p.GPUs {
			if m.c.Servers[g.Server].Type != p.Type || used[g] || m.failed[g] {
				t.Fatalf("job %s on slot %v: type %s, used %v, failed %v", j.ID, g, m.c.Servers[g.Server].Type, used[g], m.failed[g])
			}
			used[g] = true
		}
		free[k] -= j.Gang
	}
	// Work conservation: no waiting job fits the GPUs left idle.
	if !m.set.NoWorkConservation {
		for id, j := range m.jobs {
			if _, ok := placed[id]; ok {
				continue
			}
			for k, r := range j.Rates {
				if r > 0 && j.Gang <= free[k] {
					t.Fatalf("job %s waits while %d %s GPUs are idle (gang %d)", id, free[k], m.types[k], j.Gang)
				}
			}
		}
	}
	// The preemption budget: across failures, departures and arrivals,
	// a gang within its budget whose GPUs all work keeps its slots.
	if m.set.MinLease > 1 && m.last != nil && m.last.End >= now {
		for _, p := range m.last.Placements {
			for _, id := range p.Jobs {
				if _, cut := m.cut[id]; cut {
					continue // a GPU of its gang failed during the lease: it stopped
				}
				if _, ok := m.jobs[id]; !ok || m.held[id] >= m.set.MinLease || slices.ContainsFunc(p.GPUs, func(g topology.GPU) bool { return m.failed[g] }) {
					continue
				}
				if q, ok := placed[id]; !ok || !q.Renewed || !slices.Equal(q.GPUs, p.GPUs) {
					t.Fatalf("job %s within its budget (held %d of %d rounds) moved: %+v, then %+v", id, m.held[id], m.set.MinLease, p, q)
				}
			}
		}
	}
	held := map[alloc.JobID]int{}
	for _, p := range d.Placements {
		for _, id := range p.Jobs {
			if p.Renewed {
				held[id] = m.held[id] + 1
			} else {
				held[id] = 1
			}
		}
	}
	m.held, m.last, m.now = held, d, now
	clear(m.cut)
}

func (m *gavelMachine) Check(t *rapid.T) {
	snap, err := m.s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(snap) {
		t.Fatal("snapshot is not JSON")
	}
}

func runGavelMachine(t *testing.T, snap bool, actions func(m *gavelMachine) map[string]func(*rapid.T)) {
	rapid.Check(t, func(t *rapid.T) {
		m := newGavelMachine(t, snap)
		t.Repeat(actions(m))
	})
}

func TestGavelWorkConserving(t *testing.T) {
	runGavelMachine(t, false, func(m *gavelMachine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "decide": m.Decide, "badInput": m.BadInput, "": m.Check,
		}
	})
}

func TestGavelFailure(t *testing.T) {
	runGavelMachine(t, false, func(m *gavelMachine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide, "": m.Check,
		}
	})
}

func TestGavelSnapshot(t *testing.T) {
	runGavelMachine(t, true, func(m *gavelMachine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide,
			"badInput": m.BadInput, "badSnapshot": m.BadSnapshot, "": m.Check,
		}
	})
}
