package stride

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// DefaultQuantum is Gandiva_fair's time quantum, one minute (EuroSys'20,
// section 3.5: one to two minutes keep the cost of GPU context switches
// under 1%).
const DefaultQuantum = 60.0

// GandivaSettings tune a GandivaFair scheduler. A nil *GandivaSettings means
// the zero value: one-minute quanta, no trading, one ticket per tenant, the
// newest type being the last one listed, and the defaults of each field.
type GandivaSettings struct {
	// Quantum is the lease of each decision, in seconds; 0 means
	// DefaultQuantum.
	Quantum float64
	// Trading turns on second-price GPU trading between tenants (section
	// 3.4, package trade) from the rates the scheduler profiles.
	Trading bool
	// Tickets returns a tenant's tickets; nil means 1 for every tenant.
	// Section 5.3 gives each tenant tickets equal to its job's size.
	Tickets func(alloc.TenantID) float64
	// Rank lists GPU types from newest (preferred for a job never
	// profiled, Algorithm 2 line 7) to oldest; nil means the scheduler's
	// types in reverse order, the last one listed being the newest. The
	// market trades the reverse order: slowest first.
	Rank []topology.GPUType
	// Balance sets the gap in ticket load per GPU between the most and the
	// least loaded servers of a type above which a job migrates to even it
	// out (section 3.5): Balance·T/G for every type, T the sum over each
	// tenant and each type it has demand on of its tickets there (after
	// trades, before weight readjustment), G the GPUs of all types. 0
	// means 0.1.
	Balance float64
	// Migrations bounds the jobs migrated across GPU types in one quantum
	// (section 3.5 migrates one, the one that gains most); 0 means 1.
	Migrations int
	// Gain is the least relative gain for which a job migrates across
	// types; 0 means 0.1.
	Gain float64
	// Drift is the relative change in a tenant's profiled rate on a type
	// above which its trades in force are undone and it trades again on
	// the new rates; 0 means 0.25.
	Drift float64
	// Decay is the weight of a new measurement in a job's profiled rate
	// (an exponential average of the recent runs); 0 means 0.5.
	Decay float64
	// MaxPerGPU, if positive, bounds the GPUs of admitted jobs on a type
	// to MaxPerGPU times its GPUs (memory for suspended jobs); jobs beyond
	// it wait in their tenant's queue, and Algorithm 2 admits from the
	// least served tenant first.
	MaxPerGPU int
	// Budget bounds the time Decide spends trading; 0 means none. Trading
	// cut short keeps the trades made, and the decision is marked Partial.
	Budget time.Duration
	// Pack packs jobs into servers at admission and by migration so that
	// servers do not idle GPUs while a large gang waits (section 3.3;
	// Settings.Pack). False places and balances by ticket load alone.
	Pack bool
}

// GandivaFair is Gandiva_fair (EuroSys'20) on the round contract. Tenants
// are the jobs' owners, with GandivaSettings.Tickets tickets each; the
// rates a job arrives with only say which types it can run on (positive),
// and its speed on each type is profiled from its own runs. Each quantum:
//
//  1. Profiling: a job that ran on one type since its last progress report
//     gets a sample of its rate there, work done over time received,
//     averaged with the earlier ones (GandivaSettings.Decay).
//  2. Admission (Algorithm 2): each tenant has a queue of its jobs in
//     arrival order. While jobs wait, the least served tenant (fewest GPUs
//     demanded per ticket, ties by ID) places its oldest job on the type
//     where the tenant's profiled rate times its tickets per GPU is
//     greatest (line 5), or, where it has no profile, the newest type
//     whose share it has not yet filled (line 7: jobs then get profiled
//     on each type in turn); then on the servers of least ticket load,
//     whole servers for a gang larger than one (Fair.Submit; with
//     GandivaSettings.Pack, where it fills GPUs that would idle).
//  3. Trading (GandivaSettings.Trading): tenants' profiled rates are bids
//     in a second-price market (trade.Market, undoing trades selectively);
//     each tenant's tickets on each type become its holdings there. A
//     tenant bids with the GPUs its jobs can use at once, the sum of their
//     gangs (trade.Bidder.Demand), so it trades away no GPUs it uses for
//     GPUs it cannot use.
//     A tenant whose profiled rate drifts has its trades undone first.
//     Rates the market refuses (trade.Market.SetRates: a spread beyond
//     alloc.MaxRateSpread) are no bid: the tenant's trades stand.
//  4. Migration across types: the one job (GandivaSettings.Migrations)
//     whose move gains its tenant most, by at least GandivaSettings.Gain:
//     throughput Σ_k rate_k·min(demand_k, share_k), or, where that is
//     unchanged, the job's own progress rate_k·min(1, share_k/demand_k).
//     A trade is realised by these moves: jobs leave the types their
//     tenant sold and fill the types it bought.
//  5. Load balancing: on each type whose server loads drift apart, one
//     job migrates from the most loaded server (Fair.Rebalance,
//     multi-server jobs included); with GandivaSettings.Pack, on a type
//     that needs no such move, one job moves to fill idle GPUs.
//  6. Split stride (Split) over the healthy GPUs: the jobs it picks run
//     for the quantum, on the slots they held if they stay on a server.
//
// Failures, which the paper leaves out: after admission, a job that failed
// GPUs keep from running where it is placed moves to healthy servers of its
// type, or else to the type it runs on that can hold its gang (its tenant's
// fastest); admission and migration count only the types that can hold a
// gang now. A job that fits nowhere waits for repairs.
//
// Every migration is a checkpoint and restart on other GPUs: the decision
// marks it Restart, and a simulator charges its cost.
//
// The zero value is not usable; build one with NewGandivaFair.
type GandivaFair struct {
	set    GandivaSettings
	name   string
	l      *round.Ledger
	f      *Fair
	m      *trade.Market // nil without trading
	st     gandivaState
	owned  map[alloc.TenantID]int // jobs in the system per tenant
	rank   []topology.GPUType     // newest first
	count  []float64              // GPUs per type, in the ledger's order
	typeIx map[topology.GPUType]int
}

