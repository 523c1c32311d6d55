package stride

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// User is a tenant of a Fair cluster, entitled to a share of each GPU type
// proportional to its Tickets.
type User struct {
	ID      alloc.TenantID
	Tickets float64
}

// Submission is a job handed to a Fair cluster. Type pins the job to a GPU
// type. Without a type, a job with a profile (Perf: its mini-batch time on
// some types, positive) goes to the profiled type of least
// Perf[g] / ticketsPerGPU_g, the user's tickets per GPU on g once the job is
// counted (Algorithm 2 line 5: fast GPUs the user is not yet crowding;
// ties to the type listed first in the cluster); a job with neither goes to
// the first type of Settings.Rank that the cluster has (line 7: the newest
// model).
type Submission struct {
	ID    alloc.JobID
	Owner alloc.TenantID
	Size  int
	Type  topology.GPUType
	Perf  map[topology.GPUType]float64
}

// Placement is where Fair put a job: one part on a server for a small job,
// one part per server for a multi-server job.
type Placement struct {
	Job   alloc.JobID
	Type  topology.GPUType
	Parts []Part
}

// Migration is a job moved from one server to another to even out the
// ticket load; servers are named as in the cluster.
type Migration struct {
	Job      alloc.JobID
	From, To string
}

// Account is a user's ticket accounting on one GPU type.
type Account struct {
	User alloc.TenantID
	Type topology.GPUType
	// Demand is Σ r_ik, the GPUs of the user's jobs on the type.
	Demand int
	// TicketsPerGPU is equation (1) with the user's own tickets; job
	// tickets (equation 3), and so the stride schedulers, use it.
	TicketsPerGPU float64
	// Effective is the user's tickets after weight readjustment: lower
	// than its tickets when its jobs cannot use its whole share.
	Effective float64
	// Share is the user's fair share of the type in GPUs: its
	// effective tickets' part of the type's GPUs, at most Demand.
	Share float64
}

// Settings tunes a Fair cluster. A nil *Settings means the zero value.
type Settings struct {
	// Rank lists GPU types from most to least preferred for jobs that
	// name none. Types the cluster lacks are ignored; nil or no match
	// means the cluster's types in the order they first appear.
	Rank []topology.GPUType
}

type fairUser struct {
	User
	jobs   []alloc.JobID // sorted
	demand map[topology.GPUType]int
}

type fairJob struct {
	Submission
	parts []Part
}

// Fair is Gandiva_fair's scheduler for a cluster of servers, each with GPUs
// of one type: users hold tickets, jobs are placed by ticket load
// (Algorithm 2), each quantum runs split stride (Split) with the job tickets
// of equation (3), and Rebalance migrates jobs when server loads drift
// apart. Accounting is per GPU type: a user's tickets entitle it to the same
// fraction of every type it has jobs on.
//
// The zero value is not usable; build one with NewFair.
type Fair struct {
	c      topology.Cluster
	split  *Split
	rank   []topology.GPUType
	types  []topology.GPUType
	count  []int
	users  []*fairUser // by ID
	jobs   map[alloc.JobID]*fairJob
	maxSrv map[topology.GPUType]int
}

// NewFair returns a Fair scheduler with no users on cluster c.
func NewFair(c topology.Cluster, s *Settings) (*Fair, error) {
	sp, err := NewSplit(c)
	if err != nil {
		return nil, err
	}
	f := &Fair{c: sp.c, split: sp, jobs: map[alloc.JobID]*fairJob{}, maxSrv: map[topology.GPUType]int{}}
	f.types, f.count = f.c.Capacity()
	for _, sv := range f.c.Servers {
		f.maxSrv[sv.Type] = max(f.maxSrv[sv.Type], sv.GPUs)
	}
	if s != nil {
		for _, t := range s.Rank {
			if _, ok := f.maxSrv[t]; ok {
				f.rank = append(f.rank, t)
			}
		}
	}
	f.rank = append(f.rank, f.types...)
	return f, nil
}

// Split returns the underlying split stride scheduler, for inspection.
func (f *Fair) Split() *Split { return f.split }

