package auction

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// DefaultRound is the lease of a Themis decision when ThemisSettings.Round
// is 0: 6 minutes, Gavel's round, so that both mechanisms decide as often.
const DefaultRound = 360.0

// unknownWork is the work left assumed for a job that did not say its
// total work, so that its agent can still price GPUs.
const unknownWork = 1e15

// ThemisSettings tune a Themis scheduler. A nil *ThemisSettings means the
// zero value: 6-minute decisions, the arbiter's defaults (10-minute GPU
// leases, f = 0, no budget, no starvation guard), and gangs as fast spread
// over servers as on one.
type ThemisSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound. The arbiter runs once per decision, so a GPU lease
	// that ends within a round is released at the next decision: keep
	// Round no longer than Arbiter.Lease.
	Round float64
	// Arbiter configures the auction arbiter (its Budget bounds each
	// Decide's round).
	Arbiter ArbiterSettings
	// Spread, if not nil, returns job id's rates over the scheduler's
	// types when its gang spans servers (Gavel's unconsolidated
	// throughputs); nil, or a nil result, means the job's Rates.
	Spread func(id alloc.JobID) []float64
	// Work, if not nil, returns app's total work B in GPU-seconds (the
	// budget its hyper-parameter optimizer plans to spend, equation 2), or
	// 0 when unknown; then B is the work of the app's jobs seen so far.
	// It must not be negative or NaN, and B must give a T_id (AppAgent)
	// that is positive and finite and whose reciprocal is finite: B /
	// min(R_C, D) not so small that its reciprocal overflows, nor B /
	// min(R_C, D) · N_avg so large that it overflows (Decide). Where B is
	// the work of the app's jobs and gives no T_id (0, no work being known,
	// or past float64's range), the app's agent cannot price it (its error
	// is in Round.Errors, which Observe sees) and the other apps go on.
	Work func(app alloc.TenantID) float64
	// Phases, if not nil, returns app's plan as its hyper-parameter
	// optimizer knows it (Figure 7's getNumPhases and getJobsInPhase): all
	// its jobs, phase by phase, each phase's jobs arriving once every job
	// of the one before has finished, as successive halving runs them. The
	// app's agent adds the phases after the current one to T_sh (equation
	// 2) and takes app_demand_max from the plan (AppAgent.Phases). nil,
	// or a nil result, means the jobs in the system are all the app knows.
	Phases func(app alloc.TenantID) [][]PlannedJob
	// Observe, if not nil, is called with each arbiter round that Decide
	// runs (Arbiter.Advance's Round: the ranking, the invited apps, the
	// bids, the outcome and every grant), to trace why an app was or was
	// not served. The round's At is the Unix epoch plus Decide's now in
	// seconds (within ±292 years, the range of time.Duration; times beyond
	// count as its ends). It must not modify the round.
	Observe func(*Round)
	// JobLocality prices each job's slowdown on a bid row by where the app
	// scheduler would put its gang (section 4.3.2's S(G_j) per job; see
	// AppAgent.JobLocality). False slows every job by the row's spread.
	JobLocality bool
}

// PlannedJob is a job of an app's plan (ThemisSettings.Phases): the job as
// it will arrive and its total work, as in round.Arrive.
type PlannedJob struct {
	alloc.Job
	Work float64
}

// Themis is Themis' multi-round auction arbiter (NSDI'20, section 3.3.2;
// Arbiter) on the round contract. Its apps are the jobs' owners (a job
// with no Owner is an app of its own): each app's AppAgent bids, for the
// GPUs offered, the finish-time fairness the app expects with them, and
// its app scheduler shares the GPUs the app holds among its jobs. Winners
// keep c_i of their rows; hidden payments and leftovers go, in the same
// round, to apps drawn at random, as the arbiter does.
//
// App scheduler: each round the app's jobs, longest remaining work first,
// take GPUs from what the app holds, one GPU type per job (the fastest for
// it among those the app holds), the slots it ran on first where the app
// still holds them (unless others run it faster: moving restarts it), then
// fullest servers first: an Elastic job 1 to Gang of them, a rigid job
// exactly Gang or none. GPUs no job can use stay idle for the round. The
// arbiter leases an app the slots it held last first, so that winning
// GPUs again keeps its jobs where they run.
//
// Events reach the arbiter at their own times: an app joins with its first
// job and leaves with its last, failures and repairs take GPUs out of
// service and back; Decide runs a round of the arbiter (Advance) at now.
// An app whose last job departs as more of its jobs arrive, in the same
// Apply and at the same time (the barrier between two phases of successive
// halving), stays: it keeps its leases and its place in the arbiter.
// N_avg, the number of apps in the system averaged over an app's life,
// is kept from the arrivals and departures. Its bookkeeping of jobs,
// failed GPUs and leases is a round.Ledger's.
//
// The zero value is not usable; build one with NewThemis. A Themis is not
// safe for concurrent use.
type Themis struct {
	arb   *Arbiter
	set   ThemisSettings
	l     *round.Ledger
	epoch time.Time
	capa  alloc.Capacity // every GPU of each type
	apps  map[alloc.TenantID]*themisApp
	// n is the number of apps present since last; area is ∫ n dt up to
	// last (seconds on the caller's clock).
	n          int
	last, area float64
	held       map[string][]topology.GPU // scratch: slots per app
}

