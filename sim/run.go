package sim

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Run replays workload w on cluster c under scheduler s and returns the
// per-job results. It validates w, c and the settings, returning an
// *gpufair.InputError for bad input (every type of w must be a GPU type of c,
// and every job must fit the GPUs of a type it has a positive rate on),
// and checks every placement the scheduler makes (ErrPlacement). It stops
// when every job has finished, when Settings.StopWhenMeasured or
// Settings.Horizon says so, or when ctx is done (checked between rounds);
// it returns ErrStalled if jobs wait Settings.Stall rounds in a row while the
// scheduler places none. An error of the scheduler is returned wrapped with
// the round it happened in. w is read, never modified.
//
// Cost: per round, the scheduler's cost plus O(A + P·gang) for A active
// jobs and P placements; O(n log n) for the metrics of n jobs.
func Run(ctx context.Context, w *Workload, c topology.Cluster, s Scheduler, set *Settings) (*Result, error) {
	r, err := newRun(w, c, s, set)
	if err != nil {
		return nil, err
	}
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// jobState is a job's progress during a run.
type jobState struct {
	job       *Job
	remaining float64
	service   float64
	ran       int
	last      []topology.GPU // slots of the last round the job ran in, sorted
	lastRound int            // that round, or -1
	start     float64
	finish    float64
	placedAt  int // round of the latest placement, to catch duplicates
}

type run struct {
	set        Settings
	sched      Scheduler
	cluster    topology.Cluster
	types      []topology.GPUType
	count      []int // GPUs of each of types
	serverType []int // workload type index of each server, -1 if none
	jobs       []jobState
	index      map[alloc.JobID]int

	next     int   // next job to arrive, index into jobs
	active   []int // active jobs, increasing index
	finished int
	rounds   int
	end      float64

	st       State
	arrived  []alloc.JobID
	departed []alloc.JobID
	slotUsed [][]int        // slotUsed[server][slot] = round+1 of the slot's last use
	slots    []topology.GPU // scratch
}

func newRun(w *Workload, c topology.Cluster, s Scheduler, set *Settings) (*run, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := &run{sched: s, cluster: c, types: w.Types}
	if set != nil {
		r.set = *set
	}
	if err := r.checkSettings(len(w.Jobs)); err != nil {
		return nil, err
	}
	var err error
	if r.count, err = typeCounts(c, w.Types, "Workload.Types"); err != nil {
		return nil, err
	}
	for i := range w.Jobs {
		if j := &w.Jobs[i]; !j.fits(r.count) {
			return nil, gpufair.Invalid("Jobs.Gang", string(j.ID), gpufair.ErrValue, "gang %d is larger than the GPUs of every type the job runs on", j.Gang)
		}
	}
	r.serverType = make([]int, len(c.Servers))
	r.slotUsed = make([][]int, len(c.Servers))
	for i, sv := range c.Servers {
		r.serverType[i] = slices.Index(w.Types, sv.Type)
		r.slotUsed[i] = make([]int, sv.GPUs)
	}
	order := make([]*Job, len(w.Jobs))
	for i := range w.Jobs {
		order[i] = &w.Jobs[i]
	}
	slices.SortFunc(order, byArrival)
	r.jobs = make([]jobState, len(order))
	r.index = make(map[alloc.JobID]int, len(order))
	for i, j := range order {
		r.jobs[i] = jobState{job: j, remaining: j.Steps, lastRound: -1, start: math.NaN(), finish: math.NaN(), placedAt: -1}
		r.index[j.ID] = i
	}
	r.st = State{Length: r.set.Round, Cluster: c, Types: w.Types}
	return r, nil
}

func (r *run) checkSettings(n int) error {
	s := &r.set
	if s.Round == 0 {
		s.Round = DefaultRound
	}
	if s.Stall == 0 {
		s.Stall = defaultStall
	}
	if s.MeasureTo == 0 {
		s.MeasureTo = n
	}
	switch {
	case !(s.Round > 0) || math.IsInf(s.Round, 0):
		return gpufair.Invalid("Settings.Round", "", gpufair.ErrValue, "round length %v", s.Round)
	case !finiteNonNeg(s.Restart):
		return gpufair.Invalid("Settings.Restart", "", gpufair.ErrValue, "restart cost %v", s.Restart)
	case !finiteNonNeg(s.Horizon):
		return gpufair.Invalid("Settings.Horizon", "", gpufair.ErrValue, "horizon %v", s.Horizon)
	case s.Stall < 0:
		return gpufair.Invalid("Settings.Stall", "", gpufair.ErrValue, "stall limit %d", s.Stall)
	case s.MeasureFrom < 0 || s.MeasureFrom >= s.MeasureTo || s.MeasureTo > n:
		return gpufair.Invalid("Settings.MeasureFrom", "", gpufair.ErrValue, "measured jobs [%d, %d) of %d", s.MeasureFrom, s.MeasureTo, n)
	}
	return nil
}

// loop runs rounds until the run ends.
func (r *run) loop(ctx context.Context) error {
	L := r.set.Round
	round, stalled := 0, 0
	for r.finished < len(r.jobs) {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := float64(round) * L
		if r.set.Horizon > 0 && now >= r.set.Horizon {
			break
		}
		r.admit(now)
		if len(r.active) == 0 {
			round = r.skipTo(round)
			continue
		}
		n, err := r.round(ctx, round, now)
		if err != nil {
			return err
		}
		r.rounds++
		r.end = now + L
		if n == 0 {
			if stalled++; stalled >= r.set.Stall {
				return fmt.Errorf("%w: %d rounds up to round %d", ErrStalled, stalled, round)
			}
		} else {
			stalled = 0
		}
		if p := r.set.Progress; p != nil {
			p(Progress{Round: round, Now: now + L, Finished: r.finished, Jobs: len(r.jobs), Active: len(r.active)})
		}
		if r.set.StopWhenMeasured && r.measuredDone() {
			break
		}
		round++
	}
	return nil
}

// admit makes the jobs that arrived by now active.
func (r *run) admit(now float64) {
	for r.next < len(r.jobs) && r.jobs[r.next].job.Arrival <= now {
		r.active = append(r.active, r.next)
		r.arrived = append(r.arrived, r.jobs[r.next].job.ID)
		r.next++
	}
}

// skipTo returns the first round, after round, that starts at or after the
// next arrival.
func (r *run) skipTo(round int) int {
	a := r.jobs[r.next].job.Arrival
	q := int(math.Ceil(a / r.set.Round))
	for float64(q)*r.set.Round < a {
		q++
	}
	return max(q, round+1)
}

func (r *run) measuredDone() bool {
	for i := r.set.MeasureFrom; i < r.set.MeasureTo; i++ {
		if math.IsNaN(r.jobs[i].finish) {
			return false
		}
	}
	return true
}

// round runs one round and returns the number of placements.
func (r *run) round(ctx context.Context, round int, now float64) (int, error) {
	st := &r.st
	st.Round, st.Now = round, now
	st.Active = st.Active[:0]
	for _, i := range r.active {
		js := &r.jobs[i]
		var last []topology.GPU
		if js.lastRound == round-1 {
			last = js.last
		}
		st.Active = append(st.Active, Active{Job: js.job, Remaining: js.remaining, Service: js.service, Ran: js.ran, Last: last})
	}
	st.Arrived, st.Departed = r.arrived, r.departed
	ps, err := r.sched.Schedule(ctx, st)
	if err != nil {
		return 0, fmt.Errorf("sim: %s, round %d: %w", r.sched.Name(), round, err)
	}
	r.arrived, r.departed = r.arrived[:0], r.departed[:0]
	for _, p := range ps {
		if err := r.apply(p, round, now); err != nil {
			return 0, err
		}
	}
	r.active = slices.DeleteFunc(r.active, func(i int) bool {
		if math.IsNaN(r.jobs[i].finish) {
			return false
		}
		r.departed = append(r.departed, r.jobs[i].job.ID)
		return true
	})
	return len(ps), nil
}

// apply checks placement p and runs its job for the round.
func (r *run) apply(p Placement, round int, now float64) error {
	i, ok := r.index[p.Job]
	if !ok {
		return fmt.Errorf("%w: round %d: unknown job %q", ErrPlacement, round, p.Job)
	}
	js := &r.jobs[i]
	switch {
	case js.job.Arrival > now || !math.IsNaN(js.finish):
		return fmt.Errorf("%w: round %d: job %q is not active", ErrPlacement, round, p.Job)
	case js.placedAt == round:
		return fmt.Errorf("%w: round %d: job %q placed twice", ErrPlacement, round, p.Job)
	case len(p.GPUs) != js.job.Gang:
		return fmt.Errorf("%w: round %d: job %q has %d GPUs for a gang of %d", ErrPlacement, round, p.Job, len(p.GPUs), js.job.Gang)
	}
	k := -2
	for _, g := range p.GPUs {
		if g.Server < 0 || g.Server >= len(r.slotUsed) || g.Slot < 0 || g.Slot >= len(r.slotUsed[g.Server]) {
			return fmt.Errorf("%w: round %d: job %q on slot %v outside the cluster", ErrPlacement, round, p.Job, g)
		}
		if r.slotUsed[g.Server][g.Slot] == round+1 {
			return fmt.Errorf("%w: round %d: slot %v used twice", ErrPlacement, round, g)
		}
		r.slotUsed[g.Server][g.Slot] = round + 1
		t := r.serverType[g.Server]
		if t < 0 || (k != -2 && t != k) {
			return fmt.Errorf("%w: round %d: job %q on GPUs of several types, or of a type it has no rate for", ErrPlacement, round, p.Job)
		}
		k = t
	}
	js.placedAt = round
	r.progress(js, p.GPUs, k, round, now)
	return nil
}

// progress advances job js on GPUs of type k for one round.
func (r *run) progress(js *jobState, gpus []topology.GPU, k, round int, now float64) {
	L := r.set.Round
	lost := 0.0
	r.slots = append(r.slots[:0], gpus...)
	topology.SortGPUs(r.slots)
	if r.set.Restart > 0 && js.ran > 0 && (js.lastRound != round-1 || !slices.Equal(js.last, r.slots)) {
		lost = min(r.set.Restart, L)
	}
	if js.ran == 0 {
		js.start = now
	}
	js.ran++
	js.lastRound = round
	js.last = append(js.last[:0], r.slots...)
	gang := float64(js.job.Gang)
	rate := js.job.rate(k, topology.ServersUsed(gpus) > 1)
	avail := L - lost
	if rate > 0 && js.remaining <= rate*avail {
		used := lost + js.remaining/rate
		js.finish = now + used
		js.remaining = 0
		js.service += gang * used
		r.finished++
		return
	}
	js.remaining -= rate * avail
	js.service += gang * L
}