func (f *Fair) user(id alloc.TenantID) (*fairUser, int) {
	i, ok := slices.BinarySearchFunc(f.users, id, func(u *fairUser, id alloc.TenantID) int { return cmp.Compare(u.ID, id) })
	if !ok {
		return nil, i
	}
	return f.users[i], i
}

// AddUser adds a user without jobs. It returns an *gpufair.InputError wrapping
// gpufair.ErrValue for an empty ID, gpufair.ErrDuplicate for a known user and
// ErrTickets for bad tickets.
func (f *Fair) AddUser(u User) error {
	if u.ID == "" {
		return gpufair.Invalid("User.ID", "", gpufair.ErrValue, "empty user ID")
	}
	if err := checkTickets("User.Tickets", string(u.ID), u.Tickets); err != nil {
		return err
	}
	fu, i := f.user(u.ID)
	if fu != nil {
		return gpufair.Invalid("User.ID", string(u.ID), gpufair.ErrDuplicate, "already a user")
	}
	f.users = slices.Insert(f.users, i, &fairUser{User: u, demand: map[topology.GPUType]int{}})
	return nil
}

// RemoveUser removes a user and all its jobs, and returns the jobs removed.
// It returns gpufair.ErrUnknownID for an unknown user.
func (f *Fair) RemoveUser(id alloc.TenantID) ([]alloc.JobID, error) {
	fu, i := f.user(id)
	if fu == nil {
		return nil, gpufair.Invalid("User.ID", string(id), gpufair.ErrUnknownID, "not a user")
	}
	for _, j := range fu.jobs {
		f.split.Remove(j)
		delete(f.jobs, j)
	}
	f.users = slices.Delete(f.users, i, i+1)
	return fu.jobs, nil
}

// demand returns Σ r of user u's jobs on type t.
func (f *Fair) demand(u *fairUser, t topology.GPUType) int { return u.demand[t] }

// Accounts returns every user's accounting on every GPU type it has jobs
// on, by user then by type in cluster order.
func (f *Fair) Accounts() []Account {
	var out []Account
	for _, t := range f.types {
		out = append(out, f.accounts(t, "", 0)...)
	}
	slices.SortStableFunc(out, func(a, b Account) int { return cmp.Compare(a.User, b.User) })
	return out
}

// accounts returns the accounting of type t, counting extra more GPUs for
// user extraFor (a job about to be placed).
func (f *Fair) accounts(t topology.GPUType, extraFor alloc.TenantID, extra int) []Account {
	var acc []Account
	var tickets []float64
	var demand []float64
	for _, u := range f.users {
		d := f.demand(u, t)
		if u.ID == extraFor {
			d += extra
		}
		if d == 0 {
			continue
		}
		acc = append(acc, Account{User: u.ID, Type: t, Demand: d, TicketsPerGPU: u.Tickets / float64(d)})
		tickets = append(tickets, u.Tickets)
		demand = append(demand, float64(d))
	}
	k := slices.Index(f.types, t)
	// Cannot fail: users' tickets were checked by AddUser, demands are
	// counts of GPUs and capacities come from a valid cluster.
	eff, share, _ := Readjust(float64(f.count[k]), tickets, demand)
	for i := range acc {
		acc[i].Effective, acc[i].Share = eff[i], share[i]
	}
	return acc
}