// themisApp is an app's life as Themis sees it.
type themisApp struct {
	agent  *AppAgent
	jobs   []alloc.JobID // in the system, by arrival
	seen   float64       // work of every job that arrived, GPU-seconds
	joined bool          // whether it is the arbiter's app now
	// demand is the most GPUs its jobs in the system have asked for at
	// once, its app_demand_max without a plan (AppAgent.Demand).
	demand int
	// startArea is ∫ n dt up to the app's first arrival.
	startArea float64
}

// NewThemis returns Themis' arbiter on cluster c, with job rates given over
// types (each a type of c; nil: every type of c, as round.NewLedger),
// settings s (nil: the zero ThemisSettings) and the arbiter's random draws
// from src (a math/rand/v2 Source, such as rand.NewPCG(1, 2): the same
// source and events give the same decisions). It returns the errors of
// round.NewLedger and NewArbiter (among them a nil src), and an
// *gpufair.InputError for a round that is not positive and finite.
func NewThemis(c topology.Cluster, types []topology.GPUType, s *ThemisSettings, src rand.Source) (*Themis, error) {
	var set ThemisSettings
	if s != nil {
		set = *s
	}
	if set.Round == 0 {
		set.Round = DefaultRound
	}
	if !(set.Round > 0) || math.IsInf(set.Round, 0) {
		return nil, badInput("ThemisSettings.Round", "", gpufair.ErrValue, "round length %v", set.Round)
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		return nil, err
	}
	arb, err := NewArbiter(c, &set.Arbiter, src)
	if err != nil {
		return nil, err
	}
	capa, err := alloc.CapacityOf(c, types)
	if err != nil {
		return nil, err
	}
	return &Themis{arb: arb, set: set, l: l, epoch: time.Unix(0, 0).UTC(), capa: capa, apps: map[alloc.TenantID]*themisApp{}, held: map[string][]topology.GPU{}}, nil
}

// Name returns "themis".
func (t *Themis) Name() string { return "themis" }

// Ledger returns the scheduler's ledger, to read only.
func (t *Themis) Ledger() *round.Ledger { return t.l }

// Arbiter returns the arbiter, to read only (its leases and cached rho).
func (t *Themis) Arbiter() *Arbiter { return t.arb }

// at returns the arbiter's time for seconds on the caller's clock. The
// arbiter counts in time.Duration, whose range is ±292 years around the
// epoch: a time beyond it counts as its end, so that the arbiter's clock
// never runs back (6.95e10 s wrapped round to 1677, before every lease).
func (t *Themis) at(sec float64) time.Time { return t.epoch.Add(clock(sec)) }

// clock returns sec as a time.Duration, or the end of its range that sec
// lies beyond.
func clock(sec float64) time.Duration {
	ns := sec * float64(time.Second)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(ns)
}

// appOf returns the app job j belongs to: its owner, or itself.
func appOf(j alloc.Job) alloc.TenantID {
	if j.Owner == "" {
		return alloc.TenantID(j.ID)
	}
	return j.Owner
}

// count moves the contention integral to sec and adds d apps.
func (t *Themis) count(sec float64, d int) {
	if sec > t.last {
		t.area += float64(t.n) * (sec - t.last)
		t.last = sec
	}
	t.n += d
}

// Apply checks and applies events (round.Ledger.Apply), and passes them to
// the arbiter at their times: an app joins with its first job, with an
// AppAgent, and leaves with its last; failures and repairs take GPUs out
// of service and back. A refused call changes nothing: a job whose gang
// fits no GPU type it runs on is gpufair.ErrTooLarge.
func (t *Themis) Apply(events ...round.Event) error {
	if err := t.l.Apply(events...); err != nil {
		return err
	}
	for i, e := range events {
		at := t.at(e.Time)
		var err error
		switch e.Kind {
		case round.Arrived:
			j, ok := t.l.Job(e.Job.ID)
			if !ok {
				continue // departed in the same call
			}
			err = t.arrive(e.Time, j)
		case round.Departed:
			err = t.depart(e.Time, e.Job.ID, events[i+1:])
		case round.Failed:
			err = t.arb.Fail(at, e.GPU)
		case round.Repaired:
			err = t.arb.Repair(at, e.GPU)
		}
		if err != nil {
			return err // the ledger checked the event: not reached
		}
	}
	return nil
}

// arrive adds job j to its app, which joins if it is new.
func (t *Themis) arrive(sec float64, j *round.Job) error {
	id := appOf(j.Job)
	app := t.apps[id]
	if app == nil {
		t.count(sec, 0)
		app = &themisApp{startArea: t.area}
		// The agent reads the arbiter's clock, which stops at the ends of
		// its range (at): a start beyond them on the caller's clock made
		// every rho negative. Within them, the start is sec itself.
		start := sec
		if d := clock(sec); d == math.MaxInt64 || d == math.MinInt64 {
			start = d.Seconds()
		}
		t.newAgent(id, app, t.l, start)
		t.apps[id] = app
	}
	work := j.Work
	if work == 0 {
		work = unknownWork
	}
	app.seen += work * float64(j.Gang) / slices.Max(j.Rates)
	app.jobs = append(app.jobs, j.ID)
	app.demand = max(app.demand, gangs(t.jobsOf(app)))
	if app.joined {
		return nil
	}
	if err := t.arb.Join(t.at(sec), string(id), app.agent); err != nil {
		return err
	}
	t.count(sec, 1)
	app.joined = true
	return nil
}

