package auction

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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
// leases, f = 0, no starvation guard), and gangs as fast spread over
// servers as on one.
type ThemisSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound. The arbiter runs once per decision, so a GPU lease
	// that ends within a round is released at the next decision: keep
	// Round no longer than Arbiter.Lease.
	Round float64
	// Arbiter configures the auction arbiter.
	Arbiter ArbiterSettings
	// Spread, if not nil, returns job id's rates over the scheduler's
	// types when its gang spans servers (Gavel's unconsolidated
	// throughputs); nil, or a nil result, means the job's Rates.
	Spread func(id alloc.JobID) []float64
}

// Themis is Themis' multi-round auction arbiter (NSDI'20, section 3.3.2;
// Arbiter) on the round contract: each job is an app whose agent
// (JobAgent) bids, for the GPUs offered, the finish-time fairness it
// expects with them. Winners keep c_i of their rows; hidden payments and
// leftovers go, in the same round, to apps drawn at random, as the arbiter
// does.
//
// Jobs are gangs: a job runs in a round only if it holds at least Gang GPUs
// of one type, on Gang of them (the type and placement of highest rate,
// one server if it can); GPUs it holds beyond that, or that cannot form a
// gang (a leftover of the wrong size or type), stay idle for their lease,
// which Themis' elastic apps would not waste.
//
// Events reach the arbiter at their own times: arrivals join, departures
// leave, failures and repairs take GPUs out of service and back; Decide
// runs a round of the arbiter (Advance) at now. Its bookkeeping of jobs,
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
	apps  map[alloc.JobID]bool
	held  map[string][]topology.GPU // scratch: slots per app
}

// NewThemis returns Themis' arbiter on cluster c, with job rates given over
// types (each a type of c), settings s (nil: the zero ThemisSettings) and
// the arbiter's random draws from src. It returns the errors of
// round.NewLedger and NewArbiter, and an *gpufair.InputError for a round
// that is not positive and finite. It panics if src is nil.
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
	return &Themis{arb: arb, set: set, l: l, epoch: time.Unix(0, 0).UTC(), capa: capa, apps: map[alloc.JobID]bool{}, held: map[string][]topology.GPU{}}, nil
}

// Name returns "themis".
func (t *Themis) Name() string { return "themis" }

// Ledger returns the scheduler's ledger, to read only.
func (t *Themis) Ledger() *round.Ledger { return t.l }

// Arbiter returns the arbiter, to read only (its leases and cached rho).
func (t *Themis) Arbiter() *Arbiter { return t.arb }

// at returns the arbiter's time for seconds on the caller's clock.
func (t *Themis) at(sec float64) time.Time {
	return t.epoch.Add(time.Duration(sec * float64(time.Second)))
}