// Readjust is weight readjustment (Chandra et al., used by Gandiva_fair
// section 3.2) for capacity gpus shared by users with the given tickets and
// demands: users whose ticket share exceeds their demand get their demand,
// and the rest is shared again among the others in proportion to their
// tickets, until every remaining user can use its share. It returns each
// user's effective tickets (its tickets if it is not capped; otherwise the
// tickets that entitle it to exactly its demand at the uncapped users' rate
// of tickets per GPU) and its share in GPUs. If every user is capped,
// effective tickets equal tickets. It returns an *gpufair.InputError for
// capacity or demands that are negative or not finite (gpufair.ErrValue),
// tickets that are not positive and finite (ErrTickets) and slices of
// different lengths (gpufair.ErrShape).
//
// Cost O(n log n) for n users.
func Readjust(gpus float64, tickets, demand []float64) (effective, share []float64, err error) {
	if len(tickets) != len(demand) {
		return nil, nil, gpufair.Invalid("Readjust", "", gpufair.ErrShape, "%d tickets, %d demands", len(tickets), len(demand))
	}
	if !(gpus >= 0) || math.IsInf(gpus, 0) {
		return nil, nil, gpufair.Invalid("Readjust", "", gpufair.ErrValue, "capacity %v GPUs", gpus)
	}
	for i := range tickets {
		if err := checkTickets("Readjust", strconv.Itoa(i), tickets[i]); err != nil {
			return nil, nil, err
		}
		if !(demand[i] >= 0) || math.IsInf(demand[i], 0) {
			return nil, nil, gpufair.Invalid("Readjust", strconv.Itoa(i), gpufair.ErrValue, "demand %v GPUs", demand[i])
		}
	}
	n := len(tickets)
	effective, share = slices.Clone(tickets), make([]float64, n)
	order := make([]int, n)
	var T float64
	for i := range order {
		order[i] = i
		T += tickets[i]
	}
	// Lowest demand per ticket first: they are the first to be capped.
	sort.SliceStable(order, func(a, b int) bool {
		return demand[order[a]]*tickets[order[b]] < demand[order[b]]*tickets[order[a]]
	})
	C := gpus
	capped := 0
	for _, i := range order {
		if demand[i]*T > tickets[i]*C {
			break
		}
		share[i] = demand[i]
		C -= demand[i]
		T -= tickets[i]
		capped++
	}
	if capped == n || !(C > 0) {
		return effective, share, nil
	}
	rate := T / C // tickets per GPU among uncapped users
	for k, i := range order {
		if k < capped {
			effective[i] = demand[i] * rate
		} else {
			share[i] = tickets[i] / rate
		}
	}
	return effective, share, nil
}

// loads returns equation (2) for every server of type t under accounting acc
// (servers of other types get 0).
func (f *Fair) loads(t topology.GPUType, acc []Account) []float64 {
	tpg := make(map[alloc.TenantID]float64, len(acc))
	for _, a := range acc {
		tpg[a.User] = a.Effective / float64(a.Demand)
	}
	load := make([]float64, len(f.c.Servers))
	for _, u := range f.users {
		for _, id := range u.jobs {
			j := f.jobs[id]
			if j.Type != t {
				continue
			}
			for _, p := range j.parts {
				load[p.Server] += float64(p.GPUs) * tpg[u.ID]
			}
		}
	}
	for l, sv := range f.c.Servers {
		load[l] /= float64(sv.GPUs)
	}
	return load
}

// Loads returns each server's ticket load per GPU (equation 2, with
// effective tickets), in cluster order.
func (f *Fair) Loads() []float64 {
	out := make([]float64, len(f.c.Servers))
	for _, t := range f.types {
		l := f.loads(t, f.accounts(t, "", 0))
		for i, sv := range f.c.Servers {
			if sv.Type == t {
				out[i] = l[i]
			}
		}
	}
	return out
}

