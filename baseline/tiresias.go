package baseline

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// defaultThresholds backs DefaultThresholds; never modified.
var defaultThresholds = []float64{3250, 7200}

// DefaultThresholds returns the queue thresholds used when
// TiresiasSettings.Thresholds is nil: 3,250 and 7,200 GPU-seconds, three
// queues, as in the Tiresias authors' simulator.
func DefaultThresholds() []float64 { return slices.Clone(defaultThresholds) }

// TiresiasSettings tune a Tiresias scheduler. A nil *TiresiasSettings means
// the zero value: 6-minute rounds, DefaultThresholds, no promotion.
type TiresiasSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Thresholds are the attained service, in GPU-seconds, at which a job
	// leaves each queue but the last for the next: K−1 increasing positive
	// values for K queues. nil means DefaultThresholds; an empty, non-nil
	// slice means one queue (FIFO by the time jobs entered it).
	Thresholds []float64
	// PromoteKnob, if positive, is Tiresias' starvation guard: a job that
	// has waited, since it last entered the first queue, PromoteKnob times
	// as long as it has run since then goes back to the first queue, its
	// count of service restarted. 0 turns promotion off.
	PromoteKnob float64
}

// Tiresias is Tiresias' discretised two-dimensional least-attained-service
// scheduler (Gu et al., NSDI'19, section 4.1, Algorithm 1), Themis'
// baseline for fairness (NSDI'20, section 6.1: "all apps report their
// service metric and we allocate the resource to apps that have the least
// GPU service").
//
// A job's attained service is its GPUs times the time it has run (Gang ×
// Σ_k Received_k, from the ledger's accounting). There are K queues with
// thresholds T_1 < … < T_{K−1}: a job arrives in the first, and moves to
// queue q+1 once its service since it entered the first queue reaches
// T_q. Each round, queues are served in order and, within a queue, in
// FIFO order of the time jobs entered it (the first queue: of arrival);
// as in the authors' simulator, jobs of a queue that did not run go behind
// those that did, so the jobs running in a queue keep running until a
// higher queue needs their GPUs or they are demoted. A demoted job enters
// its new queue behind every job already in it, those that waited
// included, though it ran in the round before; jobs entering a queue at
// the same decision keep (arrival, JobID) order. A job that does not
// fit the GPUs left is skipped, and the jobs after it may run (the
// simulator's fit-first order); pairs are taken greedily (package doc),
// each job trying its fastest type first, since Tiresias knows no GPU
// types.
//
// Starvation (TiresiasSettings.PromoteKnob, Algorithm 1's PROMOTEKNOB): a
// job in a lower queue that has run since it last entered the first queue
// and has waited, counting only rounds it did not run in, at least
// PromoteKnob times the wall time it has run since then, goes back to the
// first queue, with service and waiting counted from zero again.
//
// The zero value is not usable; build one with NewTiresias.
type Tiresias struct {
	core
	thresholds []float64
	knob       float64
	st         tiresiasState
}

// tiresiasState is what Tiresias keeps beyond the ledger, as snapshotted.
type tiresiasState struct {
	Jobs map[alloc.JobID]tiresiasJob `json:"jobs"`
	Next int                         `json:"next"` // next position in a queue
	Last float64                     `json:"last"` // time of the previous decision
}

// tiresiasJob is one job's place in the queues.
type tiresiasJob struct {
	Queue int `json:"queue"`
	// Seq orders the jobs of a queue: lower runs first.
	Seq int `json:"seq"`
	// Base is the attained service when the job last entered the first
	// queue; Seen is its attained service at the previous decision.
	Base float64 `json:"base"`
	Seen float64 `json:"seen"`
	// Waited is the time it has waited since it last entered the first
	// queue and first ran afterwards.
	Waited float64 `json:"waited,omitempty"`
}