// newAgent gives app id its agent, which reads the jobs from ledger l and
// the contention and work from t, from start on the caller's clock.
func (t *Themis) newAgent(id alloc.TenantID, app *themisApp, l *round.Ledger, start float64) {
	app.agent = &AppAgent{Ledger: l, Capacity: t.capa, Epoch: t.epoch, Start: start, Spread: t.set.Spread,
		Jobs:        func() []*round.Job { return t.jobsOf(app) },
		Contention:  func(now float64) float64 { return t.contention(app, now) },
		Work:        func() float64 { return t.workOf(id, app) },
		Demand:      func() int { return app.demand },
		JobLocality: t.set.JobLocality,
	}
	if t.set.Phases != nil {
		app.agent.Phases = t.set.Phases(id)
	}
}

// depart removes job id from its app, which leaves with its last job
// unless one of rest (the events after this one) brings it a job at the
// same time: the next phase of a successive-halving app, which keeps its
// leases across the barrier. The app's history (its first arrival, the
// work seen) stays, should its jobs come back later.
func (t *Themis) depart(sec float64, id alloc.JobID, rest []round.Event) error {
	for name, app := range t.apps {
		i := slices.Index(app.jobs, id)
		if i < 0 {
			continue
		}
		app.jobs = slices.Delete(app.jobs, i, i+1)
		if len(app.jobs) > 0 {
			return nil
		}
		for _, e := range rest {
			if e.Time == sec && e.Kind == round.Arrived && appOf(e.Job) == name {
				return nil
			}
		}
		if err := t.arb.Leave(t.at(sec), string(name)); err != nil {
			return err
		}
		t.count(sec, -1)
		app.joined = false
		return nil
	}
	return nil
}

// jobsOf returns the app's jobs in the system, from the ledger.
func (t *Themis) jobsOf(app *themisApp) []*round.Job {
	out := make([]*round.Job, 0, len(app.jobs))
	for _, id := range app.jobs {
		if j, ok := t.l.Job(id); ok {
			out = append(out, j)
		}
	}
	return out
}

// workOf returns B for app id: ThemisSettings.Work's, or the work seen.
func (t *Themis) workOf(id alloc.TenantID, app *themisApp) float64 {
	if t.set.Work != nil {
		if b := t.set.Work(id); b > 0 {
			return b
		}
	}
	return app.seen
}

// contention returns the app's N_avg at now: the mean number of apps in
// the system since its first arrival, or the number now when no time has
// passed (at least 1).
func (t *Themis) contention(app *themisApp, now float64) float64 {
	from := app.agent.Start
	if now <= from {
		return float64(max(t.n, 1))
	}
	area := t.area
	if now > t.last {
		area += float64(t.n) * (now - t.last)
	}
	return max((area-app.startArea)/(now-from), 1)
}

// Decide runs an arbiter round at now and lets each app's scheduler place
// its jobs on the GPUs it holds. An error of the arbiter leaves the ledger
// as it was, but not the arbiter. It returns an *gpufair.InputError, and
// changes nothing, if ThemisSettings.Spread gives a job in the system other
// than one rate per GPU type (gpufair.ErrShape), if ThemisSettings.Work
// gives an app in the system a value that is negative, NaN or +Inf, or one
// whose isolated finish time T_id (AppAgent) is so small that its
// reciprocal overflows, or overflows itself at the app's contention now or
// up to the next event (gpufair.ErrValue), or if the plan
// ThemisSettings.Phases gave an app in the system has a job that
// round.Arrive would refuse: other than one rate per GPU type
// (gpufair.ErrShape), a rate that is negative or not finite, a gang below
// 1, or work that is negative or not finite (gpufair.ErrValue).
func (t *Themis) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.checkSpread(); err != nil {
		return nil, err
	}
	if err := t.checkApps(now); err != nil {
		return nil, err
	}
	if err := t.l.Begin(now); err != nil {
		return nil, err
	}
	r, err := t.arb.Advance(ctx, t.at(now))
	if err != nil {
		t.l.Abort()
		return nil, err
	}
	if t.set.Observe != nil {
		t.set.Observe(r)
	}
	clear(t.held)
	for _, ls := range t.arb.Leases() {
		t.held[ls.App] = append(t.held[ls.App], ls.GPU)
	}
	d := &round.Decision{Start: now, End: round.LeaseEnd(now, t.set.Round), Partial: r.Partial}
	for _, id := range t.activeApps() {
		d.Placements = append(d.Placements, t.schedule(t.jobsOf(t.apps[id]), t.held[string(id)])...)
	}
	if err := t.l.Commit(d); err != nil {
		return nil, err
	}
	return d, nil
}