// Apply checks and applies events (round.Ledger.Apply), and passes them to
// the arbiter at their times: arrivals join with a JobAgent, departures
// leave, failures and repairs take GPUs out of service and back.
func (t *Themis) Apply(events ...round.Event) error {
	if err := t.l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		at, id := t.at(e.Time), e.Job.ID
		var err error
		switch e.Kind {
		case round.Arrived:
			j, ok := t.l.Job(id)
			if !ok {
				continue // departed in the same call
			}
			ag := &JobAgent{Job: j, Ledger: t.l, Capacity: t.capa, Epoch: t.epoch}
			if t.set.Spread != nil {
				ag.Spread = t.set.Spread(id)
			}
			t.apps[id] = true
			err = t.arb.Join(at, string(id), ag)
		case round.Departed:
			if t.apps[id] {
				delete(t.apps, id)
				err = t.arb.Leave(at, string(id))
			}
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

// Decide runs an arbiter round at now and places every job that holds a
// gang's worth of GPUs of one type. An error of the arbiter leaves the
// ledger as it was, but not the arbiter.
func (t *Themis) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.l.Begin(now); err != nil {
		return nil, err
	}
	if _, err := t.arb.Advance(ctx, t.at(now)); err != nil {
		t.l.Abort()
		return nil, err
	}
	clear(t.held)
	for _, ls := range t.arb.Leases() {
		t.held[ls.App] = append(t.held[ls.App], ls.GPU)
	}
	d := &round.Decision{Start: now, End: now + t.set.Round}
	types := t.l.Types()
	for _, j := range t.l.Jobs() {
		var spread []float64
		if t.set.Spread != nil {
			spread = t.set.Spread(j.ID)
		}
		if g, k := t.gang(j, spread, t.held[string(j.ID)]); g != nil {
			d.Placements = append(d.Placements, round.Placement{Jobs: []alloc.JobID{j.ID}, Type: types[k], GPUs: g})
		}
	}
	if err := t.l.Commit(d); err != nil {
		return nil, err
	}
	return d, nil
}

// gang picks the job's GPUs for the round among the slots it holds: the
// type and placement of highest rate, a single server when one holds a
// gang, or else the servers holding most; nil when no type has a gang.
func (t *Themis) gang(j *round.Job, spread []float64, held []topology.GPU) ([]topology.GPU, int) {
	var best []topology.GPU
	bestK, bestRate := -1, 0.0
	for k := range t.l.Types() {
		var slots []topology.GPU
		perServer := map[int]int{}
		for _, g := range held {
			if t.l.TypeOf(g.Server) == k {
				slots = append(slots, g)
				perServer[g.Server]++
			}
		}
		if len(slots) < j.Gang {
			continue
		}
		// Servers holding most first, then by index: the first Gang slots
		// lie on the fewest servers.
		slices.SortFunc(slots, func(a, b topology.GPU) int {
			if c := perServer[b.Server] - perServer[a.Server]; c != 0 {
				return c
			}
			if c := a.Server - b.Server; c != 0 {
				return c
			}
			return a.Slot - b.Slot
		})
		g := slots[:j.Gang]
		if r := rateOf(j, spread, k, topology.ServersUsed(g) > 1); r > bestRate {
			best, bestK, bestRate = slices.Clone(g), k, r
		}
	}
	return best, bestK
}

// rateOf returns job j's rate on type k, spread over servers or not.
func rateOf(j *round.Job, spread []float64, k int, spreadOut bool) float64 {
	if spreadOut && spread != nil {
		return spread[k]
	}
	return j.Rates[k]
}

// Snapshot returns an error wrapping gpufair.ErrSnapshot: the arbiter's
// state (leases with their hidden payments, each app's cached bid table
// and rho, the random source) is not serialised.
func (t *Themis) Snapshot() ([]byte, error) {
	return nil, badInput("Snapshot", "", gpufair.ErrSnapshot, "Themis' arbiter state (leases, hidden payments, cached bid tables, random draws) cannot be snapshotted")
}

// Restore returns an error wrapping gpufair.ErrSnapshot and changes
// nothing: see Snapshot.
func (t *Themis) Restore([]byte) error {
	return badInput("Snapshot", "", gpufair.ErrSnapshot, "Themis' arbiter state cannot be restored")
}

var _ round.Scheduler = (*Themis)(nil)

// JobAgent is the Agent of one gang job: it bids, for the GPUs offered, the
// finish-time fairness it expects with them,
//
//	rho = (elapsed + remaining/rate) / T_id,
//
// where rate is the job's rate on the best placement its GPUs allow (Rates
// on one server, Spread across servers; a type counts only where the GPUs
// held there form a gang), remaining its work left (Work − Done, or
// unknownWork if its work is unknown), and T_id its work over its rate on a
// 1/n share of every type of Capacity (alloc.IsolatedRate), n being the
// jobs in the system. Bids offer, per GPU type the job runs on, the
// best-fitting single server that completes its gang and the spread
// alternative over the servers with the most free GPUs, keeping the rows
// that improve on the job's current rho.
type JobAgent struct {
	// Job is the job as the ledger knows it, read only.
	Job *round.Job
	// Spread is its rates when its gang spans servers; nil means Rates.
	Spread []float64
	// Ledger holds the cluster, its types and the jobs in the system.
	Ledger *round.Ledger
	// Capacity is every GPU of each of the ledger's types.
	Capacity alloc.Capacity
	// Epoch is the arbiter's time of second 0 of the caller's clock.
	Epoch time.Time
}

// rho returns the job's rho at now if it kept the GPUs counts[s] (per
// server) until it finishes; +Inf if they hold no gang.
func (a *JobAgent) rho(now time.Time, counts []int) float64 {
	j := a.Job
	best := 0.0
	for k := range a.Capacity.Count {
		total, one := 0, false
		for sv, n := range counts {
			if a.Ledger.TypeOf(sv) == k && n > 0 {
				total += n
				one = one || n >= j.Gang
			}
		}
		if total >= j.Gang {
			best = math.Max(best, rateOf(j, a.Spread, k, !one))
		}
	}
	if best == 0 {
		return math.Inf(1)
	}
	work, left := j.Work, j.Remaining()
	if math.IsInf(left, 1) {
		work, left = j.Done+unknownWork, unknownWork
	}
	elapsed := now.Sub(a.Epoch).Seconds() - j.Arrival
	iso := work / alloc.IsolatedRate(j.Rates, j.Gang, a.Capacity, float64(len(a.Ledger.Jobs())))
	return (elapsed + left/best) / iso
}

// Wants reports whether the job runs on server s's type and holds no gang
// yet: a GPU of that type counts towards one.
func (a *JobAgent) Wants(held []int, s int) bool {
	k := a.Ledger.TypeOf(s)
	if k < 0 || !(a.Job.Rates[k] > 0) {
		return false
	}
	per := make([]int, len(a.Capacity.Count))
	for sv, n := range held {
		if t := a.Ledger.TypeOf(sv); t >= 0 {
			per[t] += n
		}
	}
	return slices.Max(per) < a.Job.Gang
}

// Rho is the agent's current rho with what it holds.
func (a *JobAgent) Rho(_ context.Context, now time.Time, _ topology.Cluster, held []int) (float64, error) {
	return a.rho(now, held), nil
}

// Bid offers, per type, the best-fitting server that completes the gang
// and the spread alternative, each priced at the rho it gives.
func (a *JobAgent) Bid(_ context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error) {
	if held == nil {
		held = make([]int, len(offer.Free))
	}
	tab := ftf.BidTable{RhoNone: a.rho(now, held)}
	seen := map[string]bool{}
	add := func(row []int) {
		key := ""
		for _, n := range row {
			key += strconv.Itoa(n) + ","
		}
		if seen[key] {
			return
		}
		seen[key] = true
		sum := slices.Clone(held)
		for i, n := range row {
			sum[i] += n
		}
		if r := a.rho(now, sum); r < tab.RhoNone {
			tab.Rows = append(tab.Rows, ftf.Row{Counts: row, Rho: r})
		}
	}
	g := a.Job.Gang
	for k, count := range a.Capacity.Count {
		if a.Job.Rates[k] <= 0 || float64(g) > count {
			continue
		}
		fit, heldK := -1, 0
		var servers []int
		for sv := range offer.Free {
			if a.Ledger.TypeOf(sv) != k {
				continue
			}
			heldK += held[sv]
			servers = append(servers, sv)
			need := g - held[sv]
			if need > 0 && need <= offer.Free[sv] && (fit < 0 || offer.Free[sv]-need < offer.Free[fit]-(g-held[fit])) {
				fit = sv
			}
		}
		if fit >= 0 {
			row := make([]int, len(offer.Free))
			row[fit] = g - held[fit]
			add(row)
		}
		if need := g - heldK; need > 0 {
			slices.SortStableFunc(servers, func(x, y int) int { return offer.Free[y] - offer.Free[x] })
			row := make([]int, len(offer.Free))
			for _, sv := range servers {
				take := min(need, offer.Free[sv])
				row[sv], need = take, need-take
			}
			if need == 0 {
				add(row)
			}
		}
	}
	slices.SortStableFunc(tab.Rows, func(x, y ftf.Row) int {
		switch {
		case x.Rho < y.Rho:
			return -1
		case x.Rho > y.Rho:
			return 1
		}
		return 0
	})
	return tab, nil
}