// gandivaState is what GandivaFair keeps beyond the ledger, Fair and the
// market, as snapshotted.
type gandivaState struct {
	Quantum  int                         `json:"quantum"`
	Profiles map[alloc.JobID]*jobProfile `json:"profiles"`
}

// jobProfile is a job's profiled rates and the progress they were last
// measured at.
type jobProfile struct {
	Rate     []float64 `json:"rate"` // work per second of one gang on each type; 0 unknown
	Done     float64   `json:"done"`
	Received []float64 `json:"received"`
}

// NewGandivaFair returns Gandiva_fair's scheduler on cluster c, with job
// rates given over types (each a type of c). s may be nil. It returns the
// errors of round.NewLedger and an *gpufair.InputError for settings out of
// range or a rank naming types not in types.
func NewGandivaFair(c topology.Cluster, types []topology.GPUType, s *GandivaSettings) (*GandivaFair, error) {
	var set GandivaSettings
	if s != nil {
		set = *s
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&set.Quantum, DefaultQuantum)
	def(&set.Balance, 0.1)
	def(&set.Gain, 0.1)
	def(&set.Drift, 0.25)
	def(&set.Decay, 0.5)
	if set.Migrations == 0 {
		set.Migrations = 1
	}
	bad := func(field string, v any) error {
		return gpufair.Invalid("GandivaSettings."+field, "", gpufair.ErrValue, "%v", v)
	}
	switch {
	case !(set.Quantum > 0) || math.IsInf(set.Quantum, 0):
		return nil, bad("Quantum", set.Quantum)
	case !(set.Balance > 0) || math.IsInf(set.Balance, 0):
		return nil, bad("Balance", set.Balance)
	case !(set.Gain > 0) || math.IsInf(set.Gain, 0):
		return nil, bad("Gain", set.Gain)
	case !(set.Drift > 0) || math.IsInf(set.Drift, 0):
		return nil, bad("Drift", set.Drift)
	case !(set.Decay > 0) || set.Decay > 1:
		return nil, bad("Decay", set.Decay)
	case set.Migrations < 0:
		return nil, bad("Migrations", set.Migrations)
	case set.MaxPerGPU < 0:
		return nil, bad("MaxPerGPU", set.MaxPerGPU)
	case set.Budget < 0:
		return nil, bad("Budget", set.Budget)
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		return nil, err
	}
	g := &GandivaFair{set: set, l: l, name: "gandiva-fair", typeIx: map[topology.GPUType]int{}}
	for k, t := range l.Types() {
		g.typeIx[t] = k
		g.count = append(g.count, float64(l.Count()[k]))
	}
	if set.Rank == nil {
		g.rank = slices.Clone(l.Types())
		slices.Reverse(g.rank)
	} else {
		for _, t := range set.Rank {
			if _, ok := g.typeIx[t]; !ok || slices.Contains(g.rank, t) {
				return nil, gpufair.Invalid("GandivaSettings.Rank", string(t), gpufair.ErrUnknownType, "not one of the scheduler's types, or listed twice")
			}
			g.rank = append(g.rank, t)
		}
		for _, t := range l.Types() {
			if !slices.Contains(g.rank, t) {
				g.rank = append(g.rank, t)
			}
		}
	}
	if set.Trading {
		g.name += "-trading"
	}
	if set.Pack {
		g.name += "-pack"
	}
	if err := g.reset(); err != nil {
		return nil, err
	}
	return g, nil
}

// reset gives the scheduler an empty Fair, market and state over its
// ledger's cluster.
func (g *GandivaFair) reset() error {
	f, err := NewFair(g.l.Cluster(), &Settings{Rank: g.rank, Pack: g.set.Pack})
	if err != nil {
		return err
	}
	g.f, g.m = f, nil
	if g.set.Trading {
		slow := slices.Clone(g.rank)
		slices.Reverse(slow)
		count := make([]float64, len(slow))
		for i, t := range slow {
			count[i] = g.count[g.typeIx[t]]
		}
		if g.m, err = trade.NewMarket(slow, count, &trade.Settings{Selective: true, Unprofiled: true}); err != nil {
			return err
		}
	}
	g.st = gandivaState{Profiles: map[alloc.JobID]*jobProfile{}}
	g.owned = map[alloc.TenantID]int{}
	return nil
}

// Name returns "gandiva-fair", with "-trading" after it with trading and
// "-pack" last with packing.
func (g *GandivaFair) Name() string { return g.name }

// Ledger returns the scheduler's ledger, to read only.
func (g *GandivaFair) Ledger() *round.Ledger { return g.l }

// Fair returns the ticket accounting and stride schedulers, to read only.
func (g *GandivaFair) Fair() *Fair { return g.f }

// Trades returns every trade and undo so far, oldest first (none without
// trading).
func (g *GandivaFair) Trades() []trade.Trade {
	if g.m == nil {
		return nil
	}
	return g.m.Log()
}