// activeApps returns the names of the apps with jobs in the system, sorted.
func (t *Themis) activeApps() []alloc.TenantID {
	names := make([]alloc.TenantID, 0, len(t.apps))
	for id, app := range t.apps {
		if len(app.jobs) > 0 {
			names = append(names, id)
		}
	}
	slices.Sort(names)
	return names
}

// checkSpread reports a job in the system whose ThemisSettings.Spread
// rates are not one per type.
func (t *Themis) checkSpread() error {
	return checkSpread("ThemisSettings.Spread", t.set.Spread, t.l.Jobs())
}

// checkApps reports, for the apps with jobs in the system, by name, a
// ThemisSettings.Work that is negative, NaN or +Inf, a plan whose jobs
// checkPhases refuses, and a positive ThemisSettings.Work whose T_id is not
// positive and finite at the app's contention from now until the next
// event: the agents would price every holding at +Inf, 0 or NaN, or index a
// plan's rates by type in goroutines, where a panic ends the program.
func (t *Themis) checkApps(now float64) error {
	for _, id := range t.activeApps() {
		app := t.apps[id]
		var b float64
		if t.set.Work != nil {
			if b = t.set.Work(id); !(b >= 0) || math.IsInf(b, 1) {
				return badInput("ThemisSettings.Work", string(id), gpufair.ErrValue, "total work %v", b)
			}
		}
		if err := checkPhases("ThemisSettings.Phases", app.agent.Phases, len(t.capa.Count)); err != nil {
			return err
		}
		// Where Work gives 0, B is the work of the app's jobs seen so far,
		// which the ledger took: it is not refused here. Where it gives no
		// T_id (unknown work, or work past float64's range), the agent
		// refuses to price the app (AppAgent.Rho), and the other apps go
		// on.
		if b == 0 {
			continue
		}
		// N_avg is at least 1, and until the next event lies between its
		// value now and the number of apps now.
		most := max(t.contention(app, now), float64(t.n), 1)
		_, d := app.agent.later(t.jobsOf(app))
		if lo, hi := isolated(b, t.capa, d, 1), isolated(b, t.capa, d, most); !(lo > 0) || math.IsInf(1/lo, 1) || math.IsInf(hi, 1) {
			return badInput("ThemisSettings.Work", string(id), gpufair.ErrValue, "total work B = %v GPU-seconds gives an isolated finish time T_id = B / min(R_C, D) · N_avg in [%v, %v]: it or its reciprocal overflows", b, lo, hi)
		}
	}
	return nil
}

// isolated returns T_id = b / min(R_C, d) · n, R_C being the GPUs of capa:
// equation 2's finish time in isolation, for work b, app_demand_max d and
// N_avg n.
func isolated(b float64, capa alloc.Capacity, d int, n float64) float64 {
	gpus := 0
	for _, c := range capa.Count {
		gpus += int(c)
	}
	return b / float64(min(gpus, d)) * n
}

// checkPhases reports a job of plan (field names it) with other than types
// rates, a rate that is negative or not finite, a gang below 1 or work that
// is negative or not finite, as round.Arrive does.
func checkPhases(field string, plan [][]PlannedJob, types int) error {
	for _, phase := range plan {
		for _, pj := range phase {
			id := string(pj.ID)
			switch {
			case len(pj.Rates) != types:
				return badInput(field, id, gpufair.ErrShape, "%d rates for %d GPU types", len(pj.Rates), types)
			case pj.Gang < 1:
				return badInput(field, id, gpufair.ErrValue, "gang %d is below 1", pj.Gang)
			case !(pj.Work >= 0) || math.IsInf(pj.Work, 0):
				return badInput(field, id, gpufair.ErrValue, "total work %v", pj.Work)
			}
			for _, r := range pj.Rates {
				if !(r >= 0) || math.IsInf(r, 0) {
					return badInput(field, id, gpufair.ErrValue, "rate %v", r)
				}
			}
		}
	}
	return nil
}

// checkSpread reports a job of jobs whose spread rates (field names
// spread) are not one per type: the agents and the app scheduler index
// them by type (rateOf), the agents in goroutines, where a panic ends the
// program.
func checkSpread(field string, spread func(alloc.JobID) []float64, jobs []*round.Job) error {
	if spread == nil {
		return nil
	}
	for _, j := range jobs {
		if sp := spread(j.ID); sp != nil && len(sp) != len(j.Rates) {
			return badInput(field, string(j.ID), gpufair.ErrShape, "%d rates for %d GPU types", len(sp), len(j.Rates))
		}
	}
	return nil
}

