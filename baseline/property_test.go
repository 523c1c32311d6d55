package baseline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// scheduler is a baseline with its ledger.
type scheduler interface {
	round.Scheduler
	Ledger() *round.Ledger
}

// mechanism builds one baseline for the state machine, and says which
// pairs its ranking certainly puts after others.
type mechanism struct {
	name string
	make func(m *machine, c topology.Cluster, types []topology.GPUType) (scheduler, error)
	// after reports whether, in the decision just taken at now, the pair
	// (r, type k) was ranked strictly after (w, type k); m.ran is the
	// model's record of the decisions before it.
	after func(m *machine, now float64, w, r *round.Job, k int) bool
}

const testRound = 100.0

// testThresholds are Tiresias' queue thresholds in the state machine:
// low enough for jobs to move down within a few rounds.
var testThresholds = []float64{150, 600}

func mechanisms() []mechanism {
	return []mechanism{
		{"tiresias", func(m *machine, c topology.Cluster, ty []topology.GPUType) (scheduler, error) {
			return baseline.NewTiresias(c, ty, &baseline.TiresiasSettings{Round: testRound, Thresholds: testThresholds, PromoteKnob: m.knob})
		}, func(m *machine, _ float64, w, r *round.Job, _ int) bool {
			qw, _ := m.s.(*baseline.Tiresias).Queue(w.ID)
			qr, _ := m.s.(*baseline.Tiresias).Queue(r.ID)
			return qr > qw
		}},
		{"gandiva", func(m *machine, c topology.Cluster, ty []topology.GPUType) (scheduler, error) {
			return baseline.NewGandiva(c, ty, &baseline.GandivaSettings{Round: testRound, Spread: func(id alloc.JobID) []float64 { return m.spread[id] }})
		}, func(m *machine, _ float64, w, r *round.Job, _ int) bool {
			rw, okw := m.ran[w.ID]
			rr, okr := m.ran[r.ID]
			return okr && (!okw || rr > rw)
		}},
		{"slaq", func(m *machine, c topology.Cluster, ty []topology.GPUType) (scheduler, error) {
			return baseline.NewSLAQ(c, ty, &baseline.SLAQSettings{Round: testRound})
		}, func(_ *machine, _ float64, w, r *round.Job, k int) bool {
			return slaqDrop(r, k) < slaqDrop(w, k)
		}},
		{"optimus", func(m *machine, c topology.Cluster, ty []topology.GPUType) (scheduler, error) {
			return baseline.NewOptimus(c, ty, &baseline.OptimusSettings{Round: testRound})
		}, func(_ *machine, now float64, w, r *round.Job, k int) bool {
			return baseline.MarginalGain(r, k, now) < baseline.MarginalGain(w, k, now)
		}},
		{"srtf", func(m *machine, c topology.Cluster, ty []topology.GPUType) (scheduler, error) {
			return baseline.NewSRTF(c, ty, &baseline.SRTFSettings{Round: testRound})
		}, func(_ *machine, _ float64, w, r *round.Job, k int) bool {
			return r.Remaining()/r.Rates[k] > w.Remaining()/w.Rates[k]
		}},
	}
}

// slaqDrop is the model of SLAQ's default loss drop per GPU over one
// round, for jobs of known work.
func slaqDrop(j *round.Job, k int) float64 {
	beta := (1/baseline.DefaultConverged - 1) / j.Work
	loss := func(x float64) float64 { return 1 / (1 + beta*min(x, j.Work)) }
	return (loss(j.Done) - loss(j.Done+j.Rates[k]*testRound)) / float64(j.Gang)
}

// machine drives one baseline through random events and decisions, and
// checks every decision: valid placements, work conservation, the
// baseline's own ranking, and snapshots.
type machine struct {
	mech   mechanism
	c      topology.Cluster
	types  []topology.GPUType
	s      scheduler
	now    float64
	next   int
	jobs   map[alloc.JobID]alloc.Job
	done   map[alloc.JobID]float64
	failed map[topology.GPU]bool
	last   *round.Decision
	ran    map[alloc.JobID]int // the latest decision that ran each job
	spread map[alloc.JobID][]float64
	knob   float64 // Tiresias' PromoteKnob
	snap   bool
}

const testWork = 1000.0

