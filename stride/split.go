package stride

import (
	"cmp"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Part is the share of a multi-server job on one server: GPUs slots of
// Servers[Server].
type Part struct {
	Server int
	GPUs   int
}

// Run is one job's place in a quantum: the GPU slots its gang runs on.
type Run struct {
	Job  alloc.JobID
	GPUs []topology.GPU
}

// Plan is what runs in one quantum. Runs are in the order the scheduler chose
// them. The GPU slices of one Plan share a backing array.
type Plan struct {
	Quantum int
	Runs    []Run
}

// GPUs returns the number of GPUs the plan uses.
func (p *Plan) GPUs() int {
	n := 0
	for _, r := range p.Runs {
		n += len(r.GPUs)
	}
	return n
}

type aggregate struct {
	active  bool
	stride  float64
	base    float64
	n       int64
	pass    float64
	tickets float64
}

// charge advances the aggregate's pass for used GPU-quanta: used/tickets,
// the same charge a job of that size would pay.
func (a *aggregate) charge(used int) {
	a.n += int64(used)
	a.pass = a.base + float64(a.n)*a.stride
}

type largeJob struct {
	entry
	parts []Part
}

// central is one candidate of the central scheduler: a multi-server job or
// a server's aggregate.
type central struct {
	pass  float64
	large *largeJob // nil for an aggregate
	srv   int
}

func byCentral(a, b central) int {
	if c := cmp.Compare(a.pass, b.pass); c != 0 {
		return c
	}
	switch {
	case a.large != nil && b.large == nil:
		return -1
	case a.large == nil && b.large != nil:
		return 1
	case a.large != nil:
		return cmp.Compare(a.large.ID, b.large.ID)
	}
	return cmp.Compare(a.srv, b.srv)
}

// Split is Gandiva_fair's split stride scheduler (section 3.1, Figure 3): a
// central gang-aware stride over the multi-server jobs and one aggregate
// job per server, whose tickets are the total tickets of the server's small
// jobs; when a server's aggregate is chosen, the server runs its own
// gang-aware stride (a Scheduler) on the GPUs left free. If every server
// carries the same tickets per GPU, each job's share of GPU-time is what one
// cluster-wide gang-aware stride would give it.
//
// An aggregate's pass advances by the GPU-quanta its server's jobs used over
// its tickets, as a job of that size would; on a whole server that is the
// paper's g_l / Σ tickets. If the server's own first job (smallest local
// pass) did not fit in the GPUs a multi-server job left, the aggregate is a
// skipped job in Algorithm 1's sense: its server's other jobs still backfill
// the free GPUs, but the aggregate keeps its pass, so it soon comes first
// and gets the whole server. Charging the aggregate for backfill, or a
// whole server's stride for part of one, lets its pass keep pace with the
// multi-server jobs' for ever while its larger gangs never fit (two
// starvations rapid found; see TestSplitBackfilledAggregateRegression).
//
// Schedule costs O(m log m + Σ_l n_l log n_l) for m central candidates and
// n_l small jobs on server l. The zero value is not usable; use NewSplit.
type Split struct {
	c     topology.Cluster
	local []*Scheduler
	agg   []aggregate
	large []*largeJob // by ID
	where map[alloc.JobID]int
	vtime float64
	last  int
	ran   bool

	items []central // scratch
	free  []int
	next  []int
}

// onLarge marks a multi-server job in Split.where.
const onLarge = -1

// NewSplit returns a split stride scheduler with no jobs on cluster c.
func NewSplit(c topology.Cluster) (*Split, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Split{
		c:     topology.Cluster{Servers: append([]topology.Server(nil), c.Servers...)},
		local: make([]*Scheduler, len(c.Servers)),
		agg:   make([]aggregate, len(c.Servers)),
		where: map[alloc.JobID]int{},
		free:  make([]int, len(c.Servers)),
		next:  make([]int, len(c.Servers)),
	}
	for i, sv := range c.Servers {
		s.local[i], _ = NewScheduler(sv.GPUs)
	}
	return s, nil
}

// Cluster returns the scheduler's cluster; the slice is the scheduler's own.
func (s *Split) Cluster() topology.Cluster { return s.c }

// Local returns server l's own scheduler, for inspection, or nil if l is
// not a server; changing it directly bypasses the aggregate's bookkeeping.
func (s *Split) Local(l int) *Scheduler {
	if l < 0 || l >= len(s.local) {
		return nil
	}
	return s.local[l]
}

func (s *Split) centralMin() float64 {
	m, ok := 0.0, false
	for _, l := range s.large {
		if !ok || l.pass < m {
			m, ok = l.pass, true
		}
	}
	for _, a := range s.agg {
		if a.active && (!ok || a.pass < m) {
			m, ok = a.pass, true
		}
	}
	if !ok {
		return s.vtime
	}
	return m
}

func (s *Split) retuneAggregate(l int) {
	a := &s.agg[l]
	t := s.local[l].Weight()
	if s.local[l].Len() == 0 {
		if a.active {
			a.active = false
			s.vtime = s.centralMin()
		}
		return
	}
	if !a.active {
		p := s.centralMin()
		*a = aggregate{active: true, base: p, pass: p}
	}
	a.tickets = t
	a.stride = 1 / t
	a.base, a.n = a.pass, 0
}

// AddSmall puts j on server l, under that server's own stride. It returns
// the errors of Scheduler.Add, and gpufair.ErrUnknownID for a server out of
// range.
func (s *Split) AddSmall(j alloc.Job, l int) error {
	if l < 0 || l >= len(s.local) {
		return gpufair.Invalid("Server", string(j.ID), gpufair.ErrUnknownID, "server %d of %d", l, len(s.local))
	}
	if _, ok := s.where[j.ID]; ok {
		return gpufair.Invalid("Job.ID", string(j.ID), gpufair.ErrDuplicate, "already scheduled")
	}
	if err := s.local[l].Add(j); err != nil {
		return err
	}
	s.where[j.ID] = l
	s.retuneAggregate(l)
	return nil
}

// AddLarge puts a multi-server job under the central scheduler, on parts
// whose GPUs add up to j.Gang, at most one part per server. It returns an
// *gpufair.InputError wrapping gpufair.ErrValue for parts that do not add up,
// gpufair.ErrUnknownID for a server out of range, gpufair.ErrDuplicate for a
// server or job listed twice, gpufair.ErrTooLarge for a part larger than its
// server and gpufair.ErrValue for a weight that is not positive and finite
// or gives a stride (Gang/Weight) above 1e250.
func (s *Split) AddLarge(j alloc.Job, parts []Part) error {
	if err := validJob(j, j.Gang, "gang"); err != nil {
		return err
	}
	id := string(j.ID)
	if _, ok := s.where[j.ID]; ok {
		return gpufair.Invalid("Job.ID", id, gpufair.ErrDuplicate, "already scheduled")
	}
	sum := 0
	seen := map[int]bool{}
	for _, p := range parts {
		switch {
		case p.Server < 0 || p.Server >= len(s.local):
			return gpufair.Invalid("Part.Server", id, gpufair.ErrUnknownID, "server %d of %d", p.Server, len(s.local))
		case seen[p.Server]:
			return gpufair.Invalid("Part.Server", id, gpufair.ErrDuplicate, "server %d twice", p.Server)
		case p.GPUs < 1:
			return gpufair.Invalid("Part.GPUs", id, gpufair.ErrValue, "%d GPUs on server %d", p.GPUs, p.Server)
		case p.GPUs > s.c.Servers[p.Server].GPUs:
			return gpufair.Invalid("Part.GPUs", id, gpufair.ErrTooLarge, "%d GPUs on server %q of %d", p.GPUs, s.c.Servers[p.Server].Name, s.c.Servers[p.Server].GPUs)
		}
		seen[p.Server] = true
		sum += p.GPUs
	}
	if sum != j.Gang {
		return gpufair.Invalid("Part.GPUs", id, gpufair.ErrValue, "parts add up to %d GPUs for a job of %d", sum, j.Gang)
	}
	p := s.centralMin()
	lj := &largeJob{entry: entry{Job: j, stride: strideOf(j), base: p, pass: p}, parts: slices.Clone(parts)}
	slices.SortFunc(lj.parts, func(a, b Part) int { return cmp.Compare(a.Server, b.Server) })
	i, _ := slices.BinarySearchFunc(s.large, lj, func(a, b *largeJob) int { return cmp.Compare(a.ID, b.ID) })
	s.large = slices.Insert(s.large, i, lj)
	s.where[j.ID] = onLarge
	return nil
}

func (s *Split) findLarge(id alloc.JobID) int {
	i, ok := slices.BinarySearchFunc(s.large, id, func(a *largeJob, id alloc.JobID) int { return cmp.Compare(a.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// Remove takes job id off the cluster and reports whether it was there.
func (s *Split) Remove(id alloc.JobID) bool {
	l, ok := s.where[id]
	if !ok {
		return false
	}
	delete(s.where, id)
	if l == onLarge {
		i := s.findLarge(id)
		s.large = slices.Delete(s.large, i, i+1)
		s.vtime = s.centralMin()
		return true
	}
	s.local[l].Remove(id)
	s.retuneAggregate(l)
	return true
}

// SetWeight changes job id's weight (tickets). It returns gpufair.ErrValue
// for a weight that is not positive and finite or whose stride (gang over
// weight) exceeds 1e250, and gpufair.ErrUnknownID for a job that is not
// scheduled.
func (s *Split) SetWeight(id alloc.JobID, w float64) error {
	l, ok := s.where[id]
	if !ok {
		return gpufair.Invalid("Job.ID", string(id), gpufair.ErrUnknownID, "not scheduled")
	}
	if l == onLarge {
		lj := s.large[s.findLarge(id)]
		if err := checkJobWeight("Job.Weight", string(id), w, lj.Gang); err != nil {
			return err
		}
		lj.retune(w)
		return nil
	}
	if err := s.local[l].SetWeight(id, w); err != nil {
		return err
	}
	s.retuneAggregate(l)
	return nil
}

// Server returns the server of a small job, or -1 for a multi-server job;
// ok is false if the job is not scheduled.
func (s *Split) Server(id alloc.JobID) (l int, ok bool) {
	l, ok = s.where[id]
	return l, ok
}

// Parts returns the parts of a multi-server job.
func (s *Split) Parts(id alloc.JobID) []Part {
	if i := s.findLarge(id); i >= 0 {
		return slices.Clone(s.large[i].parts)
	}
	return nil
}

// Pass returns the pass of job id: its central pass for a multi-server job,
// its local pass otherwise.
func (s *Split) Pass(id alloc.JobID) (float64, bool) {
	l, ok := s.where[id]
	switch {
	case !ok:
		return 0, false
	case l == onLarge:
		return s.large[s.findLarge(id)].pass, true
	}
	return s.local[l].Pass(id)
}

// AggregatePass returns server l's aggregate pass, and false if the server
// has no small jobs or l is not a server.
func (s *Split) AggregatePass(l int) (float64, bool) {
	if l < 0 || l >= len(s.agg) {
		return 0, false
	}
	return s.agg[l].pass, s.agg[l].active
}

// Schedule runs quantum q across the cluster and returns the plan. q must
// exceed the previous quantum's index; otherwise Schedule returns an error
// wrapping gpufair.ErrOrder and changes nothing.
func (s *Split) Schedule(q int) (*Plan, error) { return s.ScheduleFree(q, nil) }

// ScheduleFree is Schedule with free[l] GPUs usable on server l (fewer than
// its GPUs when some have failed; nil means all). A job that does not fit
// the GPUs left keeps its pass, as in Algorithm 1. The plan's slots on
// server l are numbered 0 to free[l]-1: the caller maps them to the
// server's working slots.
func (s *Split) ScheduleFree(q int, free []int) (*Plan, error) {
	if free != nil && len(free) != len(s.c.Servers) {
		return nil, gpufair.Invalid("Free", "", gpufair.ErrShape, "%d counts for %d servers", len(free), len(s.c.Servers))
	}
	if s.ran && q <= s.last {
		return nil, gpufair.Invalid("Quantum", "", gpufair.ErrOrder, "quantum %d after %d", q, s.last)
	}
	s.ran, s.last = true, q
	s.items = s.items[:0]
	for _, l := range s.large {
		s.items = append(s.items, central{pass: l.pass, large: l})
	}
	totalFree := 0
	for l, a := range s.agg {
		s.free[l] = s.c.Servers[l].GPUs
		if free != nil {
			s.free[l] = max(min(free[l], s.free[l]), 0)
		}
		s.next[l] = 0
		totalFree += s.free[l]
		if a.active {
			s.items = append(s.items, central{pass: a.pass, srv: l})
		}
	}
	slices.SortFunc(s.items, byCentral)
	plan := &Plan{Quantum: q}
	slots := make([]topology.GPU, 0, totalFree)
	var chosen []alloc.Job
	for _, it := range s.items {
		if totalFree == 0 {
			break
		}
		if lj := it.large; lj != nil {
			fits := true
			for _, p := range lj.parts {
				if s.free[p.Server] < p.GPUs {
					fits = false
					break
				}
			}
			if !fits {
				continue
			}
			start := len(slots)
			for _, p := range lj.parts {
				slots = s.take(slots, p.Server, p.GPUs)
				totalFree -= p.GPUs
			}
			lj.advance()
			plan.Runs = append(plan.Runs, Run{Job: lj.ID, GPUs: slots[start:len(slots):len(slots)]})
			continue
		}
		l := it.srv
		if s.free[l] == 0 || s.local[l].smallest() > s.free[l] {
			continue
		}
		first := s.local[l].jobs[0].ID
		var used int
		chosen, used = s.local[l].run(s.free[l], chosen[:0])
		for _, j := range chosen {
			start := len(slots)
			slots = s.take(slots, l, j.Gang)
			plan.Runs = append(plan.Runs, Run{Job: j.ID, GPUs: slots[start:len(slots):len(slots)]})
		}
		totalFree -= used
		if chosen[0].ID == first {
			s.agg[l].charge(used)
		}
	}
	s.vtime = s.centralMin()
	return plan, nil
}

func (s *Split) take(slots []topology.GPU, l, n int) []topology.GPU {
	for range n {
		slots = append(slots, topology.GPU{Server: l, Slot: s.next[l]})
		s.next[l]++
	}
	s.free[l] -= n
	return slots
}