// schedule is the app scheduler (see Themis): it places jobs, longest
// remaining work first, on the slots held. A job keeps the slots it ran on
// where the app still holds them, unless other slots of the app run it
// faster: moving it would restart it from a checkpoint for nothing.
func (t *Themis) schedule(jobs []*round.Job, held []topology.GPU) []round.Placement {
	free := map[int][]topology.GPU{} // by server
	for _, g := range held {
		free[g.Server] = append(free[g.Server], g)
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(a, b *round.Job) int { return cmp.Compare(b.Remaining(), a.Remaining()) })
	types := t.l.Types()
	var out []round.Placement
	for _, j := range order {
		var spread []float64
		if t.set.Spread != nil {
			spread = t.set.Spread(j.ID)
		}
		var ran map[topology.GPU]bool
		if h, ok := t.l.Holding(j.ID); ok {
			ran = map[topology.GPU]bool{}
			for _, g := range h.GPUs {
				ran[g] = true
			}
		}
		rate := func(k int, g []topology.GPU) float64 {
			r := rateOf(j.Job, spread, k, topology.ServersUsed(g) > 1)
			if j.Elastic {
				r *= float64(len(g)) / float64(j.Gang)
			}
			return r
		}
		best, bestK, bestRate := []topology.GPU(nil), -1, 0.0
		for k := range types {
			g := t.take(free, k, j.Gang, j.Elastic, ran)
			if g == nil {
				continue
			}
			r := rate(k, g)
			if ran != nil {
				if g0 := t.take(free, k, j.Gang, j.Elastic, nil); rate(k, g0) > r {
					g, r = g0, rate(k, g0)
				}
			}
			if r > bestRate {
				best, bestK, bestRate = g, k, r
			}
		}
		if best == nil {
			continue
		}
		for _, g := range best {
			free[g.Server] = slices.DeleteFunc(free[g.Server], func(x topology.GPU) bool { return x == g })
		}
		topology.SortGPUs(best)
		out = append(out, round.Placement{Jobs: []alloc.JobID{j.ID}, Type: types[bestK], GPUs: best})
	}
	return out
}

// take returns up to gang free slots of type k (a rigid job: exactly
// gang, or nil), without removing them: the slots in ran first, then the
// fullest servers'.
func (t *Themis) take(free map[int][]topology.GPU, k, gang int, elastic bool, ran map[topology.GPU]bool) []topology.GPU {
	var servers []int
	total := 0
	own := map[int]int{} // slots in ran per server
	for s, gs := range free {
		if t.l.TypeOf(s) == k && len(gs) > 0 {
			servers = append(servers, s)
			total += len(gs)
			for _, g := range gs {
				if ran[g] {
					own[s]++
				}
			}
		}
	}
	if total == 0 || (!elastic && total < gang) {
		return nil
	}
	slices.SortFunc(servers, func(a, b int) int {
		return cmp.Or(cmp.Compare(own[b], own[a]), cmp.Compare(len(free[b]), len(free[a])), cmp.Compare(a, b))
	})
	var out []topology.GPU
	for _, s := range servers {
		gs := free[s]
		if own[s] > 0 {
			gs = slices.Clone(gs)
			slices.SortStableFunc(gs, func(x, y topology.GPU) int { return cmp.Compare(own01(ran[y]), own01(ran[x])) })
		}
		n := min(gang-len(out), len(gs))
		out = append(out, gs[:n]...)
		if len(out) == gang {
			break
		}
	}
	return out
}

// own01 is 1 for a slot a job ran on, 0 otherwise.
func own01(ran bool) int {
	if ran {
		return 1
	}
	return 0
}

// rateOf returns job j's rate on type k for its whole gang, spread over
// servers or not.
func rateOf(j alloc.Job, spread []float64, k int, spreadOut bool) float64 {
	if spreadOut && spread != nil {
		return spread[k]
	}
	return j.Rates[k]
}

var _ round.Scheduler = (*Themis)(nil)

