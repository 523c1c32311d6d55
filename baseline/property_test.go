package baseline_test

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/internal/roundtest"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// mechanism builds one baseline for the state machine, and says which
// pairs its ranking certainly puts after others.
type mechanism struct {
	name string
	make func(m *machine, c topology.Cluster, types []topology.GPUType) (roundtest.Scheduler, error)
	// after reports whether, in the decision just taken at now, the pair
	// (r, type k) was ranked strictly after (w, type k).
	after func(m *machine, now float64, w, r *round.Job, k int) bool
}

const testRound = 100.0

// testThresholds are Tiresias' queue thresholds in the state machine:
// low enough for jobs to move down within a few rounds.
var testThresholds = []float64{150, 600}

func mechanisms() []mechanism {
	return []mechanism{
		{"tiresias", func(m *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewTiresias(c, ty, &baseline.TiresiasSettings{Round: testRound, Thresholds: testThresholds, PromoteKnob: m.knob})
		}, func(m *machine, _ float64, w, r *round.Job, _ int) bool {
			qw, _ := m.S.(*baseline.Tiresias).Queue(w.ID)
			qr, _ := m.S.(*baseline.Tiresias).Queue(r.ID)
			return qr > qw
		}},
		{"gandiva", func(m *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewGandiva(c, ty, &baseline.GandivaSettings{Round: testRound, Spread: func(id alloc.JobID) []float64 { return m.spread[id] }})
		}, func(m *machine, _ float64, w, r *round.Job, _ int) bool {
			rw, okw := m.ran[w.ID]
			rr, okr := m.ran[r.ID]
			return okr && (!okw || rr > rw)
		}},
		{"gandiva-no-time-slicing", func(m *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewGandiva(c, ty, &baseline.GandivaSettings{Round: testRound, Spread: func(id alloc.JobID) []float64 { return m.spread[id] }, NoTimeSlicing: true})
		}, func(m *machine, _ float64, w, r *round.Job, k int) bool {
			// Jobs running on k keep it; the others by preference.
			key := func(j *round.Job) (float64, float64) {
				if h, ok := m.held[j.ID]; ok && h == k {
					return -1, 0
				}
				if s := m.spread[j.ID]; s != nil && j.Gang > 1 {
					return 0, -j.Rates[k] / s[k]
				}
				return 0, -1
			}
			wa, wb := key(w)
			ra, rb := key(r)
			return ra > wa || (ra == wa && rb > wb)
		}},
		{"slaq", func(_ *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewSLAQ(c, ty, &baseline.SLAQSettings{Round: testRound})
		}, func(_ *machine, _ float64, w, r *round.Job, k int) bool {
			return slaqDrop(r, k) < slaqDrop(w, k)
		}},
		{"optimus", func(_ *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewOptimus(c, ty, &baseline.OptimusSettings{Round: testRound})
		}, func(_ *machine, now float64, w, r *round.Job, k int) bool {
			return baseline.MarginalGain(r, k, now) < baseline.MarginalGain(w, k, now)
		}},
		{"srtf", func(_ *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewSRTF(c, ty, &baseline.SRTFSettings{Round: testRound})
		}, func(_ *machine, _ float64, w, r *round.Job, k int) bool {
			return r.Remaining()/r.Rates[k] > w.Remaining()/w.Rates[k]
		}},
		{"srsf", func(_ *machine, c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
			return baseline.NewSRTF(c, ty, &baseline.SRTFSettings{Round: testRound, Service: true})
		}, func(_ *machine, _ float64, w, r *round.Job, k int) bool {
			return float64(r.Gang)*r.Remaining()/r.Rates[k] > float64(w.Gang)*w.Remaining()/w.Rates[k]
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

// machine drives one baseline (roundtest.Machine) and checks, beyond the
// contract, work conservation and the baseline's own ranking.
type machine struct {
	*roundtest.Machine
	mech   mechanism
	ran    map[alloc.JobID]int // the latest decision that ran each job
	held   map[alloc.JobID]int // type index of the slots each job holds into the decision
	spread map[alloc.JobID][]float64
	knob   float64 // Tiresias' PromoteKnob
}

func newMachine(t *rapid.T, snap bool) *machine {
	m := &machine{
		mech: rapid.SampledFrom(mechanisms()).Draw(t, "mechanism"),
		ran:  map[alloc.JobID]int{}, spread: map[alloc.JobID][]float64{},
		knob: rapid.SampledFrom([]float64{0, 0, 1, 3}).Draw(t, "promoteKnob"),
	}
	m.Machine = roundtest.New(t, testRound, snap, func(c topology.Cluster, ty []topology.GPUType) (roundtest.Scheduler, error) {
		return m.mech.make(m, c, ty)
	})
	return m
}

func (m *machine) Arrive(t *rapid.T) {
	j := m.Machine.Arrive(t)
	if rapid.Bool().Draw(t, "placementSensitive") {
		// Gandiva's placement preference: half the rate spread out.
		m.spread[j.ID] = make([]float64, len(j.Rates))
		for k, r := range j.Rates {
			m.spread[j.ID][k] = r / 2
		}
	}
}

// BadSnapshot also offers a snapshot of another baseline.
func (m *machine) BadSnapshot(t *rapid.T) {
	for _, mm := range mechanisms() {
		if mm.name != m.mech.name && mm.name != "gandiva" && mm.name != "gandiva-no-time-slicing" {
			s, err := mm.make(m, m.C, m.Types)
			if err != nil {
				t.Fatal(err)
			}
			other, _ := s.Snapshot()
			m.Machine.BadSnapshot(t, other)
			return
		}
	}
}

func (m *machine) Decide(t *rapid.T) {
	// The slots each job holds into the decision, if the lease in force
	// lasts until it (round.Ledger.Holding at the decision's time).
	m.held = map[alloc.JobID]int{}
	l := m.S.Ledger()
	for id := range m.Jobs {
		if p, ok := l.Holding(id); ok {
			m.held[id] = slices.Index(m.Types, p.Type)
		}
	}
	m.Machine.Decide(t, func(now float64, d *round.Decision) {
		if m.Last == nil || m.Last.End < now {
			clear(m.held)
		}
		m.check(t, now, d)
	})
}

// check checks decision d, taken at now.
func (m *machine) check(t *rapid.T, now float64, d *round.Decision) {
	p := m.CheckPlacements(t, d)
	m.CheckWorkConserving(t, p)
	l := m.S.Ledger()
	for _, w := range l.Jobs() {
		if _, ok := p.Type[w.ID]; ok {
			continue
		}
		for k, r := range w.Rates {
			if !(r > 0) || w.Gang > p.Healthy[k] {
				continue
			}
			// The ranking: the GPUs of type k that jobs ranked after w
			// took, with those left idle, were too few for w's gang.
			later := 0
			for _, r := range l.Jobs() {
				if q, ok := p.Type[r.ID]; ok && q == k && m.mech.after(m, now, w, r, k) {
					later += r.Gang
				}
			}
			if w.Gang <= p.Free[k]+later {
				t.Fatalf("%s: job %s (gang %d) waits while jobs ranked after it hold %d %s GPUs and %d are idle", m.mech.name, w.ID, w.Gang, later, m.Types[k], p.Free[k])
			}
		}
	}
	if ti, ok := m.S.(*baseline.Tiresias); ok {
		m.checkQueues(t, ti)
	}
	for id := range p.Type {
		m.ran[id] = d.Round
	}
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

func (m *machine) Depart(t *rapid.T) {
	if len(m.Jobs) > 0 {
		defer func() { m.ran = pruned(m.ran, m.Jobs) }()
	}
	m.Machine.Depart(t)
}

// pruned drops from ran the jobs no longer in jobs.
func pruned(ran map[alloc.JobID]int, jobs map[alloc.JobID]alloc.Job) map[alloc.JobID]int {
	for id := range ran {
		if _, ok := jobs[id]; !ok {
			delete(ran, id)
		}
	}
	return ran
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
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "decide": m.Decide, "badInput": m.BadInput, "": m.Check,
		}
	})
}

func TestFailures(t *testing.T) {
	runMachine(t, false, func(m *machine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide, "": m.Check,
		}
	})
}

func TestSnapshots(t *testing.T) {
	runMachine(t, true, func(m *machine) map[string]func(*rapid.T) {
		return map[string]func(*rapid.T){
			"arrive": m.Arrive, "depart": m.Depart, "progress": m.Progress, "fail": m.Fail, "repair": m.Repair, "decide": m.Decide,
			"badInput": m.BadInput, "badSnapshot": m.BadSnapshot, "": m.Check,
		}
	})
}