// Submit places a new job (Algorithm 2) and hands it to the stride
// schedulers; see Submission for how the GPU type is chosen. A job that fits on one server of its type goes to the server
// of lowest ticket load per GPU once the job and its owner's new tickets
// per GPU are counted (ties to the server listed first); a larger job takes
// whole servers in increasing order of load. It returns an *gpufair.InputError
// wrapping gpufair.ErrValue for an empty ID or a size below 1,
// gpufair.ErrUnknownID for an unknown owner, gpufair.ErrDuplicate for a known
// job, gpufair.ErrUnknownType for a type (or profiled type) the cluster lacks,
// gpufair.ErrValue for a profile time that is not positive and finite, and
// gpufair.ErrTooLarge for a job larger than the GPUs of its type.
//
// Cost: O(users + jobs + servers).
func (f *Fair) Submit(s Submission) (Placement, error) {
	id := string(s.ID)
	if s.ID == "" {
		return Placement{}, gpufair.Invalid("Job.ID", "", gpufair.ErrValue, "empty job ID")
	}
	if s.Size < 1 {
		return Placement{}, gpufair.Invalid("Job.Size", id, gpufair.ErrValue, "size %d", s.Size)
	}
	u, _ := f.user(s.Owner)
	if u == nil {
		return Placement{}, gpufair.Invalid("Job.Owner", id, gpufair.ErrUnknownID, "owner %q is not a user", s.Owner)
	}
	if _, ok := f.jobs[s.ID]; ok {
		return Placement{}, gpufair.Invalid("Job.ID", id, gpufair.ErrDuplicate, "already submitted")
	}
	for g, p := range s.Perf {
		if !slices.Contains(f.types, g) {
			return Placement{}, gpufair.Invalid("Job.Perf", id, gpufair.ErrUnknownType, "%q", g)
		}
		if !(p > 0) || math.IsInf(p, 0) {
			return Placement{}, gpufair.Invalid("Job.Perf", id, gpufair.ErrValue, "mini-batch time %v on %q", p, g)
		}
	}
	if s.Type == "" && len(s.Perf) > 0 {
		best := math.Inf(1)
		for k, g := range f.types {
			p, ok := s.Perf[g]
			if !ok || s.Size > f.count[k] {
				continue
			}
			if c := p * float64(u.demand[g]+s.Size) / u.Tickets; c < best {
				best, s.Type = c, g
			}
		}
	}
	if s.Type == "" {
		s.Type = f.rank[0]
	}
	k := slices.Index(f.types, s.Type)
	if k < 0 {
		return Placement{}, gpufair.Invalid("Job.Type", id, gpufair.ErrUnknownType, "%q", s.Type)
	}
	if s.Size > f.count[k] {
		return Placement{}, gpufair.Invalid("Job.Size", id, gpufair.ErrTooLarge, "%d GPUs for a cluster of %d %q", s.Size, f.count[k], s.Type)
	}
	acc := f.accounts(s.Type, s.Owner, s.Size)
	load := f.loads(s.Type, acc)
	var tpg float64
	for _, a := range acc {
		if a.User == s.Owner {
			tpg = a.Effective / float64(a.Demand)
		}
	}
	var cand []int
	for l, sv := range f.c.Servers {
		if sv.Type == s.Type {
			cand = append(cand, l)
		}
	}
	j := &fairJob{Submission: s}
	if s.Size <= f.maxSrv[s.Type] {
		best := -1
		var bestLoad float64
		for _, l := range cand {
			g := f.c.Servers[l].GPUs
			if g < s.Size {
				continue
			}
			after := load[l] + float64(s.Size)*tpg/float64(g)
			if best < 0 || after < bestLoad {
				best, bestLoad = l, after
			}
		}
		j.parts = []Part{{Server: best, GPUs: s.Size}}
		if err := f.split.AddSmall(Job{ID: s.ID, Size: s.Size, Tickets: 1}, best); err != nil {
			return Placement{}, err
		}
	} else {
		sort.SliceStable(cand, func(a, b int) bool { return load[cand[a]] < load[cand[b]] })
		need := s.Size
		for _, l := range cand {
			if need == 0 {
				break
			}
			g := min(need, f.c.Servers[l].GPUs)
			j.parts = append(j.parts, Part{Server: l, GPUs: g})
			need -= g
		}
		slices.SortFunc(j.parts, func(a, b Part) int { return cmp.Compare(a.Server, b.Server) })
		if err := f.split.AddLarge(Job{ID: s.ID, Size: s.Size, Tickets: 1}, j.parts); err != nil {
			return Placement{}, err
		}
	}
	f.jobs[s.ID] = j
	u.demand[s.Type] += s.Size
	i, _ := slices.BinarySearch(u.jobs, s.ID)
	u.jobs = slices.Insert(u.jobs, i, s.ID)
	f.retune(u)
	return Placement{Job: s.ID, Type: s.Type, Parts: slices.Clone(j.parts)}, nil
}