// Holdings returns tenant id's GPUs of each type, in the ledger's type
// order, as traded (its tickets' share of every type without trading).
func (g *GandivaFair) Holdings(id alloc.TenantID) ([]float64, bool) {
	if g.m == nil {
		u, _ := g.f.user(id)
		if u == nil {
			return nil, false
		}
		var W float64
		for _, v := range g.f.users {
			W += v.Weight
		}
		out := make([]float64, len(g.count))
		for k, n := range g.count {
			out[k] = n * u.Weight / W
		}
		return out, true
	}
	h, ok := g.m.Holdings(id)
	if !ok {
		return nil, false
	}
	out := make([]float64, len(h))
	for i, t := range g.m.Types() {
		out[g.typeIx[t]] = h[i]
	}
	return out, true
}

// tickets returns tenant id's tickets.
func (g *GandivaFair) tickets(id alloc.TenantID) float64 {
	if g.set.Tickets == nil {
		return 1
	}
	return g.set.Tickets(id)
}

func owner(j alloc.Job) alloc.TenantID {
	if j.Owner == "" {
		return alloc.TenantID(j.ID)
	}
	return j.Owner
}

// Apply checks and applies events (round.Ledger.Apply). It also returns an
// *gpufair.InputError wrapping gpufair.ErrValue, and changes nothing, for
// the first job of a tenant whose tickets are not positive and finite.
func (g *GandivaFair) Apply(events ...round.Event) error {
	for i, e := range events {
		if e.Kind != round.Arrived {
			continue
		}
		o := owner(e.Job)
		if u, _ := g.f.user(o); u != nil {
			continue
		}
		if err := checkTickets("Event["+strconv.Itoa(i)+"].Job.Owner", string(o), g.tickets(o)); err != nil {
			return err
		}
	}
	// The owners of departing jobs, before the ledger forgets them.
	owners := map[alloc.JobID]alloc.TenantID{}
	for _, e := range events {
		switch e.Kind {
		case round.Arrived:
			owners[e.Job.ID] = owner(e.Job)
		case round.Departed:
			if j, ok := g.l.Job(e.Job.ID); ok {
				owners[e.Job.ID] = j.Owner
			}
		}
	}
	if err := g.l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		switch e.Kind {
		case round.Arrived:
			g.arrive(e.Job)
		case round.Departed:
			g.depart(e.Job.ID, owners[e.Job.ID])
		case round.Measured:
			g.remeasured(e.Job.ID)
		}
	}
	return nil
}

// remeasured returns job id to the admission queue if a measurement gave
// it no rate on the type it is scheduled on: admission then picks a type
// it runs on.
func (g *GandivaFair) remeasured(id alloc.JobID) {
	fj, ok := g.f.jobs[id]
	if !ok {
		return
	}
	if j, ok := g.l.Job(id); ok && j.Rates[g.typeIx[fj.Type]] == 0 {
		_ = g.f.Finish(id) // submitted
	}
}

// arrive queues a job: it waits for admission in Decide.
func (g *GandivaFair) arrive(j alloc.Job) {
	o := owner(j)
	if u, _ := g.f.user(o); u == nil {
		w := g.tickets(o)
		_ = g.f.AddTenant(alloc.Tenant{ID: o, Weight: w}) // checked in Apply
		if g.m != nil {
			_, _ = g.m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: o, Weight: w}}, g.marketQuantum())
		}
	}
	g.owned[o]++
	n := len(g.count)
	g.st.Profiles[j.ID] = &jobProfile{Rate: make([]float64, n), Received: make([]float64, n)}
}

// depart removes job id of tenant o, and the tenant with its last job:
// the tenant's trades are undone and its share goes to the others.
func (g *GandivaFair) depart(id alloc.JobID, o alloc.TenantID) {
	if g.f.Has(id) {
		_ = g.f.Finish(id)
	}
	delete(g.st.Profiles, id)
	g.owned[o]--
	if g.owned[o] > 0 {
		return
	}
	delete(g.owned, o)
	_, _ = g.f.RemoveTenant(o)
	if g.m != nil {
		_, _ = g.m.Leave(o, g.marketQuantum())
	}
}