// AppAgent is the Agent of one app on the round contract: type-aware (its
// jobs' rates per GPU type, on one server or spread), for an app of any
// number of jobs, rigid or elastic. A one-job app is the special case of
// equation 1.
//
// Its rho for a holding G (GPUs per server, kept until the app finishes)
// is equation 2's, with the app's jobs as its optimizer sees them now:
//
//	rho(G) = (now − Start + T(G)) / T_id,   T_id = B / min(R_C, D) · N_avg,
//
// T(G) being the time the jobs in the system take on G, packed by
// ftf.PhaseTime (each job's serial time per step Gang/rate, its rate the
// mean over G's GPU types weighted by their GPUs, its slowdown rate/spread
// when G spans servers; each job's gang as its own job_demand_max, the
// most GPUs the app scheduler gives it, and all of them at once for a
// rigid job, ftf.JobInfo.Rigid), plus, for an app with a plan
// (Phases), the time each later phase's jobs take on G packed the same
// way (equation 2's sum over phases), B the app's
// work (Work), D its app_demand_max, R_C the cluster's GPUs and N_avg its
// Contention. D is the largest sum of gangs over the plan's phases, or
// without a plan Demand's (by default the sum of the gangs of the jobs in
// the system). A holding
// on which a job with work left cannot run (no GPU it has a rate on, or,
// for a rigid job, no type with a whole gang of them) gives +Inf.
//
// The slowdown is the holding's, not each job's: a holding that spans
// servers slows every job by rate/spread, though the app scheduler may
// put each job on one server. Section 4.3.2 lets the optimizer estimate
// S(G_j) for each job's own G_j, which depends on how it packs the jobs
// onto the holding's servers; this prices holdings that span servers
// conservatively, and so leans bids towards holdings on one server.
// JobLocality prices S(G_j) per job instead.
//
// The app's demand, the most GPUs it bids for and wants, is the sum of
// the gangs of its jobs in the system: behind a barrier between phases,
// the current phase's. Bids are ftf.Bids over the offer, with rows up to
// that demand on the types its jobs run on, within a budget of 16 rows;
// Wants says which leftover GPUs it would use.
type AppAgent struct {
	// Jobs returns the app's jobs in the system, read only.
	Jobs func() []*round.Job
	// Spread returns a job's rates when its gang spans servers; nil, or a
	// nil result, means Rates.
	Spread func(alloc.JobID) []float64
	// Ledger holds the cluster and its types.
	Ledger *round.Ledger
	// Capacity is every GPU of each of the ledger's types.
	Capacity alloc.Capacity
	// Epoch is the arbiter's time of second 0 of the caller's clock, and
	// Start the app's first arrival on that clock.
	Epoch time.Time
	Start float64
	// Contention returns N_avg at a time on the caller's clock.
	Contention func(now float64) float64
	// Work returns B in GPU-seconds.
	Work func() float64
	// Demand, if not nil, returns app_demand_max where there is no plan:
	// the most GPUs the app can use at once, a property of the app (Themis
	// gives the most its jobs in the system have asked for at once so
	// far). nil means the sum of the gangs of the jobs in the system now,
	// which falls as they finish, and with it T_id.
	Demand func() int
	// Phases is the app's plan (ThemisSettings.Phases), nil if none. The
	// current phase is the last one holding a job in the system; the jobs
	// of the phases after it have yet to arrive.
	Phases [][]PlannedJob
	// JobLocality, section 4.3.2's S(G_j) for each job's own G_j: a job
	// whose gang fits on one server of the holding, in GPUs of a type it
	// runs on, runs there unslowed, as the app scheduler puts it (fullest
	// servers first); only a job no one server can hold is slowed by the
	// holding's spread. Each job is judged alone, as if it had the
	// holding to itself. False slows every job on a holding that spans
	// servers.
	JobLocality bool
}

// appRows is the row budget of an AppAgent's bids.
const appRows = 16

// demand returns D, the sum of the gangs of the jobs in the system (at
// least 1), and whether any job runs on type k, for each k.
func (a *AppAgent) demand(jobs []*round.Job) (int, []bool) {
	runs := make([]bool, len(a.Capacity.Count))
	for _, j := range jobs {
		for k, r := range j.Rates {
			runs[k] = runs[k] || r > 0
		}
	}
	return max(gangs(jobs), 1), runs
}

// gangs returns the sum of the jobs' gangs.
func gangs(jobs []*round.Job) int {
	n := 0
	for _, j := range jobs {
		n += j.Gang
	}
	return n
}

// later returns the phases of the plan after the current one (see
// Phases), and app_demand_max: the largest sum of gangs over the plan's
// phases, or without a plan the sum of the gangs of jobs.
func (a *AppAgent) later(jobs []*round.Job) ([][]PlannedJob, int) {
	if len(a.Phases) == 0 {
		d, _ := a.demand(jobs)
		if a.Demand != nil {
			d = max(d, a.Demand())
		}
		return nil, d
	}
	cur, most := -1, 1
	for p, phase := range a.Phases {
		sum := 0
		for _, pj := range phase {
			sum += pj.Gang
			if cur < p && slices.ContainsFunc(jobs, func(j *round.Job) bool { return j.ID == pj.ID }) {
				cur = p
			}
		}
		most = max(most, sum)
	}
	if cur < 0 { // none of the plan's jobs is here: nothing to add
		return nil, most
	}
	return a.Phases[cur+1:], most
}

