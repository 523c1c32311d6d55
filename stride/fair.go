package stride

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Submission is a job handed to a Fair cluster: Gang GPUs at once, for
// tenant Owner. Its tickets in the stride schedulers come from its owner's
// Weight (equation 3), so a submission has no weight of its own. Type pins
// the job to a GPU type. Without a type, a job with a profile (Rates: its
// throughput in work per second on one GPU of some types, positive; a
// profiled rate r is a mini-batch time of 1/r) goes to the profiled type of
// greatest Rates[g]·ticketsPerGPU_g, the owner's tickets (Weight) per GPU on
// g once the job is counted (Algorithm 2 line 5, which takes the least
// mini-batch time per ticket per GPU: fast GPUs the tenant is not yet
// crowding; ties to the type listed first in the cluster). A job with
// neither goes to the first type of Settings.Rank that the cluster has (line
// 7: the newest model).
type Submission struct {
	ID    alloc.JobID
	Owner alloc.TenantID
	Gang  int
	Type  topology.GPUType
	Rates map[topology.GPUType]float64
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

// Account is a tenant's ticket accounting on one GPU type; a tenant's
// tickets are its Weight.
type Account struct {
	Tenant alloc.TenantID
	Type   topology.GPUType
	// Demand is Σ r_ik, the GPUs of the tenant's jobs on the type.
	Demand int
	// WeightPerGPU is equation (1), ticketsPerGPU, with the tenant's
	// tickets on the type (its Weight unless SetTypeTickets says
	// otherwise).
	WeightPerGPU float64
	// Effective is the tenant's tickets after weight readjustment: lower
	// than its tickets when its jobs cannot use its whole share, whose
	// rest is the others' bonus. Placement and load balancing use it; the
	// stride schedulers realise the bonus by themselves (see retuneUser).
	Effective float64
	// Share is the tenant's fair share of the type in GPUs: its
	// effective weight's part of the type's GPUs, at most Demand.
	Share float64
}

// Settings tunes a Fair cluster. A nil *Settings means the zero value.
type Settings struct {
	// Rank lists GPU types from most to least preferred for jobs that
	// name none. Types the cluster lacks are ignored; nil or no match
	// means the cluster's types in the order they first appear.
	Rank []topology.GPUType
	// Pack packs jobs into servers so that they do not idle GPUs while a
	// large gang waits (section 3.3; fair_pack.go gives the rule). On a
	// type whose every server is subscribed, Submit places a job that
	// fits one server where it fills idle GPUs, if it can (the least
	// loaded such server), and Rebalance, where a type needs no balancing
	// move, moves one job that fills them. Load balancing moves no job
	// off a server whose GPUs its leaving would idle, but still moves
	// jobs onto the least loaded server. False places and balances by
	// ticket load alone.
	Pack bool
}

type fairUser struct {
	alloc.Tenant
	jobs   []alloc.JobID // sorted
	demand map[topology.GPUType]int
	// typeTickets overrides Weight on some types (SetTypeTickets).
	typeTickets map[topology.GPUType]float64
}

type fairJob struct {
	Submission
	parts []Part
}

// Fair is Gandiva_fair's scheduler for a cluster of servers, each with GPUs
// of one type: tenants hold tickets (their Weight), jobs are placed by ticket load
// (Algorithm 2), each quantum runs split stride (Split) with the job tickets
// of equation (3), and Rebalance migrates jobs when server loads drift
// apart. Accounting is per GPU type: a tenant's tickets entitle it to the same
// fraction of every type it has jobs on.
//
// The zero value is not usable; build one with NewFair.
type Fair struct {
	c      topology.Cluster
	split  *Split
	rank   []topology.GPUType
	pack   bool // Settings.Pack
	types  []topology.GPUType
	count  []int
	users  []*fairUser // by ID
	jobs   map[alloc.JobID]*fairJob
	maxSrv map[topology.GPUType]int
	// acc caches accounts(t, "", 0) per type, valid while gen[t] is
	// unchanged; gen[t] moves whenever a demand or tickets on t change.
	acc map[topology.GPUType]cachedAccounts
	gen map[topology.GPUType]int
	// healthy, if not nil, is the GPUs of each server that can run jobs
	// now (GandivaFair sets it from its ledger's failures each quantum):
	// placement prefers servers that can run a job at once. nil: all.
	healthy []int
}

type cachedAccounts struct {
	gen int
	acc []Account
}

// touch marks type t's accounting as changed.
func (f *Fair) touch(t topology.GPUType) { f.gen[t]++ }

// up returns the GPUs of server l that can run jobs now.
func (f *Fair) up(l int) int {
	if f.healthy == nil {
		return f.c.Servers[l].GPUs
	}
	return f.healthy[l]
}

// runnable reports whether a job on parts can run on the healthy GPUs.
func (f *Fair) runnable(parts []Part) bool {
	for _, p := range parts {
		if p.GPUs > f.up(p.Server) {
			return false
		}
	}
	return true
}

// fits reports whether a job of gang GPUs placed on type t now would be
// runnable: on one server with that many healthy GPUs for a gang that
// fits a server, on healthy GPUs of the type's servers for a larger one.
func (f *Fair) fits(t topology.GPUType, gang int) bool {
	small, n := gang <= f.maxSrv[t], 0
	for l, sv := range f.c.Servers {
		if sv.Type != t {
			continue
		}
		if small {
			n = max(n, f.up(l))
		} else {
			n += f.up(l)
		}
	}
	return gang <= n
}

// NewFair returns a Fair scheduler with no tenants on cluster c.
func NewFair(c topology.Cluster, s *Settings) (*Fair, error) {
	sp, err := NewSplit(c)
	if err != nil {
		return nil, err
	}
	f := &Fair{c: sp.c, split: sp, jobs: map[alloc.JobID]*fairJob{}, maxSrv: map[topology.GPUType]int{},
		acc: map[topology.GPUType]cachedAccounts{}, gen: map[topology.GPUType]int{}}
	f.types, f.count = f.c.Capacity()
	for _, sv := range f.c.Servers {
		f.maxSrv[sv.Type] = max(f.maxSrv[sv.Type], sv.GPUs)
	}
	if s != nil {
		f.pack = s.Pack
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

// AddTenant adds a tenant without jobs; its Weight is its tickets. It
// returns an *gpufair.InputError wrapping gpufair.ErrValue for an empty ID
// or a Weight outside [1e-200, 1e300] (NaN included: below 1e-200 a job's
// stride could overflow), and gpufair.ErrDuplicate for
// a known tenant.
func (f *Fair) AddTenant(u alloc.Tenant) error {
	if u.ID == "" {
		return gpufair.Invalid("Tenant.ID", "", gpufair.ErrValue, "empty tenant ID")
	}
	if err := checkTickets("Tenant.Weight", string(u.ID), u.Weight); err != nil {
		return err
	}
	fu, i := f.user(u.ID)
	if fu != nil {
		return gpufair.Invalid("Tenant.ID", string(u.ID), gpufair.ErrDuplicate, "already a tenant")
	}
	f.users = slices.Insert(f.users, i, &fairUser{Tenant: u, demand: map[topology.GPUType]int{}})
	return nil
}

// RemoveTenant removes a tenant and all its jobs, and returns the jobs
// removed. It returns gpufair.ErrUnknownID for an unknown tenant.
func (f *Fair) RemoveTenant(id alloc.TenantID) ([]alloc.JobID, error) {
	fu, i := f.user(id)
	if fu == nil {
		return nil, gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not a tenant")
	}
	for _, j := range fu.jobs {
		f.split.Remove(j)
		delete(f.jobs, j)
	}
	f.users = slices.Delete(f.users, i, i+1)
	for _, t := range f.types {
		f.touch(t)
	}
	return fu.jobs, nil
}

// demand returns Σ r of tenant u's jobs on type t.
func (f *Fair) demand(u *fairUser, t topology.GPUType) int { return u.demand[t] }

// Accounts returns every tenant's accounting on every GPU type it has jobs
// on, by tenant then by type in cluster order.
func (f *Fair) Accounts() []Account {
	var out []Account
	for _, t := range f.types {
		out = append(out, f.accounts(t, "", 0)...)
	}
	slices.SortStableFunc(out, func(a, b Account) int { return cmp.Compare(a.Tenant, b.Tenant) })
	return out
}

// accounts returns the accounting of type t, counting extra more GPUs for
// tenant extraFor (a job about to be placed).
//
// Without an extra job the result is cached until the type changes; the
// caller must not modify it.
func (f *Fair) accounts(t topology.GPUType, extraFor alloc.TenantID, extra int) []Account {
	if extra == 0 {
		if c, ok := f.acc[t]; ok && c.gen == f.gen[t] {
			return c.acc
		}
		acc := f.computeAccounts(t, "", 0)
		f.acc[t] = cachedAccounts{f.gen[t], acc}
		return acc
	}
	return f.computeAccounts(t, extraFor, extra)
}

// computeAccounts is accounts without the cache.
func (f *Fair) computeAccounts(t topology.GPUType, extraFor alloc.TenantID, extra int) []Account {
	var acc []Account
	var weights []float64
	var demand []float64
	for _, u := range f.users {
		d := f.demand(u, t)
		if u.ID == extraFor {
			d += extra
		}
		if d == 0 {
			continue
		}
		w := f.tickets(u, t)
		acc = append(acc, Account{Tenant: u.ID, Type: t, Demand: d, WeightPerGPU: w / float64(d)})
		weights = append(weights, w)
		demand = append(demand, float64(d))
	}
	k := slices.Index(f.types, t)
	// Cannot fail: weights were checked by AddTenant, demands are
	// counts of GPUs and capacities come from a valid cluster.
	eff, share, _ := Readjust(float64(f.count[k]), weights, demand)
	for i := range acc {
		acc[i].Effective, acc[i].Share = eff[i], share[i]
	}
	return acc
}

// Readjust is weight readjustment (Chandra et al., used by Gandiva_fair
// section 3.2) for capacity gpus shared by tenants with the given weights
// (tickets) and demands: tenants whose weighted share exceeds their demand
// get their demand, and the rest is shared again among the others in
// proportion to their weights, until every remaining tenant can use its
// share. It returns each tenant's effective weight (its weight if it is not
// capped; otherwise the weight that entitles it to exactly its demand at the
// uncapped tenants' rate of weight per GPU) and its share in GPUs. If every
// tenant is capped, effective weights equal weights. It returns an
// *gpufair.InputError wrapping gpufair.ErrValue for capacity or demands that
// are negative or not finite and for weights that are not positive and
// finite, and gpufair.ErrShape for slices of different lengths.
//
// Shares are exact to readjustTol relative, however far apart the weights.
//
// Cost O(n log n) for n tenants.
func Readjust(gpus float64, weights, demand []float64) (effective, share []float64, err error) {
	if len(weights) != len(demand) {
		return nil, nil, gpufair.Invalid("Readjust", "", gpufair.ErrShape, "%d weights, %d demands", len(weights), len(demand))
	}
	if !(gpus >= 0) || math.IsInf(gpus, 0) {
		return nil, nil, gpufair.Invalid("Readjust", "", gpufair.ErrValue, "capacity %v GPUs", gpus)
	}
	for i := range weights {
		if err := checkWeight("Readjust", strconv.Itoa(i), weights[i]); err != nil {
			return nil, nil, err
		}
		if !(demand[i] >= 0) || math.IsInf(demand[i], 0) {
			return nil, nil, gpufair.Invalid("Readjust", strconv.Itoa(i), gpufair.ErrValue, "demand %v GPUs", demand[i])
		}
	}
	n := len(weights)
	effective, share = slices.Clone(weights), make([]float64, n)
	order := make([]int, n)
	var T float64
	for i := range order {
		order[i] = i
		T += weights[i]
	}
	// Lowest demand per unit of weight first: they are the first to be capped.
	slices.SortStableFunc(order, func(a, b int) int {
		return mulCompare(demand[a], weights[b], demand[b], weights[a])
	})
	// left[k] is the weight of the tenants from the k-th in order on,
	// summed afresh. The running total T, minus each capped weight, is
	// used until it strays from it by readjustTol: where weights differ by
	// 1e76 the total minus the large one left 0.
	left := make([]float64, n+1)
	for k := n - 1; k >= 0; k-- {
		left[k] = left[k+1] + weights[order[k]]
	}
	C := gpus
	capped := 0
	for _, i := range order {
		if mulCompare(demand[i], T, weights[i], C) > 0 {
			break
		}
		share[i] = demand[i]
		C = max(C-demand[i], 0)
		T -= weights[i]
		capped++
		if math.Abs(T-left[capped]) > readjustTol*left[capped] {
			T = left[capped]
		}
	}
	if capped == n || !(C > 0) {
		return effective, share, nil
	}
	rate := T / C // weight per GPU among uncapped tenants
	for k, i := range order {
		switch {
		case k >= capped && rate >= minNormal && !math.IsInf(rate, 1):
			share[i] = weights[i] / rate
		case k >= capped:
			// T/C overflowed (T large, C small) or lost digits below
			// the normal range: w/T ≤ 1 does neither.
			share[i] = weights[i] / T * C
		case demand[i] == 0:
			effective[i] = 0
		default:
			// At most the weight, as d·T ≤ w·C for a capped tenant
			// (rate overflows where T is large and C small).
			effective[i] = min(demand[i]*rate, weights[i])
		}
	}
	return effective, share, nil
}

// readjustTol is the relative error Readjust lets its running total of
// weights carry. The total is recomputed beyond it rather than always: at
// ties between a demand and its share, as where a tenant holding a type by
// trade has the weight 1e-9 (ExampleGandivaFair), which side the rounding
// falls decides whether every tenant counts as capped.
const readjustTol = 1e-6

// minNormal is the smallest positive normal float64: below it, numbers
// carry fewer significant digits.
const minNormal = 0x1p-1022

// mulCompare compares a·b with c·d for non-negative finite numbers as
// cmp.Compare(a*b, c*d) does, but without the products' overflow or
// underflow: they are compared as mantissa and exponent. Products of
// 1e-76 and 1e-308 underflowed to 0, which made a demand of zero tie with
// a positive one, and the tenant with no demand uncapped.
func mulCompare(a, b, c, d float64) int {
	fa, ea := math.Frexp(a)
	fb, eb := math.Frexp(b)
	fc, ec := math.Frexp(c)
	fd, ed := math.Frexp(d)
	x, y := fa*fb, fc*fd // 0 or in [1/4, 1), exactly as a·b and c·d round
	if x == 0 || y == 0 {
		return cmp.Compare(x, y)
	}
	ex, ey := ea+eb, ec+ed
	if x < 0.5 {
		x, ex = 2*x, ex-1
	}
	if y < 0.5 {
		y, ey = 2*y, ey-1
	}
	if ex != ey {
		return cmp.Compare(ex, ey)
	}
	return cmp.Compare(x, y)
}

// loads returns equation (2) for every server of type t under accounting acc
// (servers of other types get 0). It reads the servers' own job lists, so
// its cost is that of the jobs on t.
func (f *Fair) loads(t topology.GPUType, acc []Account) []float64 {
	tpg := make(map[alloc.TenantID]float64, len(acc))
	for _, a := range acc {
		tpg[a.Tenant] = a.Effective / float64(a.Demand)
	}
	load := make([]float64, len(f.c.Servers))
	for l, sv := range f.c.Servers {
		if sv.Type != t {
			continue
		}
		for _, e := range f.split.local[l].jobs {
			load[l] += float64(e.Gang) * tpg[e.Owner]
		}
	}
	for _, lj := range f.split.large {
		for _, p := range lj.parts {
			if f.c.Servers[p.Server].Type == t {
				load[p.Server] += float64(p.GPUs) * tpg[lj.Owner]
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
// schedulers; see Submission for how the GPU type is chosen. A job
// that fits on one server of its type goes to the server of lowest ticket
// load per GPU once the job and its owner's new tickets per GPU are counted
// (ties to the server listed first; with Settings.Pack, on a type whose
// every server is subscribed, among the servers whose idle GPUs it fills,
// if any); a larger job takes whole servers in increasing order of load.
// It returns an *gpufair.InputError wrapping gpufair.ErrValue for an empty
// ID or a gang below 1, gpufair.ErrUnknownID for an unknown owner,
// gpufair.ErrDuplicate for a known job, gpufair.ErrUnknownType for a type
// (or profiled type) the cluster lacks, gpufair.ErrValue for a profiled
// rate that is not positive and finite, and gpufair.ErrTooLarge for a job
// larger than the GPUs of its type.
//
// Cost: O(tenants + jobs + servers).
func (f *Fair) Submit(s Submission) (Placement, error) {
	id := string(s.ID)
	if s.ID == "" {
		return Placement{}, gpufair.Invalid("Job.ID", "", gpufair.ErrValue, "empty job ID")
	}
	if s.Gang < 1 {
		return Placement{}, gpufair.Invalid("Job.Gang", id, gpufair.ErrValue, "gang %d", s.Gang)
	}
	u, _ := f.user(s.Owner)
	if u == nil {
		return Placement{}, gpufair.Invalid("Job.Owner", id, gpufair.ErrUnknownID, "owner %q is not a tenant", s.Owner)
	}
	if _, ok := f.jobs[s.ID]; ok {
		return Placement{}, gpufair.Invalid("Job.ID", id, gpufair.ErrDuplicate, "already submitted")
	}
	for _, g := range slices.Sorted(maps.Keys(s.Rates)) {
		if !slices.Contains(f.types, g) {
			return Placement{}, gpufair.Invalid("Job.Rates", id, gpufair.ErrUnknownType, "%q", g)
		}
		if r := s.Rates[g]; !(r > 0) || math.IsInf(r, 0) {
			return Placement{}, gpufair.Invalid("Job.Rates", id, gpufair.ErrValue, "rate %v on %q", r, g)
		}
	}
	if s.Type == "" && len(s.Rates) > 0 {
		// Greatest r_g·Weight/d_g, d_g the owner's GPUs on g with the job:
		// the owner's Weight is common to every type and drops out, and
		// r_g/d_g > r_best/d_best is cross-multiplied so that types whose
		// rates and demands are in proportion tie exactly.
		var best float64 // rate of s.Type
		var bestD int    // owner's GPUs of s.Type with the job
		for k, g := range f.types {
			r, ok := s.Rates[g]
			if !ok || s.Gang > f.count[k] {
				continue
			}
			d := u.demand[g] + s.Gang
			if s.Type == "" || r*float64(bestD) > best*float64(d) {
				best, bestD, s.Type = r, d, g
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
	if s.Gang > f.count[k] {
		return Placement{}, gpufair.Invalid("Job.Gang", id, gpufair.ErrTooLarge, "%d GPUs for a cluster of %d %q", s.Gang, f.count[k], s.Type)
	}
	j := &fairJob{Submission: s}
	if err := f.place(j, u); err != nil {
		return Placement{}, err
	}
	i, _ := slices.BinarySearch(u.jobs, s.ID)
	u.jobs = slices.Insert(u.jobs, i, s.ID)
	f.jobs[s.ID] = j
	f.retuneUser(u, s.Type)
	return Placement{Job: s.ID, Type: s.Type, Parts: slices.Clone(j.parts)}, nil
}

// place puts j on the servers of j.Type of lowest ticket load once it is
// counted (Algorithm 2, lines 9 to 11), adds it to the stride schedulers
// and counts its demand; the caller lists it and retunes the type.
func (f *Fair) place(j *fairJob, u *fairUser) error {
	s := j.Submission
	acc := f.accounts(s.Type, s.Owner, s.Gang)
	load := f.loads(s.Type, acc)
	var tpg float64
	for _, a := range acc {
		if a.Tenant == s.Owner {
			tpg = a.Effective / float64(a.Demand)
		}
	}
	if s.Gang <= f.maxSrv[s.Type] {
		// Least loaded after, among the servers that can run the job now
		// if any can; with packing on a subscribed type, among those that
		// can run it now and whose idle GPUs it fills, if any do.
		var fills func(l int) bool
		if f.pack {
			if on := f.serverGangs(s.Type); f.subscribed(s.Type, on) {
				fills = func(l int) bool { return f.up(l) >= s.Gang && f.packGain(l, s.Gang, on) > 0 }
			}
		}
		best, bestUp := -1, false
		var bestLoad float64
		for pass := 0; pass < 2 && best < 0; pass++ {
			for l, sv := range f.c.Servers {
				if sv.Type != s.Type || sv.GPUs < s.Gang || pass == 0 && fills != nil && !fills(l) {
					continue
				}
				up := f.up(l) >= s.Gang
				after := load[l] + float64(s.Gang)*tpg/float64(sv.GPUs)
				if best < 0 || up && !bestUp || up == bestUp && after < bestLoad {
					best, bestUp, bestLoad = l, up, after
				}
			}
			if fills == nil {
				break
			}
		}
		j.parts = []Part{{Server: best, GPUs: s.Gang}}
		if err := f.split.AddSmall(alloc.Job{ID: s.ID, Owner: s.Owner, Gang: s.Gang, Weight: 1}, best); err != nil {
			return err
		}
	} else {
		j.parts = f.wholeServers(s.Type, s.Gang, load)
		if err := f.split.AddLarge(alloc.Job{ID: s.ID, Owner: s.Owner, Gang: s.Gang, Weight: 1}, j.parts); err != nil {
			return err
		}
	}
	u.demand[s.Type] += s.Gang
	f.touch(s.Type)
	return nil
}

// retuneUser sets the weights of u's jobs on type t to their tickets,
// equation (3): the owner's tickets on t per GPU it demands there, times
// the gang. Weights already right are left alone, so a job's stride only
// restarts from its pass when its tickets change.
//
// The stride weights use each tenant's tickets, not its effective tickets
// after weight readjustment (Account.Effective). Stride is work-conserving
// on a server: a tenant whose jobs cannot use its share still runs them
// every quantum they fit, and the GPU time it leaves goes to the other
// jobs in proportion to their tickets, which is the bonus share of section
// 3.2. Lowering the capped tenant's weight to its effective tickets would
// instead let the others take part of what it can use: in Figure 1(d), C's
// 2-GPU job would get 1.6 GPUs of its fair 2 (TestFigure1InterUserFairness).
// Placement and load balancing use the effective tickets, where the
// tickets a tenant cannot use would overstate a server's load.
//
// Across servers the bonus can go the wrong way. The central scheduler of
// split stride weighs each server by the raw tickets of the jobs on it, so
// a tenant with a share to spare inflates its server's weight, at the cost
// of a multi-server job spread over that server and others. Two 4-GPU
// servers, three tenants of equal tickets: A with one 1-GPU job, B with
// one 8-GPU job, C with four 1-GPU jobs (shares 1, 3.5 and 3.5) get 0.83,
// 1.34 and 3.33 GPUs over 800 quanta; with A's job at its effective
// tickets, 0.68, 2.55 and 2.73. Neither reading is right in every case.
func (f *Fair) retuneUser(u *fairUser, t topology.GPUType) {
	d := u.demand[t]
	if d == 0 {
		return
	}
	tpg := f.tickets(u, t) / float64(d)
	for _, id := range u.jobs {
		j := f.jobs[id]
		if j.Type != t {
			continue
		}
		w := tpg * float64(j.Gang)
		if old, _ := f.split.weight(id); old != w {
			// Cannot fail: the job is scheduled and its weight positive.
			_ = f.split.SetWeight(id, w)
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
	u.demand[j.Type] -= j.Gang
	f.touch(j.Type)
	i, _ := slices.BinarySearch(u.jobs, id)
	u.jobs = slices.Delete(u.jobs, i, i+1)
	f.retuneUser(u, j.Type)
	return nil
}

// JobWeight returns job id's weight in the stride schedulers: its tickets,
// equation (3), its owner's ticketsPerGPU on its type times its gang.
func (f *Fair) JobWeight(id alloc.JobID) (float64, bool) {
	if _, ok := f.jobs[id]; !ok {
		return 0, false
	}
	return f.split.weight(id)
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
// the smaller JobID). If no single-server job can, it moves a multi-server
// job with a part on the most loaded server onto the servers of least load
// (whole servers first, as Submit places it), provided that lowers the
// highest load of the type. With Settings.Pack, no balancing move takes a
// single-server job off a server whose GPUs its leaving would idle, and a
// type that needs no balancing move gets a packing move instead
// (packMove), which may idle some where it leaves to fill more where it
// goes. A moved
// job joins its new servers at the smallest pass there. It returns the
// migrations made, by type in cluster order; a multi-server job's
// migration names the most loaded server it left and the least loaded
// server it joined.
func (f *Fair) Rebalance(threshold float64) []Migration {
	var out []Migration
	for _, t := range f.types {
		acc := f.accounts(t, "", 0)
		load := f.loads(t, acc)
		var on []gangs
		if f.pack {
			on = f.serverGangs(t)
		}
		m, ok := f.balance(t, threshold, acc, load, on)
		if !ok && f.pack {
			m, ok = f.packMove(t, load, on)
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// balance is Rebalance's load-balancing move on type t, if it makes one,
// under accounting acc with server loads load; on is serverGangs' with
// packing, nil without.
func (f *Fair) balance(t topology.GPUType, threshold float64, acc []Account, load []float64, on []gangs) (Migration, bool) {
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
		return Migration{}, false
	}
	tpg := make(map[alloc.TenantID]float64, len(acc))
	for _, a := range acc {
		tpg[a.Tenant] = a.Effective / float64(a.Demand)
	}
	gHi, gLo := float64(f.c.Servers[hi].GPUs), float64(f.c.Servers[lo].GPUs)
	var best alloc.JobID
	bestGap := gap
	for _, e := range f.split.Local(hi).jobs {
		if e.Gang > f.up(lo) || f.pack && f.leaveIdle(hi, e.Gang, on) > 0 {
			continue
		}
		w := float64(e.Gang) * tpg[f.jobs[e.ID].Owner]
		g := load[hi] - w/gHi - (load[lo] + w/gLo)
		if g < 0 {
			g = -g
		}
		if g < bestGap || (g == bestGap && best != "" && e.ID < best) {
			best, bestGap = e.ID, g
		}
	}
	if best == "" {
		return f.rebalanceLarge(t, hi, lo, load, tpg)
	}
	return f.moveSmall(best, hi, lo), true
}

// moveSmall moves the single-server job id from server from to server to.
func (f *Fair) moveSmall(id alloc.JobID, from, to int) Migration {
	j := f.jobs[id]
	w, _ := f.split.weight(id)
	f.split.Remove(id)
	// Cannot fail: the job fits the server and its weight is valid.
	_ = f.split.AddSmall(alloc.Job{ID: id, Owner: j.Owner, Gang: j.Gang, Weight: w}, to)
	j.parts = []Part{{Server: to, GPUs: j.Gang}}
	return Migration{Job: id, From: f.c.Servers[from].Name, To: f.c.Servers[to].Name}
}

// packMove is Rebalance's packing move on type t (Settings.Pack), with
// server loads load and serverGangs' on: on a subscribed type, the
// single-server job whose move fills the most idle GPUs, net of those it
// opens where it leaves (which must stay subscribed), and can run where it
// goes now; ties to the most loaded source, then the smaller JobID. It goes to the server where it fills
// the most, then the least loaded, then the one listed first.
//
// Cost: O(servers · largest server + jobs on t).
func (f *Fair) packMove(t topology.GPUType, load []float64, on []gangs) (Migration, bool) {
	if !f.subscribed(t, on) {
		return Migration{}, false
	}
	// dest[g] holds the two best servers for a job of gang g+1, so that
	// one is left when the other is the job's own.
	type fill struct{ server, gain int }
	dest := make([][2]fill, f.maxSrv[t])
	for g := range dest {
		dest[g] = [2]fill{{-1, 0}, {-1, 0}}
	}
	for l, sv := range f.c.Servers {
		if sv.Type != t || on[l].idle(sv.GPUs) == 0 {
			continue
		}
		for g := 1; g <= f.up(l); g++ {
			c := fill{l, f.packGain(l, g, on)}
			if c.gain <= 0 {
				continue
			}
			better := func(a, b fill) bool {
				return b.server < 0 || a.gain > b.gain || a.gain == b.gain && load[a.server] < load[b.server]
			}
			d := &dest[g-1]
			if better(c, d[0]) {
				d[0], d[1] = c, d[0]
			} else if better(c, d[1]) {
				d[1] = c
			}
		}
	}
	var best alloc.JobID
	bestFrom, bestTo, bestGain := -1, -1, 0
	for from, src := range f.c.Servers {
		if src.Type != t {
			continue
		}
		for _, e := range f.split.local[from].jobs {
			if on[from].sum-e.Gang < src.GPUs {
				continue
			}
			opened := f.leaveIdle(from, e.Gang, on)
			d := dest[e.Gang-1][0]
			if d.server == from {
				d = dest[e.Gang-1][1]
			}
			gain := d.gain - opened
			if d.server < 0 || gain <= 0 {
				continue
			}
			if gain > bestGain || gain == bestGain && (load[from] > load[bestFrom] || load[from] == load[bestFrom] && e.ID < best) {
				best, bestFrom, bestTo, bestGain = e.ID, from, d.server, gain
			}
		}
	}
	if best == "" {
		return Migration{}, false
	}
	return f.moveSmall(best, bestFrom, bestTo), true
}

// rebalanceLarge moves the multi-server job with a part on server hi whose
// new placement lowers type t's highest load the most (ties to the smaller
// JobID), and reports whether it moved one.
func (f *Fair) rebalanceLarge(t topology.GPUType, hi, lo int, load []float64, tpg map[alloc.TenantID]float64) (Migration, bool) {
	top := load[hi]
	var best *largeJob
	var bestParts []Part
	bestTop := top
	for _, lj := range f.split.large {
		if f.jobs[lj.ID].Type != t || !slices.ContainsFunc(lj.parts, func(p Part) bool { return p.Server == hi }) {
			continue
		}
		w := tpg[lj.Owner]
		after := slices.Clone(load)
		for _, p := range lj.parts {
			after[p.Server] -= float64(p.GPUs) * w / float64(f.c.Servers[p.Server].GPUs)
		}
		parts := f.wholeServers(t, lj.Gang, after)
		for _, p := range parts {
			after[p.Server] += float64(p.GPUs) * w / float64(f.c.Servers[p.Server].GPUs)
		}
		newTop := math.Inf(-1)
		for l, sv := range f.c.Servers {
			if sv.Type == t {
				newTop = max(newTop, after[l])
			}
		}
		if newTop < bestTop-loadTol && !slices.Equal(parts, lj.parts) {
			best, bestParts, bestTop = lj, parts, newTop
		}
	}
	if best == nil {
		return Migration{}, false
	}
	job := best.Job
	f.split.Remove(job.ID)
	// Cannot fail: the parts come from the type's servers and add up.
	_ = f.split.AddLarge(job, bestParts)
	f.jobs[job.ID].parts = bestParts
	return Migration{Job: job.ID, From: f.c.Servers[hi].Name, To: f.c.Servers[lo].Name}, true
}

// loadTol is the ticket load per GPU below which a multi-server migration
// is not worth its cost: loads are sums of quotients.
const loadTol = 1e-9

// wholeServers returns the parts of a multi-server job of gang GPUs on
// type t: whole servers in increasing order of load (ties to the server
// listed first), the last one partly, by server; their healthy GPUs where
// those are enough for the gang.
func (f *Fair) wholeServers(t topology.GPUType, gang int, load []float64) []Part {
	var cand []int
	for l, sv := range f.c.Servers {
		if sv.Type == t {
			cand = append(cand, l)
		}
	}
	sort.SliceStable(cand, func(a, b int) bool { return load[cand[a]] < load[cand[b]] })
	gpus := f.up
	if !f.fits(t, gang) {
		gpus = func(l int) int { return f.c.Servers[l].GPUs }
	}
	var parts []Part
	need := gang
	for _, l := range cand {
		if need == 0 {
			break
		}
		if g := min(need, gpus(l)); g > 0 {
			parts = append(parts, Part{Server: l, GPUs: g})
			need -= g
		}
	}
	slices.SortFunc(parts, func(a, b Part) int { return cmp.Compare(a.Server, b.Server) })
	return parts
}