// marketQuantum is the quantum a tenant joins or leaves the market at: the
// last one decided, or the market's own last where a round traded and then
// failed (the market refuses an earlier quantum, and a tenant left out of
// it has no holdings to trade).
func (g *GandivaFair) marketQuantum() int {
	q := g.st.Quantum
	if last, ran := g.m.Last(); ran && last > q {
		q = last
	}
	return q
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Profile records a measurement of job id on type t: seconds per unit of
// work of its whole gang (Algorithm 2's job.perf[g], the mini-batch time),
// averaged into its profile as a run of its own would be. It returns an
// *gpufair.InputError, and changes nothing, for an unknown job
// (gpufair.ErrUnknownID), a type not among the scheduler's
// (gpufair.ErrUnknownType), a type the job cannot run on, or a time that is
// NaN, zero, negative, infinite or so small that its rate overflows
// (gpufair.ErrValue).
func (g *GandivaFair) Profile(id alloc.JobID, t topology.GPUType, seconds float64) error {
	p, ok := g.st.Profiles[id]
	if !ok {
		return gpufair.Invalid("Profile.Job", string(id), gpufair.ErrUnknownID, "no such job in the system")
	}
	k, ok := g.typeIx[t]
	if !ok {
		return gpufair.Invalid("Profile.Type", string(id), gpufair.ErrUnknownType, "%q", t)
	}
	if j, _ := g.l.Job(id); !(j.Rates[k] > 0) {
		return gpufair.Invalid("Profile.Type", string(id), gpufair.ErrValue, "the job cannot run on %q", t)
	}
	// 1e-320 s gave a rate of +Inf, which no snapshot can hold.
	if !(seconds > 0) || math.IsInf(seconds, 0) || math.IsInf(1/seconds, 0) {
		return gpufair.Invalid("Profile.Seconds", string(id), gpufair.ErrValue, "%v seconds per unit of work", seconds)
	}
	g.sample(p, k, 1/seconds)
	return nil
}

func (g *GandivaFair) sample(p *jobProfile, k int, rate float64) {
	if p.Rate[k] == 0 {
		p.Rate[k] = rate
		return
	}
	p.Rate[k] += g.set.Decay * (rate - p.Rate[k])
}

// Rates returns tenant id's profiled rates: on each type, in the ledger's
// order, the mean of its jobs' profiled rates there, 0 where none ran.
func (g *GandivaFair) Rates(id alloc.TenantID) []float64 {
	return g.rates(id, nil)
}

func (g *GandivaFair) rates(id alloc.TenantID, jobs []alloc.JobID) []float64 {
	if jobs == nil {
		for _, j := range g.l.Jobs() {
			if owner(j.Job) == id {
				jobs = append(jobs, j.ID)
			}
		}
	}
	sum, mean := make([]float64, len(g.count)), make([]float64, len(g.count))
	n := make([]float64, len(g.count))
	for _, id := range jobs {
		if p := g.st.Profiles[id]; p != nil {
			for k, r := range p.Rate {
				if r > 0 {
					sum[k] += r
					n[k]++
					mean[k] += (r - mean[k]) / n[k]
				}
			}
		}
	}
	for k := range sum {
		if n[k] > 0 {
			sum[k] /= n[k]
		}
		// A sum of two rates of 1e308 overflowed to +Inf. The running mean
		// does not, but rounds otherwise, and trades turn on the last
		// digits: it stands in only there.
		if math.IsInf(sum[k], 1) {
			sum[k] = mean[k]
		}
	}
	return sum
}

// profileTime is the least time, in seconds, a job must have run on one
// type for its progress to count as a sample.
const profileTime = 1e-6

// profile takes a sample from every job that reported progress after
// running on one type only since its last sample.
func (g *GandivaFair) profile() {
	for _, j := range g.l.Jobs() {
		p := g.st.Profiles[j.ID]
		dw := j.Done - p.Done
		if !(dw > 0) {
			continue
		}
		ran, on := 0, -1
		for k, r := range j.Received {
			if r-p.Received[k] > profileTime {
				ran, on = ran+1, k
			}
		}
		if ran == 1 {
			// A rate beyond float64 (1e308 units of work in a millisecond) is
			// no sample: +Inf stayed in the profile and failed every snapshot.
			if r := dw / (j.Received[on] - p.Received[on]); !math.IsInf(r, 0) {
				g.sample(p, on, r)
			}
		}
		if ran > 0 {
			p.Done = j.Done
			copy(p.Received, j.Received)
		}
	}
}

// Decide runs one quantum: profiling, admission, trading, migration, load
// balancing and split stride (see GandivaFair).
func (g *GandivaFair) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := g.l.Begin(now); err != nil {
		return nil, err
	}
	q := g.st.Quantum + 1
	healthy := g.healthySlots()
	g.f.healthy = make([]int, len(healthy))
	for s, slots := range healthy {
		g.f.healthy[s] = len(slots)
	}
	g.profile()
	g.admit()
	rates := make(map[alloc.TenantID][]float64, len(g.f.users))
	for _, u := range g.f.users {
		rates[u.ID] = g.rates(u.ID, u.jobs)
	}
	g.failover(rates)
	partial := false
	if g.m != nil {
		if g.set.Budget > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, g.set.Budget)
			defer cancel()
		}
		partial = g.trade(ctx, q, rates)
	}
	mv := g.newMover(rates)
	for mv.migrate(false) { // the trades' own migrations
	}
	for range g.set.Migrations {
		if !mv.migrate(true) {
			break
		}
	}
	g.rebalance()
	d, err := g.plan(q, now, healthy)
	if err == nil {
		d.Partial = partial
		err = g.l.Commit(d)
	}
	if err != nil {
		g.l.Abort()
		return nil, err
	}
	g.st.Quantum = q
	return d, nil
}

// share returns tenant u's entitlement on type k in GPUs: its tickets'
// part of the type, over every tenant's tickets there.
func (g *GandivaFair) shares() [][]float64 {
	users := g.f.users
	T := make([]float64, len(g.count))
	for _, u := range users {
		for k, t := range g.l.Types() {
			T[k] += g.f.tickets(u, t)
		}
	}
	out := make([][]float64, len(users))
	for i, u := range users {
		out[i] = make([]float64, len(g.count))
		for k, t := range g.l.Types() {
			out[i][k] = g.count[k] * g.f.tickets(u, t) / T[k]
		}
	}
	return out
}

