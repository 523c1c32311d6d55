package sim

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// Run replays workload w on cluster c under scheduler s and returns the
// per-job results. It drives s exactly as a production scheduler would:
// at the start of each round it applies the events since the previous
// round, in time order (arrivals, the progress of every job that ran, the
// departures of the jobs that finished, GPU failures and repairs), then asks
// s to decide the round, and runs each placement for its lease (the round,
// or less if the decision says so).
//
// s must be a fresh scheduler for c with w.Types as its GPU types: built
// for c's servers in c's order (placements name slots by server index)
// and for w.Types in that order (the rates of the jobs Run reports follow
// it), and told no event yet (Run reports every job's arrival, from time
// 0). Run cannot check this: a scheduler for another cluster or one
// already used shows up only as a decision that breaks the contract or as
// an error of its own (as one refusing Run's first events as out of
// order). Run validates w, c and the settings, returning an
// *gpufair.InputError for bad input (every type of w must be a GPU type of
// c, every job must fit the GPUs of a type it has a positive rate on, and
// the run must fit in 2^52 rounds: see Settings.Round), and checks every
// decision against the contract, returning an error wrapping
// round.ErrPlacement (see ErrPlacement) for one that breaks it: s need not
// be trusted. It stops when every job has finished, when
// Settings.StopWhenMeasured or Settings.Horizon says so, or when ctx is
// done (checked between rounds); it returns ErrStalled if jobs wait
// Settings.Stall rounds in a row in which none progresses. An error of the
// scheduler is returned wrapped with the round it happened in. w is read,
// never modified.
//
// Cost: per round, the scheduler's cost plus O(E log E + P·gang) for E
// events and P placements; O(n log n) for the metrics of n jobs.
func Run(ctx context.Context, w *Workload, c topology.Cluster, s round.Scheduler, set *Settings) (*Result, error) {
	if s == nil {
		return nil, gpufair.Invalid("Scheduler", "", gpufair.ErrEmpty, "nil scheduler")
	}
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
	restarts  int
	last      []topology.GPU // slots of the last lease the job ran in, sorted
	lastRound int            // that round, or -1
	whole     bool           // whether it ran that whole round, to its end
	start     float64
	finish    float64
	placedAt  int // round of the latest placement, to catch duplicates
	// arrival is when the job arrives: its Arrival, or for a job behind a
	// barrier (gated) the later of that and the barrier's lifting, +Inf
	// until then.
	arrival float64
	gated   bool
	// told is what the scheduler is told of the job's rates
	// (Settings.Profiled); nil means its Rates.
	told []float64
}

// phasing is the barrier between the phases of one owner's jobs (Job.Phase):
// its distinct phases in increasing order, the jobs of each, the jobs of
// the current phase not yet finished, and the latest finish among the
// current phase's jobs so far.
type phasing struct {
	jobs [][]int // indices into run.jobs, by phase
	cur  int     // the phase running now, an index into jobs
	left int     // unfinished jobs of the current phase
	last float64 // latest finish in the current phase
}

// fault is a GPU failing (fail) or being repaired at t.
type fault struct {
	t    float64
	gpu  topology.GPU
	fail bool
}

type run struct {
	set        Settings
	sched      round.Scheduler
	name       string // the scheduler's, for the result
	cluster    topology.Cluster
	types      []topology.GPUType
	count      []int // GPUs of each of types
	serverType []int // workload type index of each server, -1 if none
	jobs       []jobState
	index      map[alloc.JobID]int

	next   int   // next job to arrive from the trace, index into jobs; never a gated one
	active []int // active jobs, increasing index
	// phases holds the barrier of each owner whose jobs have several
	// phases; released, the gated jobs whose barrier has lifted and that
	// have not arrived yet, by (arrival, index).
	phases   map[alloc.TenantID]*phasing
	released []int
	finished int
	rounds   int
	end      float64
	history  []RoundStat

	faults    []fault                    // every failure and repair, by time
	nextFault int                        // the next fault to report
	failsOf   map[topology.GPU][]float64 // failure times of each GPU, increasing
	down      map[topology.GPU]bool      // GPUs failed as of the latest round
	pending   []round.Event              // events since the latest round
	slotUsed  [][]int                    // slotUsed[server][slot] = round+1 of the slot's last use
	slots     []topology.GPU             // scratch
}