// rho returns the app's rho at now if it kept counts[s] GPUs of each server
// until it finishes, later being the phases still to come and iso its T_id
// (isolated). It returns an *gpufair.InputError wrapping gpufair.ErrValue
// if the jobs' time T on the holding overflows, though each can run on it
// ("Job.Work"), or if rho does, T_id being that much shorter
// ("AppAgent.Work"): a finite finish time would read as never finishing.
func (a *AppAgent) rho(now time.Time, iso float64, jobs []*round.Job, later [][]PlannedJob, counts []int) (float64, error) {
	sec := now.Sub(a.Epoch).Seconds()
	per := make([]int, len(a.Capacity.Count))
	onOne := make([]int, len(a.Capacity.Count))
	g := 0
	for s, n := range counts {
		if k := a.Ledger.TypeOf(s); k >= 0 && n > 0 {
			per[k] += n
			onOne[k] = max(onOne[k], n)
			g += n
		}
	}
	loc, err := a.Ledger.Cluster().LocalityOfCounts(counts)
	if err != nil {
		return 0, err
	}
	h := holding{per: per, g: g, loc: loc, onOne: onOne}
	infos := make([]ftf.JobInfo, 0, len(jobs))
	most := 1
	for _, j := range jobs {
		left := j.Remaining()
		if math.IsInf(left, 1) {
			left = unknownWork
		}
		info, ok := a.jobInfo(j.Job, left, h)
		if !ok {
			if left > 0 {
				return math.Inf(1), nil // a job that cannot run never finishes
			}
			continue
		}
		infos = append(infos, info)
		most = max(most, j.Gang)
	}
	// Each job is capped at its own gang (JobInfo.DemandMax); most, the
	// largest, is the cap PhaseTime requires for the phase.
	t := ftf.PhaseTime(infos, ftf.Placement{GPUs: g, Locality: h.loc}, most)
	for _, phase := range later {
		infos, most = infos[:0], 1
		for _, pj := range phase {
			left := pj.Work
			if left == 0 {
				left = unknownWork
			}
			info, ok := a.jobInfo(pj.Job, left, h)
			if !ok {
				return math.Inf(1), nil
			}
			infos = append(infos, info)
			most = max(most, pj.Gang)
		}
		t += ftf.PhaseTime(infos, ftf.Placement{GPUs: g, Locality: h.loc}, most)
	}
	if math.IsInf(t, 1) {
		return 0, badInput("Job.Work", "", gpufair.ErrValue, "the jobs' time on %d GPUs, their work over their rates, overflows", g)
	}
	rho := (sec - a.Start + t) / iso
	if math.IsInf(rho, 1) {
		return 0, badInput("AppAgent.Work", "", gpufair.ErrValue, "rho (%v s + %v s) / T_id %v s overflows", sec-a.Start, t, iso)
	}
	return rho, nil
}

// isolated returns the app's T_id at now for app_demand_max d: B
// (Work) over min(R_C, D), times N_avg (Contention). It returns an
// *gpufair.InputError wrapping gpufair.ErrValue for a Work that is not
// positive and finite ("AppAgent.Work"), a Contention that is not
// positive and finite ("AppAgent.Contention"), or a T_id that underflows
// to 0 or overflows ("AppAgent.Work"): every rho would be +Inf, 0 or NaN.
func (a *AppAgent) isolated(now time.Time, d int) (float64, error) {
	b := a.Work()
	if !(b > 0) || math.IsInf(b, 1) {
		return 0, badInput("AppAgent.Work", "", gpufair.ErrValue, "total work %v is not positive and finite", b)
	}
	n := a.Contention(now.Sub(a.Epoch).Seconds())
	if !(n > 0) || math.IsInf(n, 1) {
		return 0, badInput("AppAgent.Contention", "", gpufair.ErrValue, "N_avg %v is not positive and finite", n)
	}
	iso := isolated(b, a.Capacity, d, n)
	if !(iso > 0) || math.IsInf(iso, 1) {
		return 0, badInput("AppAgent.Work", "", gpufair.ErrValue, "total work %v at N_avg %v gives T_id = %v", b, n, iso)
	}
	return iso, nil
}

// holding is a bid row as rho prices it: GPUs per type, their total,
// their locality, and the most GPUs of each type on one server.
type holding struct {
	per   []int
	g     int
	loc   topology.Locality
	onOne []int
}

// jobInfo returns the ftf.JobInfo of job j with left work left on holding
// h (its serial time per step, its slowdown when h spans servers, its gang
// as its cap on GPUs), or false if j cannot run on h.
func (a *AppAgent) jobInfo(j alloc.Job, left float64, h holding) (ftf.JobInfo, bool) {
	var sp []float64
	if a.Spread != nil {
		sp = a.Spread(j.ID)
	}
	var one, wide float64 // rates weighted by h's GPUs per type
	for k, n := range h.per {
		one += float64(n) * j.Rates[k]
		wide += float64(n) * rateOf(j, sp, k, true)
	}
	if h.g == 0 || one == 0 || !(j.Elastic || fitsGang(j, h.per)) {
		return ftf.JobInfo{}, false
	}
	// DemandMax: the app scheduler gives a job no more than its gang, and
	// a rigid job exactly its gang (Rigid).
	info := ftf.JobInfo{ItersRemaining: left, IterTime: float64(j.Gang) * float64(h.g) / one, DemandMax: j.Gang, Rigid: !j.Elastic}
	info.Slowdown = topology.Slowdown{1, 1, 1}
	// With JobLocality, a gang that fits one server's GPUs of a type runs
	// there unslowed.
	if h.loc != topology.SameServer && wide > 0 && !(a.JobLocality && fitsGang(j, h.onOne)) {
		info.Slowdown = topology.Slowdown{1, one / wide, one / wide}
	}
	return info, true
}

// fitsGang reports whether a rigid job's gang fits the GPUs of one type it
// runs on, per[k] being the GPUs of type k (of the holding, or on one of
// its servers).
func fitsGang(j alloc.Job, per []int) bool {
	for k, n := range per {
		if n >= j.Gang && j.Rates[k] > 0 {
			return true
		}
	}
	return false
}