// admit places waiting jobs, least served tenant first (Algorithm 2).
func (g *GandivaFair) admit() {
	if len(g.f.jobs) == len(g.l.Jobs()) {
		return
	}
	types := g.l.Types()
	queue := map[alloc.TenantID][]*round.Job{}
	for _, j := range g.l.Jobs() {
		if !g.f.Has(j.ID) {
			o := owner(j.Job)
			queue[o] = append(queue[o], j)
		}
	}
	used := make([]int, len(types)) // admitted GPUs per type
	if g.set.MaxPerGPU > 0 {
		for _, j := range g.f.jobs {
			used[g.typeIx[j.Type]] += j.Gang
		}
	}
	shares := g.shares()
	idx := map[alloc.TenantID]int{}
	for i, u := range g.f.users {
		idx[u.ID] = i
	}
	for len(queue) > 0 {
		// Least served: fewest GPUs demanded per ticket.
		var who alloc.TenantID
		best := math.Inf(1)
		for _, o := range sortedKeys(queue) {
			u := g.f.users[idx[o]]
			d := 0
			for _, n := range u.demand {
				d += n
			}
			if v := float64(d) / u.Weight; v < best {
				who, best = o, v
			}
		}
		j := queue[who][0]
		u := g.f.users[idx[who]]
		k := g.chooseType(u, j, shares[idx[who]])
		if k < 0 || (g.set.MaxPerGPU > 0 && used[k]+j.Gang > g.set.MaxPerGPU*int(g.count[k])) {
			delete(queue, who) // its queue waits for the next quantum
			continue
		}
		// Cannot fail: the tenant exists and the type fits the gang.
		_, _ = g.f.Submit(Submission{ID: j.ID, Owner: who, Gang: j.Gang, Type: types[k]})
		used[k] += j.Gang
		if queue[who] = queue[who][1:]; len(queue[who]) == 0 {
			delete(queue, who)
		}
	}
}

// chooseType returns the type for tenant u's job j (Algorithm 2, lines 4
// to 7), or -1 if it fits none. share is u's entitlement on each type.
func (g *GandivaFair) chooseType(u *fairUser, j *round.Job, share []float64) int {
	rate := g.rates(u.ID, u.jobs)
	explore, best := -1, -1
	var bestV float64
	allFull := true
	for _, t := range g.rank {
		k := g.typeIx[t]
		if !(j.Rates[k] > 0) || !g.f.fits(t, j.Gang) {
			continue
		}
		full := float64(u.demand[t]) >= share[k]
		if rate[k] == 0 {
			if !full && explore < 0 {
				explore = k
			}
			continue
		}
		allFull = allFull && full
		v := rate[k] * g.f.tickets(u, t) / float64(u.demand[t]+j.Gang)
		if best < 0 || v > bestV {
			best, bestV = k, v
		}
	}
	if explore >= 0 && (best < 0 || allFull) {
		return explore
	}
	if best >= 0 {
		return best
	}
	// No profile and every type filled: the least crowded one.
	for _, t := range g.rank {
		k := g.typeIx[t]
		if !(j.Rates[k] > 0) || !g.f.fits(t, j.Gang) {
			continue
		}
		v := g.f.tickets(u, t) / float64(u.demand[t]+j.Gang)
		if best < 0 || v > bestV {
			best, bestV = k, v
		}
	}
	return best
}

// ticketTol is the change in a tenant's tickets on a type, relative to all
// tickets, below which they are left as they are: a tenant joining scales
// every holding and the total tickets by the same factor, which leaves the
// tickets unchanged up to rounding, and retuning every job's stride for
// rounding would cost a pass over all jobs.
const ticketTol = 1e-12

// trade updates the bids from the profiles, trades, and turns holdings
// into tickets. It reports whether the budget cut trading short. Each
// tenant bids with the GPUs its jobs in the system can use at once, the sum
// of their gangs (trade.Bidder.Demand): a tenant of few jobs does not sell
// its fast GPUs for slow ones it cannot use.
func (g *GandivaFair) trade(ctx context.Context, q int, profiled map[alloc.TenantID][]float64) (partial bool) {
	mt := g.m.Types()
	demand := make(map[alloc.TenantID]float64, len(g.f.users))
	for _, j := range g.l.Jobs() {
		demand[owner(j.Job)] += float64(j.Gang)
	}
	for _, u := range g.f.users {
		// A tenant in Fair has a job in the ledger, so a positive demand,
		// and is in the market: SetDemand cannot fail.
		_, _ = g.m.SetDemand(u.ID, demand[u.ID], q)
	}
	for _, u := range g.f.users {
		rate := profiled[u.ID]
		bid, _ := g.m.Rates(u.ID)
		var rates map[topology.GPUType]float64
		changed, drift := false, false
		for i, t := range mt {
			k := g.typeIx[t]
			old := bid[i]
			known := old > 0
			if rate[k] > 0 && (!known || math.Abs(rate[k]-old) > g.set.Drift*old) {
				changed = true
			}
		}
		if !changed {
			continue
		}
		rates = map[topology.GPUType]float64{}
		for i, t := range mt {
			k := g.typeIx[t]
			old := bid[i]
			known := old > 0
			switch {
			case rate[k] == 0 && known:
				rates[t] = old
			case rate[k] == 0:
			case !known:
				rates[t], changed = rate[k], true
			case math.Abs(rate[k]-old) > g.set.Drift*old:
				rates[t], changed, drift = rate[k], true, true
			default:
				rates[t] = old
			}
		}
		if !changed {
			continue
		}
		// Profiled rates are positive and finite, but the market refuses a
		// spread beyond alloc.MaxRateSpread or a rate whose throughput
		// overflows: such a profile is no bid, and the tenant's trades stand
		// on its earlier rates.
		if g.m.SetRates(u.ID, rates) != nil {
			continue
		}
		if drift {
			_, _ = g.m.UndoFor(u.ID, q) // u is in the market: SetRates found it
		}
	}
	_, err := g.m.Run(ctx, q)
	partial = err != nil
	var W float64
	for _, u := range g.f.users {
		W += u.Weight
	}
	for _, u := range g.f.users {
		h, _ := g.m.Holdings(u.ID)
		same := len(u.typeTickets) == len(mt)
		for i, t := range mt {
			w, ok := u.typeTickets[t]
			same = same && ok && math.Abs(w-h[i]/g.count[g.typeIx[t]]*W) <= ticketTol*W
		}
		if same {
			continue
		}
		tk := make(map[topology.GPUType]float64, len(mt))
		for i, t := range mt {
			tk[t] = h[i] / g.count[g.typeIx[t]] * W
		}
		_ = g.f.SetTypeTickets(u.ID, tk) // the tenant and types exist
	}
	return partial
}