func newRun(w *Workload, c topology.Cluster, s round.Scheduler, set *Settings) (*run, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	// Through alloc.CapacityOf for an *gpufair.InputError on "Cluster":
	// c.Validate's error named no input.
	if _, err := alloc.CapacityOf(c, nil); err != nil {
		return nil, err
	}
	r := &run{sched: s, cluster: c, types: w.Types}
	if s != nil { // Ideal runs without one
		r.name = s.Name()
	}
	if set != nil {
		r.set = *set
	}
	if err := r.checkSettings(len(w.Jobs)); err != nil {
		return nil, err
	}
	for i := range w.Jobs {
		// Rounds are counted in an int: a job arriving at 1e22 s made the
		// count overflow and the run loop forever.
		if j := &w.Jobs[i]; r.beyondRounds(j.Arrival) {
			return nil, r.tooManyRounds(j.Arrival, "Jobs.Arrival", string(j.ID), "job %q arrives at %v s", j.ID, j.Arrival)
		}
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
	if err := r.checkFailures(); err != nil {
		return nil, err
	}
	order := make([]*Job, len(w.Jobs))
	for i := range w.Jobs {
		order[i] = &w.Jobs[i]
	}
	slices.SortFunc(order, byArrival)
	r.jobs = make([]jobState, len(order))
	r.index = make(map[alloc.JobID]int, len(order))
	for i, j := range order {
		r.jobs[i] = jobState{job: j, remaining: j.Steps, lastRound: -1, start: math.NaN(), finish: math.NaN(), placedAt: -1, arrival: j.Arrival}
		r.index[j.ID] = i
	}
	if s != nil { // Ideal has no rounds
		if err := r.checkWork(); err != nil {
			return nil, err
		}
	}
	if err := r.profile(); err != nil {
		return nil, err
	}
	r.initPhases()
	r.skipGated()
	return r, nil
}

// toldRates returns the rates the scheduler is told of the job.
func (js *jobState) toldRates() []float64 {
	if js.told != nil {
		return js.told
	}
	return js.job.Rates
}

// profile sets what the scheduler is told of each job's rates from
// Settings.Profiled, and checks it.
func (r *run) profile() error {
	if r.set.Profiled == nil {
		return nil
	}
	for i := range r.jobs {
		js := &r.jobs[i]
		told := slices.Clone(r.set.Profiled(js.job))
		id := string(js.job.ID)
		if len(told) != len(r.types) {
			return gpufair.Invalid("Settings.Profiled", id, gpufair.ErrShape, "%d rates for %d types", len(told), len(r.types))
		}
		for k, x := range told {
			if !finiteNonNeg(x) || (x > 0) != (js.job.Rates[k] > 0) {
				return gpufair.Invalid("Settings.Profiled", id, gpufair.ErrValue, "rate %v on %s, where the job runs at %v", x, r.types[k], js.job.Rates[k])
			}
		}
		js.told = told
	}
	return nil
}

// initPhases builds the barriers of the owners whose jobs have several
// phases, and gates the jobs beyond each owner's lowest phase.
func (r *run) initPhases() {
	byOwner := map[alloc.TenantID]map[int][]int{}
	for i := range r.jobs {
		j := r.jobs[i].job
		o := j.owner()
		if byOwner[o] == nil {
			byOwner[o] = map[int][]int{}
		}
		byOwner[o][j.Phase] = append(byOwner[o][j.Phase], i)
	}
	for o, m := range byOwner {
		if len(m) < 2 {
			continue
		}
		ph := &phasing{last: math.Inf(-1)}
		for _, p := range slices.Sorted(maps.Keys(m)) {
			ph.jobs = append(ph.jobs, m[p])
		}
		ph.left = len(ph.jobs[0])
		for _, later := range ph.jobs[1:] {
			for _, i := range later {
				r.jobs[i].gated, r.jobs[i].arrival = true, math.Inf(1)
			}
		}
		if r.phases == nil {
			r.phases = map[alloc.TenantID]*phasing{}
		}
		r.phases[o] = ph
	}
}

// skipGated moves next past the gated jobs: they arrive when released.
func (r *run) skipGated() {
	for r.next < len(r.jobs) && r.jobs[r.next].gated {
		r.next++
	}
}

// finishedJob records that job js finished: the last job of its owner's
// current phase lifts the barrier, and the next phase's jobs arrive at the
// later of their Arrival and the phase's last finish.
func (r *run) finishedJob(js *jobState) {
	ph := r.phases[js.job.owner()]
	if ph == nil {
		return
	}
	ph.last = max(ph.last, js.finish)
	if ph.left--; ph.left > 0 || ph.cur+1 >= len(ph.jobs) {
		return
	}
	ph.cur++
	ph.left = len(ph.jobs[ph.cur])
	for _, i := range ph.jobs[ph.cur] {
		r.jobs[i].arrival = max(r.jobs[i].job.Arrival, ph.last)
		r.released = append(r.released, i)
	}
	ph.last = math.Inf(-1)
	slices.SortFunc(r.released, func(a, b int) int {
		if c := cmp.Compare(r.jobs[a].arrival, r.jobs[b].arrival); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// maxRounds bounds the rounds of a run, and so the round a job may arrive
// in (2^52: round numbers and their start times stay exact).
const maxRounds = 1 << 52

// beyondRounds reports whether time t, in seconds, lies more than maxRounds
// rounds from the start of the run.
func (r *run) beyondRounds(t float64) bool { return t/r.set.Round > maxRounds }

// tooManyRounds returns the ErrTooLarge *gpufair.InputError for time t
// beyond maxRounds rounds, with a message formatted from format and args.
// It names field and id where t is beyond maxRounds rounds of
// DefaultRound too (the time itself is out of reach), and Settings.Round
// where it is not (the round is too short for the workload).
func (r *run) tooManyRounds(t float64, field, id, format string, args ...any) error {
	if t/DefaultRound <= maxRounds {
		field, id = "Settings.Round", ""
	}
	return gpufair.Invalid(field, id, gpufair.ErrTooLarge, format+": more than %v rounds of %v s", append(args, float64(maxRounds), r.set.Round)...)
}

// checkWork refuses a run that cannot end within maxRounds rounds: a job
// the run must finish (every job, or the measured ones with
// Settings.StopWhenMeasured) that arrives at a and does Steps at its
// fastest rate alone cannot finish before a + Steps/rate, and the earlier
// of that and Settings.Horizon must lie within maxRounds rounds. Steps of
// 1e300, or rounds of 1e-300 s, were accepted and the run never ended.
func (r *run) checkWork() error {
	from, to := 0, len(r.jobs)
	if r.set.StopWhenMeasured {
		from, to = r.set.MeasureFrom, r.set.MeasureTo
	}
	for i := from; i < to; i++ {
		j := r.jobs[i].job
		fastest := 0.0
		for k, x := range j.Rates {
			if x > 0 {
				fastest = max(fastest, x, j.rate(k, true))
			}
		}
		t := j.Arrival + j.Steps/fastest
		if r.set.Horizon > 0 {
			t = min(t, r.set.Horizon)
		}
		if r.beyondRounds(t) {
			return r.tooManyRounds(t, "Jobs.Steps", string(j.ID), "job %q, arriving at %v s, needs %v s for %v steps at %v steps/s", j.ID, j.Arrival, j.Steps/fastest, j.Steps, fastest)
		}
	}
	return nil
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

// checkFailures validates Settings.Failures and builds the timeline of
// failures and repairs.
func (r *run) checkFailures() error {
	fs := slices.Clone(r.set.Failures)
	slices.SortStableFunc(fs, func(a, b Failure) int {
		if c := cmp.Compare(a.GPU.Server, b.GPU.Server); c != 0 {
			return c
		}
		if c := cmp.Compare(a.GPU.Slot, b.GPU.Slot); c != 0 {
			return c
		}
		return cmp.Compare(a.At, b.At)
	})
	r.failsOf = map[topology.GPU][]float64{}
	r.down = map[topology.GPU]bool{}
	for i, f := range fs {
		g := f.GPU
		name := fmt.Sprintf("%d/%d", g.Server, g.Slot)
		switch {
		case !r.cluster.Has(g):
			return gpufair.Invalid("Settings.Failures.GPU", name, gpufair.ErrUnknownID, "no such GPU slot")
		case !finiteNonNeg(f.At):
			return gpufair.Invalid("Settings.Failures.At", name, gpufair.ErrValue, "failure at %v", f.At)
		case f.Repair != 0 && (!(f.Repair > f.At) || math.IsInf(f.Repair, 0)):
			return gpufair.Invalid("Settings.Failures.Repair", name, gpufair.ErrValue, "repair at %v of a failure at %v", f.Repair, f.At)
		case i > 0 && fs[i-1].GPU == g && (fs[i-1].Repair == 0 || fs[i-1].Repair >= f.At):
			return gpufair.Invalid("Settings.Failures.At", name, gpufair.ErrValue, "failure at %v before the repair of the failure at %v", f.At, fs[i-1].At)
		}
		r.faults = append(r.faults, fault{t: f.At, gpu: g, fail: true})
		if f.Repair != 0 {
			r.faults = append(r.faults, fault{t: f.Repair, gpu: g})
		}
		r.failsOf[g] = append(r.failsOf[g], f.At)
	}
	slices.SortStableFunc(r.faults, func(a, b fault) int { return cmp.Compare(a.t, b.t) })
	return nil
}

// loop runs rounds until the run ends.
func (r *run) loop(ctx context.Context) error {
	L := r.set.Round
	rnd, stalled := 0, 0
	for r.finished < len(r.jobs) {
		if err := ctx.Err(); err != nil {
			return err
		}
		now := float64(rnd) * L
		if r.set.Horizon > 0 && now >= r.set.Horizon {
			break
		}
		if rnd > maxRounds { // jobs of later phases, or leases cut short, took that long
			return gpufair.Invalid("Settings.Round", "", gpufair.ErrTooLarge, "%d of %d jobs unfinished after %v rounds of %v s", len(r.jobs)-r.finished, len(r.jobs), float64(maxRounds), L)
		}
		r.admit(now)
		if len(r.active) == 0 {
			a, ok := r.nextArrival()
			if !ok { // not reached: a gated job waits on a job still to finish
				return fmt.Errorf("%w: %d jobs wait behind barriers with none running", ErrStalled, len(r.jobs)-r.finished)
			}
			rnd = r.skipTo(rnd, a)
			continue
		}
		moved, err := r.round(ctx, rnd, now)
		if err != nil {
			return err
		}
		r.rounds++
		r.end = now + L
		// Rounds without progress, not rounds without placements: a gang
		// placed every round where it runs at rate 0 (spread over servers
		// at a spread rate of 0) kept the run going for ever.
		if !moved {
			if stalled++; stalled >= r.set.Stall {
				return fmt.Errorf("%w: %d rounds up to round %d", ErrStalled, stalled, rnd)
			}
		} else {
			stalled = 0
		}
		if p := r.set.Progress; p != nil {
			p(Progress{Round: rnd, Now: now + L, Finished: r.finished, Jobs: len(r.jobs), Active: len(r.active)})
		}
		if r.set.StopWhenMeasured && r.measuredDone() {
			break
		}
		rnd++
	}
	return nil
}

// admit makes the jobs that arrived by now active, and reports them: the
// trace's, then those a barrier released.
func (r *run) admit(now float64) {
	for r.next < len(r.jobs) && r.jobs[r.next].arrival <= now {
		r.arrive(r.next)
		r.next++
		r.skipGated()
	}
	n := 0
	for n < len(r.released) && r.jobs[r.released[n]].arrival <= now {
		r.arrive(r.released[n])
		n++
	}
	if n > 0 {
		r.released = slices.Delete(r.released, 0, n)
		slices.Sort(r.active)
	}
}

// arrive makes job i active and reports its arrival.
func (r *run) arrive(i int) {
	js := &r.jobs[i]
	j := js.job
	aj := j.Job
	aj.Weight = j.weight()
	aj.Rates = slices.Clone(js.toldRates())
	r.pending = append(r.pending, round.Arrive(js.arrival, aj, j.Steps))
	r.active = append(r.active, i)
}

// nextArrival returns the time of the next arrival, from the trace or a
// lifted barrier; false if none is due (every job left is behind a
// barrier, or none is left).
func (r *run) nextArrival() (float64, bool) {
	a, ok := math.Inf(1), false
	if r.next < len(r.jobs) {
		a, ok = r.jobs[r.next].arrival, true
	}
	if len(r.released) > 0 {
		a, ok = min(a, r.jobs[r.released[0]].arrival), true
	}
	return a, ok
}

// skipTo returns the first round, after rnd, that starts at or after
// arrival a.
func (r *run) skipTo(rnd int, a float64) int {
	q := int(math.Ceil(a / r.set.Round))
	for float64(q)*r.set.Round < a {
		q++
	}
	return max(q, rnd+1)
}

func (r *run) measuredDone() bool {
	for i := r.set.MeasureFrom; i < r.set.MeasureTo; i++ {
		if math.IsNaN(r.jobs[i].finish) {
			return false
		}
	}
	return true
}

// events returns the events since the previous round, in time order:
// progress and departures, failures and repairs up to now, and arrivals
// (at equal times, in that order).
func (r *run) events(now float64) []round.Event {
	var ev []round.Event
	for _, e := range r.pending {
		if e.Kind != round.Arrived {
			ev = append(ev, e)
		}
	}
	for ; r.nextFault < len(r.faults) && r.faults[r.nextFault].t <= now; r.nextFault++ {
		f := r.faults[r.nextFault]
		if f.fail {
			ev = append(ev, round.Fail(f.t, f.gpu))
			r.down[f.gpu] = true
		} else {
			ev = append(ev, round.Repair(f.t, f.gpu))
			delete(r.down, f.gpu)
		}
	}
	for _, e := range r.pending {
		if e.Kind == round.Arrived {
			ev = append(ev, e)
		}
	}
	slices.SortStableFunc(ev, func(a, b round.Event) int { return cmp.Compare(a.Time, b.Time) })
	r.pending = r.pending[:0]
	return ev
}

// round runs one round and reports whether a job progressed in it.
func (r *run) round(ctx context.Context, rnd int, now float64) (moved bool, err error) {
	name := r.sched.Name()
	if ev := r.events(now); len(ev) > 0 {
		if err := r.sched.Apply(ev...); err != nil {
			return false, fmt.Errorf("sim: %s, round %d: %w", name, rnd, err)
		}
	}
	d, err := r.sched.Decide(ctx, now)
	if err != nil {
		return false, fmt.Errorf("sim: %s, round %d: %w", name, rnd, err)
	}
	if err := r.check(d, rnd, now); err != nil {
		return false, err
	}
	// The lease ends with the round, or earlier if the decision says so.
	// The next round starts at (rnd+1)·L, which may differ from now + L
	// in the last bit.
	next := float64(rnd+1) * r.set.Round
	end := next
	if d.End-d.Start < r.set.Round {
		end = min(d.End, next)
	}
	stat := RoundStat{Start: now, Placements: len(d.Placements), Partial: d.Partial}
	for _, p := range d.Placements {
		restarted, progressed := r.runPlacement(p, rnd, now, end, next)
		if restarted {
			stat.Restarts++
		}
		if len(p.Jobs) > 1 {
			stat.Shared++
		}
		moved = moved || progressed
	}
	r.history = append(r.history, stat)
	r.active = slices.DeleteFunc(r.active, func(i int) bool { return !math.IsNaN(r.jobs[i].finish) })
	return moved, nil
}

// check validates decision d of round rnd, at now, against the contract.
func (r *run) check(d *round.Decision, rnd int, now float64) error {
	if d == nil {
		return fmt.Errorf("%w: round %d: no decision", ErrPlacement, rnd)
	}
	if d.Start != now || !(d.End > d.Start) || math.IsInf(d.End, 0) {
		return fmt.Errorf("%w: round %d: decision for [%v, %v), round at %v", ErrPlacement, rnd, d.Start, d.End, now)
	}
	for i, p := range d.Placements {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: round %d, placement %d: "+format, append([]any{ErrPlacement, rnd, i}, args...)...)
		}
		k := slices.Index(r.types, p.Type)
		switch {
		case k < 0:
			return bad("GPU type %q is not the workload's", p.Type)
		case len(p.Jobs) == 0:
			return bad("no jobs")
		case p.Renewed && p.Restart:
			return bad("marked both Renewed and Restart")
		}
		for _, g := range p.GPUs {
			switch {
			case !r.cluster.Has(g):
				return bad("slot %v outside the cluster", g)
			case r.serverType[g.Server] != k:
				return bad("slot %v is not a %q GPU", g, p.Type)
			case r.slotUsed[g.Server][g.Slot] == rnd+1:
				return bad("slot %v used twice", g)
			case r.down[g]:
				return bad("slot %v has failed", g)
			}
			r.slotUsed[g.Server][g.Slot] = rnd + 1
		}
		for _, id := range p.Jobs {
			ji, ok := r.index[id]
			if !ok {
				return bad("unknown job %q", id)
			}
			js := &r.jobs[ji]
			switch {
			case !(js.arrival <= now) || !math.IsNaN(js.finish):
				return bad("job %q is not in the system", id)
			case js.placedAt == rnd:
				return bad("job %q placed twice", id)
			case len(p.GPUs) != js.job.Gang && !(js.job.Elastic && len(p.GPUs) >= 1 && len(p.GPUs) <= js.job.Gang):
				return bad("job %q has %d GPUs for a gang of %d", id, len(p.GPUs), js.job.Gang)
			case !(js.job.Rates[k] > 0):
				return bad("job %q cannot run on %q", id, p.Type)
			case p.Renewed && !r.held(js, p.GPUs, rnd):
				return bad("job %q renewed on slots it did not hold until now", id)
			}
			js.placedAt = rnd
		}
	}
	return nil
}

// held reports whether job js ran the whole previous round on gpus.
func (r *run) held(js *jobState, gpus []topology.GPU, rnd int) bool {
	if js.lastRound != rnd-1 || !js.whole {
		return false
	}
	r.slots = append(r.slots[:0], gpus...)
	topology.SortGPUs(r.slots)
	return slices.Equal(js.last, r.slots)
}

// runPlacement runs placement p's jobs from now until end, or until a GPU
// of p fails, and reports whether one of them restarted from a checkpoint
// and whether one progressed; next is the start of the next round.
func (r *run) runPlacement(p round.Placement, rnd int, now, end, next float64) (restarted, moved bool) {
	k := slices.Index(r.types, p.Type)
	for _, g := range p.GPUs {
		if t, ok := r.failure(g, now, end); ok {
			end = t
		}
	}
	r.slots = append(r.slots[:0], p.GPUs...)
	topology.SortGPUs(r.slots)
	spread := topology.ServersUsed(p.GPUs) > 1
	rates := r.sharedRates(p, k, spread)
	// p resumes from a checkpoint if it is not Renewed and one of its
	// jobs ran before (check refuses Renewed with Restart). A placement
	// of jobs none of which ran is free whatever its flags: one marked
	// Restart was charged. A job placed for the first time beside one
	// that ran is charged if p is marked Restart, as Ledger.Commit marks
	// it, so that the runs of Commit's schedulers stay as they were.
	resumes := false
	for _, id := range p.Jobs {
		resumes = resumes || (!p.Renewed && r.jobs[r.index[id]].ran > 0)
	}
	for i, id := range p.Jobs {
		js := &r.jobs[r.index[id]]
		restart := resumes && (js.ran > 0 || p.Restart)
		restarted = restarted || restart
		if r.progress(js, rates[i], len(p.GPUs), len(p.Jobs), restart, rnd, now, end) {
			moved = true
		}
		js.whole = end == next
	}
	return restarted, moved
}

// sharedRates returns the rate of each job of placement p on type k: its
// own (on one server or spread), its co-located rate when it shares the
// GPUs with one other job and Settings.Colocated measures the pair, or
// else its own rate over the number of jobs sharing (time slicing). A
// spread pair keeps the slowdown spreading costs each job alone.
func (r *run) sharedRates(p round.Placement, k int, spread bool) []float64 {
	out := make([]float64, len(p.Jobs))
	for i, id := range p.Jobs {
		j := r.jobs[r.index[id]].job
		out[i] = j.rate(k, spread) / float64(len(p.Jobs))
		if j.Elastic { // linear speedup up to its gang
			out[i] *= float64(len(p.GPUs)) / float64(j.Gang)
		}
	}
	if len(p.Jobs) != 2 || r.set.Colocated == nil {
		return out
	}
	a, b := r.jobs[r.index[p.Jobs[0]]].job, r.jobs[r.index[p.Jobs[1]]].job
	ra, rb, ok := r.set.Colocated(p.Type, a, b)
	if !ok || !finiteNonNeg(ra) || !finiteNonNeg(rb) {
		return out
	}
	if spread {
		ra *= a.rate(k, true) / a.rate(k, false)
		rb *= b.rate(k, true) / b.rate(k, false)
	}
	return []float64{ra, rb}
}

// failure returns the first failure of GPU g in (from, to).
func (r *run) failure(g topology.GPU, from, to float64) (float64, bool) {
	ts := r.failsOf[g]
	i, _ := slices.BinarySearch(ts, math.Nextafter(from, math.Inf(1)))
	if i < len(ts) && ts[i] < to {
		return ts[i], true
	}
	return 0, false
}

// progress advances job js at rate over [now, end) on gpus GPUs, sharing
// them with shared−1 other jobs, records the event that reports it, and
// reports whether the job's remaining work went down.
func (r *run) progress(js *jobState, rate float64, gpus, shared int, restart bool, rnd int, now, end float64) bool {
	dur := end - now
	lost := 0.0
	if restart {
		lost = min(r.set.Restart, dur)
		js.restarts++
	}
	if js.ran == 0 {
		js.start = now
	}
	js.ran++
	js.lastRound = rnd
	js.last = append(js.last[:0], r.slots...)
	// Jobs that share GPUs share the GPU time they hold equally.
	gang := float64(gpus) / float64(shared)
	avail := dur - lost
	if rate > 0 && js.remaining <= rate*avail {
		used := lost + js.remaining/rate
		js.finish = min(now+used, end)
		js.remaining = 0
		js.service += gang * used
		r.finished++
		r.pending = append(r.pending, round.Depart(js.finish, js.job.ID))
		r.finishedJob(js)
		return true
	}
	before := js.remaining
	js.remaining -= rate * avail
	js.service += gang * dur
	r.pending = append(r.pending, round.Progress(end, js.job.ID, js.job.Steps-js.remaining))
	return js.remaining < before
}