func newMachine(t *rapid.T, snap bool) *machine {
	m := &machine{
		mech: rapid.SampledFrom(mechanisms()).Draw(t, "mechanism"),
		jobs: map[alloc.JobID]alloc.Job{}, done: map[alloc.JobID]float64{}, failed: map[topology.GPU]bool{},
		ran: map[alloc.JobID]int{}, spread: map[alloc.JobID][]float64{}, snap: snap,
		knob: rapid.SampledFrom([]float64{0, 0, 1, 3}).Draw(t, "promoteKnob"),
	}
	for k := range rapid.IntRange(1, 3).Draw(t, "types") {
		typ := topology.GPUType(fmt.Sprint("T", k))
		m.types = append(m.types, typ)
		for s := range rapid.IntRange(1, 3).Draw(t, "servers") {
			m.c.Servers = append(m.c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", typ, s), Type: typ, GPUs: rapid.IntRange(1, 4).Draw(t, "gpus")})
		}
	}
	var err error
	if m.s, err = m.mech.make(m, m.c, m.types); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *machine) count(k int) int {
	n := 0
	for _, s := range m.c.Servers {
		if s.Type == m.types[k] {
			n += s.GPUs
		}
	}
	return n
}

func (m *machine) ids() []alloc.JobID {
	var ids []alloc.JobID
	for id := range m.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (m *machine) apply(t *rapid.T, e round.Event) {
	if err := m.s.Apply(e); err != nil {
		t.Fatalf("Apply(%v %s): %v", e.Kind, e.Job.ID, err)
	}
}

func (m *machine) Arrive(t *rapid.T) {
	m.now += rapid.SampledFrom([]float64{0, 0, 10}).Draw(t, "dt")
	id := alloc.JobID(fmt.Sprintf("j%03d", m.next))
	m.next++
	gang := rapid.SampledFrom([]int{1, 1, 1, 2, 4}).Draw(t, "gang")
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
	j := alloc.Job{ID: id, Gang: gang, Weight: 1, Rates: rates}
	m.apply(t, round.Arrive(m.now, j, testWork))
	m.jobs[id] = j
	if rapid.Bool().Draw(t, "placementSensitive") {
		// Gandiva's placement preference: half the rate spread out.
		m.spread[id] = make([]float64, len(rates))
		for k, r := range rates {
			m.spread[id][k] = r / 2
		}
	}
}

func (m *machine) Depart(t *rapid.T) {
	if len(m.jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.ids()).Draw(t, "job")
	m.now += rapid.SampledFrom([]float64{0, 5, 30}).Draw(t, "dt")
	m.apply(t, round.Depart(m.now, id))
	delete(m.jobs, id)
	delete(m.ran, id)
}

// Progress reports work done by a job, as a simulator or a production
// scheduler would at the end of a lease.
func (m *machine) Progress(t *rapid.T) {
	if len(m.jobs) == 0 {
		t.Skip("no job")
	}
	id := rapid.SampledFrom(m.ids()).Draw(t, "job")
	m.done[id] = min(m.done[id]+rapid.SampledFrom([]float64{10, 100, 400}).Draw(t, "work"), testWork)
	m.apply(t, round.Progress(m.now, id, m.done[id]))
}

func (m *machine) Fail(t *rapid.T) {
	var ok []topology.GPU
	for _, g := range m.c.AllGPUs() {
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
}

func (m *machine) Repair(t *rapid.T) {
	var bad []topology.GPU
	for _, g := range m.c.AllGPUs() {
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
func (m *machine) BadInput(t *rapid.T) {
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
		{round.Arrive(m.now, alloc.Job{ID: "huge", Gang: 100, Weight: 1, Rates: slices.Repeat([]float64{1}, len(m.types))}, 0), gpufair.ErrTooLarge},
	}
	i := rapid.IntRange(0, len(bad)-1).Draw(t, "bad")
	// A good event before the bad one must not be applied either.
	evs := []round.Event{round.Arrive(m.now, alloc.Job{ID: "good", Gang: 1, Weight: 1, Rates: slices.Repeat([]float64{1}, len(m.types))}, 0), bad[i].e}
	err = m.s.Apply(evs...)
	var ie *gpufair.InputError
	if !errors.Is(err, bad[i].want) || !errors.As(err, &ie) {
		t.Fatalf("Apply(%v) = %v, want an *InputError wrapping %v", bad[i].e.Kind, err, bad[i].want)
	}
	if m.last != nil {
		if _, err := m.s.Decide(context.Background(), m.last.Start); !errors.Is(err, gpufair.ErrOrder) {
			t.Fatalf("Decide at the start of the lease in force: %v, want ErrOrder", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.s.Decide(ctx, m.now+testRound); !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide with a cancelled context: %v, want context.Canceled", err)
	}
	after, _ := m.s.Snapshot()
	if string(before) != string(after) {
		t.Fatalf("a refused call changed the state:\n%s", cmp.Diff(string(before), string(after)))
	}
}

// BadSnapshot restores snapshots that must be refused, and checks that
// they leave the state unchanged.
func (m *machine) BadSnapshot(t *rapid.T) {
	before, _ := m.s.Snapshot()
	other := topology.Cluster{Servers: slices.Clone(m.c.Servers)}
	other.Servers[0].GPUs++
	o, err := m.mech.make(m, other, m.types)
	if err != nil {
		t.Fatal(err)
	}
	foreign, _ := o.Snapshot()
	var otherMech []byte
	for _, mm := range mechanisms() {
		if mm.name != m.mech.name {
			s, err := mm.make(m, m.c, m.types)
			if err != nil {
				t.Fatal(err)
			}
			otherMech, _ = s.Snapshot()
			break
		}
	}
	for _, snap := range [][]byte{before[:len(before)/2], []byte(`{"version": 1}`), foreign, otherMech, []byte("null")} {
		if err := m.s.Restore(snap); !errors.Is(err, gpufair.ErrSnapshot) {
			t.Fatalf("Restore(%.60q) = %v, want ErrSnapshot", snap, err)
		}
	}
	after, _ := m.s.Snapshot()
	if string(before) != string(after) {
		t.Fatal("a refused Restore changed the state")
	}
}

func (m *machine) Decide(t *rapid.T) {
	now := m.now + rapid.SampledFrom([]float64{testRound, testRound, 40, 250}).Draw(t, "wait")
	if m.last != nil {
		now = max(now, m.last.Start+1)
	}
	if m.snap {
		// A scheduler restored from a snapshot makes the same decision.
		snap, err := m.s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.mech.make(m, m.c, m.types)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(snap); err != nil {
			t.Fatalf("Restore of its own snapshot: %v", err)
		}
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
	d, err := m.s.Decide(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	m.check(t, now, d)
}

// check checks decision d, taken at now, and updates the model.
func (m *machine) check(t *rapid.T, now float64, d *round.Decision) {
	used := map[topology.GPU]bool{}
	placed := map[alloc.JobID]int{} // type index
	free := make([]int, len(m.types))
	for k := range m.types {
		free[k] = m.count(k)
	}
	for g := range m.failed {
		free[slices.Index(m.types, m.c.Servers[g.Server].Type)]--
	}
	healthy := slices.Clone(free)
	for _, p := range d.Placements {
		k := slices.Index(m.types, p.Type)
		if len(p.Jobs) != 1 {
			t.Fatalf("placement of %d jobs", len(p.Jobs))
		}
		j, ok := m.jobs[p.Jobs[0]]
		if !ok || len(p.GPUs) != j.Gang || k < 0 || !(j.Rates[k] > 0) {
			t.Fatalf("placement %+v of job %+v", p, j)
		}
		if _, twice := placed[j.ID]; twice {
			t.Fatalf("job %s placed twice", j.ID)
		}
		placed[j.ID] = k
		for _, g := range p.GPUs {
			if !m.c.Has(g) || m.c.Servers[g.Server].Type != p.Type || used[g] || m.failed[g] {
				t.Fatalf("job %s on slot %v: used %v, failed %v", j.ID, g, used[g], m.failed[g])
			}
			used[g] = true
		}
		free[k] -= j.Gang
	}
	l := m.s.Ledger()
	for _, w := range l.Jobs() {
		if _, ok := placed[w.ID]; ok {
			continue
		}
		for k, r := range w.Rates {
			if !(r > 0) || w.Gang > healthy[k] {
				continue
			}
			// Work conservation: no waiting job fits the GPUs left idle.
			if w.Gang <= free[k] {
				t.Fatalf("%s: job %s waits while %d %s GPUs are idle (gang %d)", m.mech.name, w.ID, free[k], m.types[k], w.Gang)
			}
			// The ranking: the GPUs of type k that jobs ranked after w
			// took, with those left idle, were too few for w's gang.
			later := 0
			for _, r := range l.Jobs() {
				if q, ok := placed[r.ID]; ok && q == k && m.mech.after(m, now, w, r, k) {
					later += r.Gang
				}
			}
			if w.Gang <= free[k]+later {
				t.Fatalf("%s: job %s (gang %d) waits while jobs ranked after it hold %d %s GPUs and %d are idle", m.mech.name, w.ID, w.Gang, later, m.types[k], free[k])
			}
		}
	}
	if ti, ok := m.s.(*baseline.Tiresias); ok {
		m.checkQueues(t, ti)
	}
	for id := range placed {
		m.ran[id] = d.Round
	}
	m.last, m.now = d, now
}

// checkQueues checks that each job's queue is the number of thresholds its
// attained service has reached: exactly without promotion, at most with
// it (a promotion counts service afresh).
func (m *machine) checkQueues(t *rapid.T, ti *baseline.Tiresias) {
	for _, j := range ti.Ledger().Jobs() {
		q, ok := ti.Queue(j.ID)
		if !ok {
			t.Fatalf("job %s has no queue after a decision", j.ID)
		}
		svc := 0.0
		for _, r := range j.Received {
			svc += r * float64(j.Gang)
		}
		want := 0
		for _, th := range testThresholds {
			if svc >= th {
				want++
			}
		}
		if (q != want && m.knob == 0) || q > want {
			t.Fatalf("job %s with %v GPU-seconds in queue %d, want %d", j.ID, svc, q, want)
		}
	}
}

func runMachine(t *testing.T, snap bool, actions func(m *machine) map[string]func(*rapid.T)) {
	rapid.Check(t, func(t *rapid.T) {
		m := newMachine(t, snap)
		t.Repeat(actions(m))
	})
}

func TestWorkConservingAndRanked(t *testing.T) {
	runMachine(t, false, func(m *machine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "decide": m.Decide, "badInput": m.BadInput,
			"": func(*rapid.T) {},
		}
	})
}

func TestFailures(t *testing.T) {
	runMachine(t, false, func(m *machine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide,
			"": func(*rapid.T) {},
		}
	})
}

func TestSnapshots(t *testing.T) {
	runMachine(t, true, func(m *machine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide,
			"badInput": m.BadInput, "badSnapshot": m.BadSnapshot, "": func(*rapid.T) {},
		}
	})
}