// typeShares is weight readjustment's outcome on one type, to price a
// tenant's share there at another demand without solving it again.
type typeShares struct {
	pool    float64 // tickets of the uncapped tenants
	gpus    float64 // GPUs left to them: the type's, less the capped tenants' shares
	tickets float64 // tickets of every tenant with demand there
	count   float64 // the type's GPUs
}

// at returns the share, in GPUs, of a tenant with tickets w and current
// share cur demanding d GPUs of the type; pooled says whether readjustment
// leaves it uncapped there, present whether it has demand there. The
// capped tenants keep their shares and the tenant shares the rest with the
// uncapped ones, its own tickets counted in (left out, a capped tenant's
// next job was priced above what readjustment gives it, and a small
// tenant's jobs migrated between two types every quantum); and it gets at
// least its tickets' part of the type, which readjustment always leaves
// it, bonus GPUs that capped tenants use included (with every tenant
// there capped, a newcomer was priced at the GPUs none of them used: none
// where they used them all).
func (s typeShares) at(w, cur, d float64, pooled, present bool) float64 {
	T, G := s.pool, s.gpus // the pool with the tenant in it
	if !pooled {
		T, G = T+w, G+cur
	}
	all := s.tickets
	if !present {
		all += w
	}
	if !(w > 0) {
		return 0 // no tickets there: its jobs run only on others' leftovers
	}
	return min(d, max(w/T*G, w/all*s.count))
}

// estimate returns the tenant's rates with a guess where it has none: a
// type ranked newer than every profiled one runs at the best profiled
// rate, an older one at half the worst (older GPUs are slower; the guess
// only decides whether to profile a job there, its run then measures it).
func (g *GandivaFair) estimate(rate []float64) []float64 {
	out := slices.Clone(rate)
	lo, hi := math.Inf(1), 0.0
	newest, oldest := len(g.rank), -1
	for r, t := range g.rank {
		if x := rate[g.typeIx[t]]; x > 0 {
			lo, hi = min(lo, x), max(hi, x)
			newest, oldest = min(newest, r), max(oldest, r)
		}
	}
	if oldest < 0 {
		return out
	}
	for r, t := range g.rank {
		k := g.typeIx[t]
		switch {
		case out[k] > 0:
		case r < newest:
			out[k] = hi
		case r > oldest:
			out[k] = lo / 2
		}
	}
	return out
}

// starved is the share of a GPU per GPU demanded below which a tenant's
// jobs on a type count as not running: it sold that type's share.
const starved = 1e-6

// mover chooses migrations across types. It keeps, per tenant (in Fair's
// tenant order), what the choice reads, and updates it after each move.
type mover struct {
	g     *GandivaFair
	ts    []typeShares
	views []tenantView
	index map[alloc.TenantID]int
	types []topology.GPUType
	// moved holds the jobs moved so far: a job moves at most once per
	// decision, so the moves end (two starved tenants' jobs could
	// otherwise chase each other's share across types forever).
	moved map[alloc.JobID]bool
}

// tenantView is one tenant as the mover sees it, by type index.
type tenantView struct {
	u        *fairUser
	measured []float64  // profiled rates
	est      []float64  // with guesses (estimate)
	share    []float64  // readjusted share in GPUs
	pooled   []bool     // whether readjustment leaves it uncapped
	demand   []float64  // GPUs of its jobs
	tickets  []float64  // its tickets
	latest   []*fairJob // its latest job (by ID), nil if none
}

func (g *GandivaFair) newMover(measured map[alloc.TenantID][]float64) *mover {
	m := &mover{g: g, ts: make([]typeShares, len(g.count)), views: make([]tenantView, len(g.f.users)),
		index: make(map[alloc.TenantID]int, len(g.f.users)), types: g.l.Types(), moved: map[alloc.JobID]bool{}}
	for i, u := range g.f.users {
		m.index[u.ID] = i
		m.views[i] = tenantView{u: u, measured: measured[u.ID], est: g.estimate(measured[u.ID]), share: make([]float64, len(g.count)), pooled: make([]bool, len(g.count))}
		m.view(i)
	}
	for k := range g.count {
		m.readjust(k)
	}
	return m
}

// view refreshes tenant i's demand, tickets and latest jobs.
func (m *mover) view(i int) {
	v := &m.views[i]
	n := len(m.types)
	v.demand, v.tickets, v.latest = make([]float64, n), make([]float64, n), make([]*fairJob, n)
	left := 0
	for k, t := range m.types {
		v.demand[k] = float64(v.u.demand[t])
		v.tickets[k] = m.g.f.tickets(v.u, t)
		if v.demand[k] > 0 {
			left++
		}
	}
	for x := len(v.u.jobs) - 1; x >= 0 && left > 0; x-- {
		j := m.g.f.jobs[v.u.jobs[x]]
		if k := m.g.typeIx[j.Type]; v.latest[k] == nil {
			v.latest[k] = j
			left--
		}
	}
}

// readjust recomputes type k's weight readjustment.
func (m *mover) readjust(k int) {
	for i := range m.views {
		m.views[i].share[k], m.views[i].pooled[k] = 0, false
	}
	acc := m.g.f.accounts(m.types[k], "", 0)
	for _, a := range acc {
		v := &m.views[m.index[a.Tenant]]
		v.share[k], v.pooled[k] = a.Share, pooled(a)
	}
	m.ts[k] = sharesOf(acc, m.g.count[k])
}