// Rho is the app's rho at now with what it holds. It returns an
// *gpufair.InputError wrapping gpufair.ErrShape if held is not one count
// per server of the ledger's cluster, or Spread gives a job other than one
// rate per type, and one that Themis.Decide would for a bad job of Phases.
// It returns one wrapping gpufair.ErrValue if Work is not positive and
// finite or T_id overflows ("AppAgent.Work"), if Contention is not
// positive and finite ("AppAgent.Contention"), if the jobs' time on the
// holding overflows though each can run on it ("Job.Work"), or if rho
// does, T_id being that much shorter ("AppAgent.Work").
func (a *AppAgent) Rho(_ context.Context, now time.Time, _ topology.Cluster, held []int) (float64, error) {
	if err := checkHeld(a.Ledger.Cluster(), held); err != nil {
		return 0, err
	}
	if err := checkPhases("AppAgent.Phases", a.Phases, len(a.Capacity.Count)); err != nil {
		return 0, err
	}
	jobs := a.Jobs()
	if err := checkSpread("AppAgent.Spread", a.Spread, jobs); err != nil {
		return 0, err
	}
	later, d := a.later(jobs)
	iso, err := a.isolated(now, d)
	if err != nil {
		return 0, err
	}
	return a.rho(now, iso, jobs, later, held)
}

// Bid prices rows of the offer up to the app's demand (ftf.Bids). It
// returns an *gpufair.InputError wrapping gpufair.ErrShape for an offer
// whose cluster has another number of servers than the ledger's, or where
// Spread gives a job other than one rate per type, one that Themis.Decide
// would for a bad job of Phases, and those of Rho for Work, Contention, or
// a row whose time or rho overflows (the last as ftf.Bids reports its
// pricing's errors).
func (a *AppAgent) Bid(ctx context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error) {
	// Rows are priced on the ledger's cluster, server by server.
	if n, m := len(offer.Cluster.Servers), len(a.Ledger.Cluster().Servers); n != m {
		return ftf.BidTable{}, badInput("Offer.Cluster", "", gpufair.ErrShape, "%d servers for the ledger's %d", n, m)
	}
	if err := checkPhases("AppAgent.Phases", a.Phases, len(a.Capacity.Count)); err != nil {
		return ftf.BidTable{}, err
	}
	jobs := a.Jobs()
	if err := checkSpread("AppAgent.Spread", a.Spread, jobs); err != nil {
		return ftf.BidTable{}, err
	}
	d, runs := a.demand(jobs)
	later, most := a.later(jobs)
	iso, err := a.isolated(now, most)
	if err != nil {
		return ftf.BidTable{}, err
	}
	set := &ftf.BidSettings{Demand: d, MaxRows: appRows, Usable: func(s int) bool { k := a.Ledger.TypeOf(s); return k >= 0 && runs[k] }}
	return ftf.Bids(ctx, offer, held, func(counts []int) (float64, error) { return a.rho(now, iso, jobs, later, counts) }, set)
}

// Wants returns the smallest bundle of free that lets one more of the
// app's jobs run, while it holds fewer GPUs than its demand: for an elastic
// job one GPU, for a rigid job what completes a gang of one type (a GPU
// that only starts a gang is of no use until others join it, and handing
// such GPUs out scatters gangs among apps). Jobs are tried longest
// remaining work first, each on its types fastest first; the GPUs come from
// the servers where the app holds most, then the fullest. It returns nil
// if held and free are not one count per server of the ledger's cluster.
func (a *AppAgent) Wants(held, free []int) []int {
	if n := len(a.Ledger.Cluster().Servers); len(held) != n || len(free) != n {
		return nil // free was indexed by held's servers
	}
	jobs := a.Jobs()
	d, _ := a.demand(jobs)
	room := d - total(held)
	if room <= 0 {
		return nil
	}
	per := make([]int, len(a.Capacity.Count))
	avail := make([]int, len(a.Capacity.Count))
	for s := range held {
		if k := a.Ledger.TypeOf(s); k >= 0 {
			per[k] += held[s]
			avail[k] += free[s]
		}
	}
	order := slices.Clone(jobs)
	slices.SortStableFunc(order, func(x, y *round.Job) int { return cmp.Compare(y.Remaining(), x.Remaining()) })
	for _, j := range order {
		types := make([]int, 0, len(per))
		for k, r := range j.Rates {
			if r > 0 {
				types = append(types, k)
			}
		}
		slices.SortStableFunc(types, func(x, y int) int { return cmp.Compare(j.Rates[y], j.Rates[x]) })
		for _, k := range types {
			need := 1
			if !j.Elastic {
				need = j.Gang - per[k]%j.Gang
			}
			if need <= min(room, avail[k]) {
				return a.bundle(held, free, k, need)
			}
		}
	}
	return nil
}

// bundle takes n GPUs of type k from free: servers where the app holds
// most first, then the fullest.
func (a *AppAgent) bundle(held, free []int, k, n int) []int {
	var servers []int
	for s := range free {
		if a.Ledger.TypeOf(s) == k && free[s] > 0 {
			servers = append(servers, s)
		}
	}
	slices.SortStableFunc(servers, func(x, y int) int {
		if c := cmp.Compare(held[y], held[x]); c != 0 {
			return c
		}
		return cmp.Compare(free[y], free[x])
	})
	out := make([]int, len(free))
	for _, s := range servers {
		take := min(n, free[s])
		out[s], n = take, n-take
		if n == 0 {
			break
		}
	}
	return out
}