// retune sets the job tickets (equation 3) of u's jobs.
func (f *Fair) retune(u *fairUser) {
	for _, t := range f.types {
		d := f.demand(u, t)
		if d == 0 {
			continue
		}
		tpg := u.Tickets / float64(d)
		for _, id := range u.jobs {
			if j := f.jobs[id]; j.Type == t {
				// Cannot fail: the job is scheduled and tickets are positive.
				_ = f.split.SetTickets(id, tpg*float64(j.Size))
			}
		}
	}
}

// Finish removes a job that ended. It returns gpufair.ErrUnknownID for an
// unknown job.
func (f *Fair) Finish(id alloc.JobID) error {
	j, ok := f.jobs[id]
	if !ok {
		return gpufair.Invalid("Job.ID", string(id), gpufair.ErrUnknownID, "not submitted")
	}
	f.split.Remove(id)
	delete(f.jobs, id)
	u, _ := f.user(j.Owner)
	u.demand[j.Type] -= j.Size
	i, _ := slices.BinarySearch(u.jobs, id)
	u.jobs = slices.Delete(u.jobs, i, i+1)
	f.retune(u)
	return nil
}

// JobTickets returns job id's tickets, equation (3).
func (f *Fair) JobTickets(id alloc.JobID) (float64, bool) {
	j, ok := f.jobs[id]
	if !ok {
		return 0, false
	}
	u, _ := f.user(j.Owner)
	return u.Tickets / float64(f.demand(u, j.Type)) * float64(j.Size), true
}

// Owner returns the owner of job id.
func (f *Fair) Owner(id alloc.JobID) (alloc.TenantID, bool) {
	j, ok := f.jobs[id]
	if !ok {
		return "", false
	}
	return j.Owner, true
}

// Quantum runs quantum q (split stride) and returns the plan; see
// Split.Schedule.
func (f *Fair) Quantum(q int) (*Plan, error) { return f.split.Schedule(q) }

// Rebalance makes at most one migration per GPU type: if the most and least
// loaded servers of the type differ in ticket load per GPU by more than
// threshold, it moves the single-server job from the most loaded server
// that brings their loads closest, provided that narrows the gap (ties to
// the smaller JobID). Multi-server jobs do not move. A moved job joins the
// new server at its smallest pass. It returns the migrations made, by type
// in cluster order.
func (f *Fair) Rebalance(threshold float64) []Migration {
	var out []Migration
	for _, t := range f.types {
		acc := f.accounts(t, "", 0)
		load := f.loads(t, acc)
		hi, lo := -1, -1
		for l, sv := range f.c.Servers {
			if sv.Type != t {
				continue
			}
			if hi < 0 || load[l] > load[hi] {
				hi = l
			}
			if lo < 0 || load[l] < load[lo] {
				lo = l
			}
		}
		gap := load[hi] - load[lo]
		if !(gap > threshold) {
			continue
		}
		tpg := make(map[alloc.TenantID]float64, len(acc))
		for _, a := range acc {
			tpg[a.User] = a.Effective / float64(a.Demand)
		}
		gHi, gLo := float64(f.c.Servers[hi].GPUs), float64(f.c.Servers[lo].GPUs)
		var best alloc.JobID
		bestGap := gap
		for _, e := range f.split.Local(hi).jobs {
			if e.Size > f.c.Servers[lo].GPUs {
				continue
			}
			w := float64(e.Size) * tpg[f.jobs[e.ID].Owner]
			g := load[hi] - w/gHi - (load[lo] + w/gLo)
			if g < 0 {
				g = -g
			}
			if g < bestGap || (g == bestGap && best != "" && e.ID < best) {
				best, bestGap = e.ID, g
			}
		}
		if best == "" {
			continue
		}
		j := f.jobs[best]
		f.split.Remove(best)
		u, _ := f.user(j.Owner)
		tickets := u.Tickets / float64(f.demand(u, t)) * float64(j.Size)
		// Cannot fail: the job fits the server and its tickets are valid.
		_ = f.split.AddSmall(Job{ID: best, Size: j.Size, Tickets: tickets}, lo)
		j.parts = []Part{{Server: lo, GPUs: j.Size}}
		out = append(out, Migration{Job: best, From: f.c.Servers[hi].Name, To: f.c.Servers[lo].Name})
	}
	return out
}