// pooled reports whether weight readjustment leaves a tenant uncapped.
func pooled(a Account) bool { return a.Share < float64(a.Demand)-loadTol && a.Share > 0 }

// sharesOf sums up the accounts acc of a type of count GPUs.
func sharesOf(acc []Account, count float64) typeShares {
	s := typeShares{count: count}
	capped := 0.0
	for _, a := range acc {
		s.tickets += a.WeightPerGPU * float64(a.Demand)
		if pooled(a) {
			s.pool += a.Effective
		} else {
			capped += a.Share
		}
	}
	s.gpus = max(count-capped, 0)
	return s
}

// migrate moves one job across types and reports whether it moved one:
// first a job whose tenant's share of its type is gone (it sold it), to
// the type where it runs fastest; these are the trades' own migrations
// ("jobs for the seller and buyer are migrated to the traded GPUs",
// section 3.5). Then, if gain is set, the job whose move raises its
// tenant's throughput most, by at least GandivaSettings.Gain of what the
// job runs now (section 3.5's migration, one per quantum by default).
func (m *mover) migrate(gain bool) bool {
	g := m.g
	bestI, bestSrc, bestK, bestTier, bestScore := -1, -1, -1, 0, 0.0
	for i := range m.views {
		v := &m.views[i]
		for src := range m.types {
			d := v.demand[src]
			if d == 0 || v.measured[src] == 0 || m.moved[v.latest[src].ID] { // nothing there, not profiled yet, or moved already
				continue
			}
			gang := float64(v.latest[src].Gang)
			srcNow, srcAfter := v.share[src], m.ts[src].at(v.tickets[src], v.share[src], d-gang, v.pooled[src], true)
			before := v.est[src] * srcNow / d * gang
			var lj *round.Job
			for dst := range m.types {
				if dst == src || v.est[dst] == 0 || !g.f.fits(m.types[dst], v.latest[src].Gang) {
					continue
				}
				dd := v.demand[dst]
				dstAfter := m.ts[dst].at(v.tickets[dst], v.share[dst], dd+gang, v.pooled[dst], dd > 0)
				total := v.est[dst]*(dstAfter-v.share[dst]) - v.est[src]*(srcNow-srcAfter)
				after := v.est[dst] * dstAfter / (dd + gang) * gang
				tier, score := 0, 0.0
				switch {
				case srcNow/d < starved && after > 0 && total > -loadTol:
					tier, score = 2, after // a job its tenant's share no longer runs
				case gain && total > g.set.Gain*before:
					tier, score = 1, total/before
				}
				if tier == 0 || tier < bestTier || (tier == bestTier && !(score > bestScore)) {
					continue
				}
				if lj == nil {
					lj, _ = g.l.Job(v.latest[src].ID)
				}
				if lj.Rates[dst] > 0 {
					bestI, bestSrc, bestK, bestTier, bestScore = i, src, dst, tier, score
				}
			}
		}
	}
	if bestK < 0 {
		return false
	}
	j := m.views[bestI].latest[bestSrc]
	m.moved[j.ID] = true
	_, _ = g.f.Move(j.ID, m.types[bestK]) // the job fits the type
	m.view(bestI)
	m.readjust(bestSrc)
	m.readjust(bestK)
	return true
}

// healthySlots returns the slots of each server that have not failed.
func (g *GandivaFair) healthySlots() [][]int {
	c := g.l.Cluster()
	healthy := make([][]int, len(c.Servers))
	for s, sv := range c.Servers {
		for i := range sv.GPUs {
			if !g.l.Failed(topology.GPU{Server: s, Slot: i}) {
				healthy[s] = append(healthy[s], i)
			}
		}
	}
	return healthy
}

// failover re-places each admitted job that failed GPUs keep from running
// where it is: on servers of its type that can run it, or else on the
// type, of those that can, where its tenant's profiled rate is highest
// (newest first where none is profiled). Gandiva_fair has no failures; a
// job left on GPUs it can never get would wait until they were repaired,
// while GPUs it could use idled. A job that fits nowhere waits.
func (g *GandivaFair) failover(rates map[alloc.TenantID][]float64) {
	if len(g.l.FailedGPUs()) == 0 {
		return // every job can run where it is: no pass over them each quantum
	}
	for _, id := range sortedKeys(g.f.jobs) {
		j := g.f.jobs[id]
		if g.f.runnable(j.parts) {
			continue
		}
		to := j.Type
		if !g.f.fits(to, j.Gang) {
			lj, _ := g.l.Job(id)
			best := -1.0
			to = ""
			for _, t := range g.rank {
				if k := g.typeIx[t]; lj.Rates[k] > 0 && g.f.fits(t, j.Gang) && rates[j.Owner][k] > best {
					to, best = t, rates[j.Owner][k]
				}
			}
		}
		if to != "" {
			_, _ = g.f.Move(id, to) // the job fits the type
		}
	}
}

// rebalance evens out the ticket load of each type's servers.
func (g *GandivaFair) rebalance() {
	var tot float64
	for _, u := range g.f.users {
		for _, t := range g.l.Types() {
			if u.demand[t] > 0 {
				tot += g.f.tickets(u, t)
			}
		}
	}
	var gpus float64
	for _, n := range g.count {
		gpus += n
	}
	if tot == 0 {
		return
	}
	g.f.Rebalance(g.set.Balance * tot / gpus)
}

