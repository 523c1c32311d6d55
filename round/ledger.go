package round

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Job is a job as the ledger knows it: the job as it arrived (its Rates
// follow the ledger's GPU types, updated by Measured events) and what
// happened to it since.
type Job struct {
	alloc.Job
	// Arrival is the time of its Arrived event.
	Arrival float64 `json:"arrival"`
	// Work is its total work, 0 if unknown; Done the work it last
	// reported done.
	Work float64 `json:"total_work,omitempty"`
	Done float64 `json:"done,omitempty"`
	// Received[k] is the time, in seconds, it has run on the k-th GPU
	// type, up to the start of the lease in force.
	Received []float64 `json:"received"`
	// Shared[k] is the part of Received[k] it ran sharing its GPUs with
	// other jobs (a Placement of several jobs: Gavel's space sharing); nil
	// while it has never shared.
	Shared []float64 `json:"shared,omitempty"`
	// Rounds counts the decisions that placed it; Restarts those that
	// placed it with Placement.Restart.
	Rounds   int `json:"rounds,omitempty"`
	Restarts int `json:"restarts,omitempty"`
	// Kept counts the decisions in a row, up to the lease in force, that
	// have kept the job on the same slots (1 for a fresh placement); 0
	// when the lease in force does not place it.
	Kept int `json:"kept,omitempty"`
}

// Remaining returns the work left, Work − Done (0 once Done passes Work),
// or +Inf if Work is unknown.
func (j *Job) Remaining() float64 {
	if j.Work == 0 {
		return math.Inf(1)
	}
	return max(j.Work-j.Done, 0)
}

// Fraction returns the fraction of the time since its arrival, up to now,
// that the job has run on type k, and 0 before any time has passed or for
// k not an index of Received. It is the f_mk of Gavel's mechanism (OSDI'20,
// section 5) as stride.Gavel counts it by default: the paper counts f_mk
// from the latest recomputation of the allocation instead, as stride.Gavel
// does with GavelSettings.ResetInterval (stride.Gavel.Fraction).
func (j *Job) Fraction(k int, now float64) float64 {
	if k < 0 || k >= len(j.Received) {
		return 0
	}
	if el := now - j.Arrival; el > 0 {
		return j.Received[k] / el
	}
	return 0
}

// Ledger is the state every mechanism shares: the cluster, the jobs, the
// failed GPUs and the lease in force. It checks events and decisions, and
// accounts the time each job receives from the decisions themselves. The
// zero value is not usable; build one with NewLedger.
type Ledger struct {
	cluster topology.Cluster
	types   []topology.GPUType
	count   []int // GPUs of each type
	typeOf  []int // type index of each server, -1 if none of types
	now     float64
	round   int
	gen     int
	jobs    map[alloc.JobID]*Job
	order   []*Job                   // by (Arrival, ID)
	failed  map[topology.GPU]float64 // failed GPUs and when
	lease   *Decision                // the lease in force, nil before the first decision
	leaseOf map[alloc.JobID]int      // each job's placement in the lease in force
	cut     map[alloc.JobID]float64  // jobs whose lease ended early, and when
	begun   *undo                    // the round begun, nil between rounds
}

// NewLedger returns an empty ledger for cluster c, with rates given over
// types (each a GPU type of c, listed once); nil types means every type of
// c, in order of first appearance among its servers (alloc.CapacityOf).
// It returns an *gpufair.InputError for an invalid cluster (as
// alloc.CapacityOf: on Field "Cluster", wrapping the cluster's validation
// error) and for types wrapping gpufair.ErrEmpty or gpufair.ErrUnknownType.
func NewLedger(c topology.Cluster, types []topology.GPUType) (*Ledger, error) {
	ac, err := alloc.CapacityOf(c, types)
	if err != nil {
		return nil, err
	}
	l := &Ledger{
		cluster: topology.Cluster{Servers: slices.Clone(c.Servers)},
		types:   slices.Clone(ac.Types),
		count:   make([]int, len(ac.Types)),
		typeOf:  make([]int, len(c.Servers)),
		jobs:    map[alloc.JobID]*Job{},
		failed:  map[topology.GPU]float64{},
		cut:     map[alloc.JobID]float64{},
		leaseOf: map[alloc.JobID]int{},
	}
	for k, n := range ac.Count {
		l.count[k] = int(n)
	}
	for i, s := range c.Servers {
		l.typeOf[i] = slices.Index(l.types, s.Type)
	}
	return l, nil
}

// Cluster returns the physical cluster. Its slices are the ledger's own.
func (l *Ledger) Cluster() topology.Cluster { return l.cluster }

// Types returns the GPU types rates follow. The slice is the ledger's own.
func (l *Ledger) Types() []topology.GPUType { return l.types }

// Count returns the GPUs of each type, failed ones included.
func (l *Ledger) Count() []int { return slices.Clone(l.count) }

// Healthy returns the GPUs of each type that have not failed.
func (l *Ledger) Healthy() []int {
	h := slices.Clone(l.count)
	for g := range l.failed {
		if k := l.typeOf[g.Server]; k >= 0 {
			h[k]--
		}
	}
	return h
}

// TypeOf returns the index in Types of the type of server s's GPUs, or -1
// if it is none of Types or s is not a server.
func (l *Ledger) TypeOf(s int) int {
	if s < 0 || s >= len(l.typeOf) {
		return -1
	}
	return l.typeOf[s]
}

// Now returns the time of the latest event or decision.
func (l *Ledger) Now() float64 { return l.now }

// Rounds returns the number of decisions made.
func (l *Ledger) Rounds() int { return l.round }

// Generation increases whenever a job arrives or departs or its rates
// change, and when a GPU fails or is repaired: a mechanism that solves a
// policy over the jobs solves it again when the generation moves.
func (l *Ledger) Generation() int { return l.gen }

// Jobs returns the jobs in the system in (Arrival, ID) order. The slice
// and the jobs are the ledger's own, to read only.
func (l *Ledger) Jobs() []*Job { return l.order }

// Job returns job id, to read only.
func (l *Ledger) Job(id alloc.JobID) (*Job, bool) {
	j, ok := l.jobs[id]
	return j, ok
}

// Failed reports whether GPU g has failed and not been repaired.
func (l *Ledger) Failed(g topology.GPU) bool {
	_, ok := l.failed[g]
	return ok
}

// FailedGPUs returns the failed GPUs in (server, slot) order.
func (l *Ledger) FailedGPUs() []topology.GPU {
	out := make([]topology.GPU, 0, len(l.failed))
	for g := range l.failed {
		out = append(out, g)
	}
	topology.SortGPUs(out)
	return out
}

// Lease returns the decision in force, nil before the first one, to read
// only.
func (l *Ledger) Lease() *Decision { return l.lease }

// Holding returns the placement of the lease in force that job id has held
// without a break up to now: the lease has run until now, and neither a
// departure nor a failed GPU ended the job's part of it early.
func (l *Ledger) Holding(id alloc.JobID) (Placement, bool) {
	if l.lease == nil || l.lease.End < l.now {
		return Placement{}, false
	}
	if _, cut := l.cut[id]; cut {
		return Placement{}, false
	}
	if i, ok := l.leaseOf[id]; ok {
		return l.lease.Placements[i], true
	}
	return Placement{}, false
}

// setLease makes d the lease in force.
func (l *Ledger) setLease(d *Decision) {
	l.lease = d
	clear(l.leaseOf)
	if d != nil {
		for i, p := range d.Placements {
			for _, id := range p.Jobs {
				l.leaseOf[id] = i
			}
		}
	}
}

// Placer returns a placer for the cluster with every failed GPU taken, for
// a mechanism to place a round's gangs on. It reuses p if not nil.
func (l *Ledger) Placer(p *topology.Placer) *topology.Placer {
	if p == nil {
		p, _ = topology.NewPlacer(l.cluster) // NewLedger validated the cluster
	} else {
		p.Reset()
	}
	_ = p.Reserve(l.FailedGPUs()) // each failed GPU exists and is listed once
	return p
}

// Apply checks every event, then applies them in order. It returns an
// *gpufair.InputError, and changes nothing, if an event is earlier than the
// latest event or decision (gpufair.ErrOrder), names a job or GPU that does
// not exist (gpufair.ErrUnknownID), a job that has already arrived
// (gpufair.ErrDuplicate), a GPU that has already failed or is not failed
// (gpufair.ErrValue), rates of the wrong length (gpufair.ErrShape), or
// values out of range (gpufair.ErrValue). Out of range are also the values
// that every policy refuses, which, taken, would fail every decision while
// the job stayed: a weight outside [alloc.MinWeight, alloc.MaxWeight], and
// positive rates spread wider than alloc.MaxRateSpread, within one job or
// between two jobs in the system together after the events.
func (l *Ledger) Apply(events ...Event) error {
	if err := l.check(events); err != nil {
		return err
	}
	for _, e := range events {
		l.apply(e)
	}
	return nil
}

// check validates events against the ledger as they would change it.
func (l *Ledger) check(events []Event) error {
	now := l.now
	present := map[alloc.JobID]bool{} // jobs the batch has added (true) or removed (false)
	done := map[alloc.JobID]float64{}
	setRates := map[alloc.JobID]int{} // the event that last set a job's rates
	var arrivals []alloc.JobID
	failed := map[topology.GPU]bool{}
	has := func(id alloc.JobID) bool {
		if p, ok := present[id]; ok {
			return p
		}
		_, ok := l.jobs[id]
		return ok
	}
	isFailed := func(g topology.GPU) bool {
		if f, ok := failed[g]; ok {
			return f
		}
		return l.Failed(g)
	}
	for i, e := range events {
		field := "Event[" + strconv.Itoa(i) + "]"
		if math.IsNaN(e.Time) || math.IsInf(e.Time, 0) {
			return gpufair.Invalid(field+".Time", "", gpufair.ErrValue, "time %v", e.Time)
		}
		if e.Time < now {
			return gpufair.Invalid(field+".Time", "", gpufair.ErrOrder, "%s at %v, after an event or decision at %v", e.Kind, e.Time, now)
		}
		now = e.Time
		id := e.Job.ID
		switch e.Kind {
		case Arrived:
			if has(id) {
				return gpufair.Invalid(field+".Job.ID", string(id), gpufair.ErrDuplicate, "job already in the system")
			}
			if err := l.checkJob(field, e); err != nil {
				return err
			}
			present[id], done[id], setRates[id] = true, 0, i
			arrivals = append(arrivals, id)
		case Departed, Progressed, Measured:
			if !has(id) {
				return gpufair.Invalid(field+".Job.ID", string(id), gpufair.ErrUnknownID, "%s: no such job in the system", e.Kind)
			}
			switch e.Kind {
			case Departed:
				present[id] = false
				delete(setRates, id)
			case Progressed:
				prev, ok := done[id]
				if !ok {
					prev = l.jobs[id].Done
				}
				if !(e.Work >= prev) || math.IsInf(e.Work, 0) {
					return gpufair.Invalid(field+".Work", string(id), gpufair.ErrValue, "work done %v after %v", e.Work, prev)
				}
				done[id] = e.Work
			case Measured:
				if err := l.checkRates(field, string(id), e.Job.Rates); err != nil {
					return err
				}
				setRates[id] = i
			}
		case Failed, Repaired:
			g := e.GPU
			if !l.cluster.Has(g) {
				return gpufair.Invalid(field+".GPU", gpuName(g), gpufair.ErrUnknownID, "no such GPU slot")
			}
			if f := isFailed(g); f == (e.Kind == Failed) {
				return gpufair.Invalid(field+".GPU", gpuName(g), gpufair.ErrValue, "%s, but failed is already %v", e.Kind, f)
			}
			failed[g] = e.Kind == Failed
		default:
			return gpufair.Invalid(field+".Kind", "", gpufair.ErrValue, "unknown kind %d", int(e.Kind))
		}
	}
	return l.checkSpread(events, has, setRates, arrivals)
}

// checkSpread checks the jobs present after a batch for rates spread wider
// than alloc.MaxRateSpread between two jobs, each of whose own rates are
// within it: every policy refuses such a problem, so taking them would
// fail every decision while both jobs stayed. It blames the later of the
// batch's events that set the two jobs' rates.
func (l *Ledger) checkSpread(events []Event, has func(alloc.JobID) bool, setRates map[alloc.JobID]int, arrivals []alloc.JobID) error {
	var ids []alloc.JobID
	var rates [][]float64
	add := func(id alloc.JobID) {
		ids = append(ids, id)
		if i, ok := setRates[id]; ok {
			rates = append(rates, events[i].Job.Rates)
		} else {
			rates = append(rates, l.jobs[id].Rates)
		}
	}
	for _, j := range l.order {
		if has(j.ID) {
			add(j.ID)
		}
	}
	for _, id := range arrivals {
		if _, ok := l.jobs[id]; !ok && has(id) {
			add(id)
		}
	}
	low, k, high := rateOutlier(rates)
	if low < 0 {
		return nil
	}
	blame, field := ids[low], "Events"
	i, okLow := setRates[ids[low]]
	if h, ok := setRates[ids[high]]; ok && (!okLow || h > i) {
		i, okLow, blame = h, true, ids[high]
	}
	if okLow {
		field = "Event[" + strconv.Itoa(i) + "].Job.Rates"
	}
	return gpufair.Invalid(field, string(blame), gpufair.ErrValue, "job %q's rate %v on %q is more than %v times below job %q's largest, %v: no policy takes both", ids[low], rates[low][k], l.types[k], alloc.MaxRateSpread, ids[high], slices.Max(rates[high]))
}

// rateOutlier returns the first of rates (one row a job) with a positive
// rate more than alloc.MaxRateSpread times below the largest of all, that
// rate's type and the first row holding the largest; low is -1 if none.
func rateOutlier(rates [][]float64) (low, k, high int) {
	top := 0.0
	for i, row := range rates {
		if m := slices.Max(row); m > top {
			top, high = m, i
		}
	}
	for i, row := range rates {
		for k, r := range row {
			if alloc.BelowRateSpread(r, top) {
				return i, k, high
			}
		}
	}
	return -1, 0, 0
}

// checkJobFields checks a job's ID, gang, weight, work and rates (their
// shape, values and spread), but not that it can run: measured rates may
// leave it none (a job measured at 0 on every type waits until it departs
// or is measured again), and a snapshot holds it so.
func (l *Ledger) checkJobFields(field string, e Event) error {
	j := e.Job
	id := string(j.ID)
	switch {
	case j.ID == "":
		return gpufair.Invalid(field+".Job.ID", "", gpufair.ErrValue, "empty job ID")
	case j.Gang < 1:
		return gpufair.Invalid(field+".Job.Gang", id, gpufair.ErrValue, "gang %d is below 1", j.Gang)
	case !(j.Weight >= alloc.MinWeight && j.Weight <= alloc.MaxWeight):
		// The policies' own bound: a weight they refuse, taken here, would
		// fail every decision until the job left.
		return gpufair.Invalid(field+".Job.Weight", id, gpufair.ErrValue, "weight %v is not in [alloc.MinWeight, alloc.MaxWeight]", j.Weight)
	case !(e.Work >= 0) || math.IsInf(e.Work, 0):
		return gpufair.Invalid(field+".Work", id, gpufair.ErrValue, "total work %v", e.Work)
	}
	return l.checkRates(field, id, j.Rates)
}

// checkJob checks an arriving job: checkJobFields, and that its gang fits
// the GPUs of a type it has a positive rate on.
func (l *Ledger) checkJob(field string, e Event) error {
	if err := l.checkJobFields(field, e); err != nil {
		return err
	}
	j := e.Job
	id := string(j.ID)
	runs := false // on some type
	for k, r := range j.Rates {
		if r > 0 && j.Gang <= l.count[k] {
			return nil
		}
		runs = runs || r > 0
	}
	if !runs {
		return gpufair.Invalid(field+".Job.Rates", id, gpufair.ErrValue, "no positive rate: the job runs on no GPU type")
	}
	return gpufair.Invalid(field+".Job.Gang", id, gpufair.ErrTooLarge, "a gang of %d fits no GPU type the job has a rate on", j.Gang)
}

func (l *Ledger) checkRates(field, id string, rates []float64) error {
	if len(rates) != len(l.types) {
		return gpufair.Invalid(field+".Job.Rates", id, gpufair.ErrShape, "%d rates for %d GPU types", len(rates), len(l.types))
	}
	top := 0.0
	for k, r := range rates {
		if !(r >= 0) || math.IsInf(r, 0) {
			return gpufair.Invalid(field+".Job.Rates", id, gpufair.ErrValue, "rate %v on %q", r, l.types[k])
		}
		top = max(top, r)
	}
	// The policies refuse rates spread wider than alloc.MaxRateSpread
	// (alloc.Problem.Validate); one job's own are refused here.
	for k, r := range rates {
		if alloc.BelowRateSpread(r, top) {
			return gpufair.Invalid(field+".Job.Rates", id, gpufair.ErrValue, "rate %v on %q is more than %v times below the job's largest, %v", r, l.types[k], alloc.MaxRateSpread, top)
		}
	}
	return nil
}

// apply applies a checked event.
func (l *Ledger) apply(e Event) {
	l.now = e.Time
	switch e.Kind {
	case Arrived:
		j := &Job{Job: e.Job, Arrival: e.Time, Work: e.Work, Received: make([]float64, len(l.types))}
		j.Rates = slices.Clone(j.Rates)
		if j.Owner == "" {
			j.Owner = alloc.TenantID(j.ID)
		}
		l.jobs[j.ID] = j
		i, _ := slices.BinarySearchFunc(l.order, j, byArrival)
		l.order = slices.Insert(l.order, i, j)
		l.gen++
	case Departed:
		j := l.jobs[e.Job.ID]
		l.endLease(j.ID, e.Time)
		delete(l.jobs, j.ID)
		i, _ := slices.BinarySearchFunc(l.order, j, byArrival)
		l.order = slices.Delete(l.order, i, i+1)
		l.gen++
	case Progressed:
		l.jobs[e.Job.ID].Done = e.Work
	case Measured:
		l.jobs[e.Job.ID].Rates = slices.Clone(e.Job.Rates)
		l.gen++
	case Failed:
		l.failed[e.GPU] = e.Time
		if l.lease != nil {
			for _, p := range l.lease.Placements {
				if slices.Contains(p.GPUs, e.GPU) {
					for _, id := range p.Jobs {
						l.endLease(id, e.Time)
					}
				}
			}
		}
		l.gen++
	case Repaired:
		delete(l.failed, e.GPU)
		l.gen++
	}
}

// endLease ends job id's part of the lease in force at time t, if it ends
// later.
func (l *Ledger) endLease(id alloc.JobID, t float64) {
	if c, ok := l.cut[id]; !ok || t < c {
		l.cut[id] = t
	}
}

func byArrival(a, b *Job) int {
	if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