// NewTiresias returns a Tiresias scheduler on cluster c, with job rates
// given over types (each a type of c). s may be nil. It returns the errors
// of round.NewLedger and an *gpufair.InputError for a round length that is
// not positive and finite, thresholds that are not positive, finite and
// increasing, or a negative or infinite PromoteKnob.
func NewTiresias(c topology.Cluster, types []topology.GPUType, s *TiresiasSettings) (*Tiresias, error) {
	var set TiresiasSettings
	if s != nil {
		set = *s
	}
	th := set.Thresholds
	if th == nil {
		th = defaultThresholds
	}
	for i, t := range th {
		if !(t > 0) || math.IsInf(t, 0) || (i > 0 && !(t > th[i-1])) {
			return nil, gpufair.Invalid("TiresiasSettings.Thresholds", "", gpufair.ErrValue, "threshold %d is %v: thresholds must be positive, finite and increasing", i, t)
		}
	}
	if !(set.PromoteKnob >= 0) || math.IsInf(set.PromoteKnob, 0) {
		return nil, gpufair.Invalid("TiresiasSettings.PromoteKnob", "", gpufair.ErrValue, "%v", set.PromoteKnob)
	}
	b, err := newCore("tiresias", "TiresiasSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &Tiresias{core: b, thresholds: slices.Clone(th), knob: set.PromoteKnob, st: tiresiasState{Jobs: map[alloc.JobID]tiresiasJob{}}}, nil
}

// Queue returns the queue job id is in (0 is the first) as of the latest
// decision, and false for a job no decision has seen.
func (t *Tiresias) Queue(id alloc.JobID) (int, bool) {
	j, ok := t.st.Jobs[id]
	return j.Queue, ok
}

// Apply checks and applies events (round.Ledger.Apply).
func (t *Tiresias) Apply(events ...round.Event) error {
	return applyForgetting(t.l, t.st.Jobs, events)
}

// Decide moves jobs between queues by their service up to now, and returns
// the decision for the round that starts at now.
func (t *Tiresias) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return transact(&t.st, tiresiasState.clone, func() (*round.Decision, error) { return t.decide(ctx, now, t.plan) })
}

func (s tiresiasState) clone() tiresiasState {
	s.Jobs = maps.Clone(s.Jobs)
	return s
}

func (t *Tiresias) plan(now float64, jobs []*round.Job) (*round.Decision, error) {
	st := &t.st
	for _, j := range jobs {
		svc := attained(j)
		q, ok := st.Jobs[j.ID]
		if !ok {
			st.Jobs[j.ID] = tiresiasJob{Seq: t.seq(), Base: svc, Seen: svc}
			continue
		}
		if q.Seen > q.Base {
			// It had run since it entered the first queue: the time it
			// did not run since the previous decision counts as waiting.
			el := now - max(st.Last, j.Arrival)
			q.Waited += max(el-(svc-q.Seen)/float64(j.Gang), 0)
		}
		q.Seen = svc
		run := svc - q.Base
		if q.Queue < len(t.thresholds) && run >= t.thresholds[q.Queue] {
			for q.Queue < len(t.thresholds) && run >= t.thresholds[q.Queue] {
				q.Queue++
			}
			q.Seq = t.seq()
		}
		if t.knob > 0 && q.Queue > 0 && run > 0 && q.Waited >= t.knob*run/float64(j.Gang) {
			q = tiresiasJob{Seq: t.seq(), Base: svc, Seen: svc}
		}
		st.Jobs[j.ID] = q
	}
	chosen := t.greedy(jobs, func(_ int, j *round.Job, _ int) (float64, float64) {
		q := st.Jobs[j.ID]
		return float64(q.Queue), float64(q.Seq)
	})
	// The jobs of each queue that wait go behind those that run, in
	// their order.
	var wait []alloc.JobID
	for i, j := range jobs {
		if chosen[i] == 0 {
			wait = append(wait, j.ID)
		}
	}
	slices.SortFunc(wait, func(a, b alloc.JobID) int {
		qa, qb := st.Jobs[a], st.Jobs[b]
		if c := cmp.Compare(qa.Queue, qb.Queue); c != 0 {
			return c
		}
		return cmp.Compare(qa.Seq, qb.Seq)
	})
	for _, id := range wait {
		q := st.Jobs[id]
		q.Seq = t.seq()
		st.Jobs[id] = q
	}
	st.Last = now
	return t.realise(now, jobs, chosen, placing{})
}

// seq returns the next position in a queue.
func (t *Tiresias) seq() int {
	t.st.Next++
	return t.st.Next
}

// Snapshot returns the scheduler's whole state as JSON: the ledger and the
// queues.
func (t *Tiresias) Snapshot() ([]byte, error) { return t.seal(&t.st) }

// Restore replaces the state with a snapshot taken by a Tiresias scheduler
// with the same number of queues on the same cluster and types. It returns
// an error wrapping gpufair.ErrSnapshot, and changes nothing, otherwise.
func (t *Tiresias) Restore(snapshot []byte) error {
	var st tiresiasState
	l, err := t.open(snapshot, &st)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(st.Jobs)) {
		q := st.Jobs[id]
		if _, ok := l.Job(id); !ok || q.Queue < 0 || q.Queue > len(t.thresholds) || q.Seq > st.Next {
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "queue %d, position %d of %d, for a job in the ledger: %v", q.Queue, q.Seq, st.Next, ok)
		}
	}
	if st.Jobs == nil {
		st.Jobs = map[alloc.JobID]tiresiasJob{}
	}
	t.adopt(l)
	t.st = st
	return nil
}

var _ round.Scheduler = (*Tiresias)(nil)