// plan runs split stride on the healthy slots of each server and places
// the jobs it picks on slots: those they held on the same server if they
// can, free ones otherwise.
func (g *GandivaFair) plan(q int, now float64, healthy [][]int) (*round.Decision, error) {
	c := g.l.Cluster()
	p, err := g.f.split.ScheduleFree(q, g.f.healthy)
	if err != nil {
		return nil, err
	}
	taken := make([][]bool, len(c.Servers))
	for s, sv := range c.Servers {
		taken[s] = make([]bool, sv.GPUs)
	}
	gpus := make([][]topology.GPU, len(p.Runs))
	// Sticky first: a job keeps its slots on a server it stays on.
	for r, run := range p.Runs {
		held, ok := g.l.Holding(run.Job)
		if !ok {
			continue
		}
		want := map[int]int{}
		for _, x := range run.GPUs {
			want[x.Server]++
		}
		have := map[int]int{}
		for _, x := range held.GPUs {
			have[x.Server]++
		}
		keep := len(want) == len(have)
		for s, n := range want {
			keep = keep && have[s] == n
		}
		for _, x := range held.GPUs {
			keep = keep && !taken[x.Server][x.Slot] && !g.l.Failed(x)
		}
		if !keep {
			continue
		}
		for _, x := range held.GPUs {
			taken[x.Server][x.Slot] = true
		}
		gpus[r] = slices.Clone(held.GPUs)
	}
	next := make([]int, len(c.Servers))
	d := &round.Decision{Start: now, End: round.LeaseEnd(now, g.set.Quantum)}
	for r, run := range p.Runs {
		if gpus[r] == nil {
			for _, x := range run.GPUs {
				s := x.Server
				for taken[s][healthy[s][next[s]]] {
					next[s]++
				}
				slot := healthy[s][next[s]]
				taken[s][slot] = true
				gpus[r] = append(gpus[r], topology.GPU{Server: s, Slot: slot})
			}
		}
		t, _ := g.f.Type(run.Job)
		d.Placements = append(d.Placements, round.Placement{Jobs: []alloc.JobID{run.Job}, Type: t, GPUs: gpus[r]})
	}
	return d, nil
}

// gandivaJSON is the mechanism's part of a snapshot.
type gandivaJSON struct {
	State  gandivaState    `json:"state"`
	Fair   json.RawMessage `json:"fair"`
	Market json.RawMessage `json:"market,omitempty"`
}

// Snapshot returns the scheduler's whole state as JSON: the ledger, the
// tenants and jobs with their servers and passes, the profiles and the
// market.
func (g *GandivaFair) Snapshot() ([]byte, error) {
	v := gandivaJSON{State: g.st}
	var err error
	if v.Fair, err = g.f.MarshalJSON(); err != nil {
		return nil, err
	}
	if g.m != nil {
		if v.Market, err = g.m.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return round.Seal(g.name, g.l, &v)
}

// Restore replaces the state with a snapshot taken by a GandivaFair
// scheduler of the same settings on the same cluster and types. It returns
// an error wrapping gpufair.ErrSnapshot, and changes nothing, otherwise.
func (g *GandivaFair) Restore(snapshot []byte) error {
	var v gandivaJSON
	l, err := round.Open(snapshot, g.name, g.l, &v)
	if err != nil {
		return err
	}
	n := &GandivaFair{set: g.set, name: g.name, l: l, rank: g.rank, count: g.count, typeIx: g.typeIx}
	if err := n.reset(); err != nil {
		return err
	}
	if err := n.f.UnmarshalJSON(v.Fair); err != nil {
		return err
	}
	if q, ran := n.f.lastQuantum(); ran && q > v.State.Quantum {
		return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "stride scheduler ran quantum %d, after the scheduler's %d", q, v.State.Quantum)
	}
	if n.m != nil {
		if err := n.m.UnmarshalJSON(v.Market); err != nil {
			return err
		}
		// Every tenant bids in the market, and only tenants (arrive).
		tenants := make([]alloc.TenantID, len(n.f.users))
		for i, u := range n.f.users {
			tenants[i] = u.ID
		}
		if !slices.Equal(n.m.Bidders(), tenants) {
			return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "market bidders %v for tenants %v", n.m.Bidders(), tenants)
		}
		if q, ran := n.m.Last(); ran && q > v.State.Quantum {
			return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "market traded at quantum %d, after the scheduler's %d", q, v.State.Quantum)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(n.f.jobs)) {
		fj := n.f.jobs[id]
		j, ok := l.Job(id)
		k, known := n.typeIx[fj.Type]
		if !ok || !known || fj.Gang != j.Gang || fj.Owner != owner(j.Job) || !(j.Rates[k] > 0) {
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "a scheduled job that is not the ledger's, or on a type it cannot run on")
		}
	}
	for _, j := range l.Jobs() {
		p := v.State.Profiles[j.ID]
		if p == nil || len(p.Rate) != len(g.count) || len(p.Received) != len(g.count) {
			return gpufair.Invalid("Snapshot", string(j.ID), gpufair.ErrSnapshot, "no profile of the right shape")
		}
		if !n.f.Has(j.ID) {
			if u, _ := n.f.user(owner(j.Job)); u == nil {
				return gpufair.Invalid("Snapshot", string(j.ID), gpufair.ErrSnapshot, "a queued job of no tenant")
			}
		}
		n.owned[owner(j.Job)]++
	}
	if len(v.State.Profiles) != len(l.Jobs()) || len(n.f.jobs) > len(l.Jobs()) {
		return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "profiles or jobs of jobs not in the system")
	}
	n.st = v.State
	*g = *n
	return nil
}

var _ round.Scheduler = (*GandivaFair)(nil)
