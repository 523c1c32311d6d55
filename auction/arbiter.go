package auction

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// DefaultLease is the lease of a zero ArbiterSettings: Themis' choice of ten
// minutes (section 6.4).
const DefaultLease = 10 * time.Minute

// ArbiterSettings configures an Arbiter. The zero value leases GPUs for
// DefaultLease and invites every app (f = 0).
type ArbiterSettings struct {
	// Lease is how long a won GPU stays with its app; 0 means DefaultLease.
	Lease time.Duration
	// Filter is Themis' fairness knob f in [0, 1]: each round invites the
	// ⌈(1-f)·n⌉ of the n apps with the worst current rho, at least one.
	Filter float64
	// Patience, when positive, bounds starvation: an app that held no GPU
	// after each of the last Patience rounds it bid in is overdue, and in
	// the next round it is invited to it takes its best row that fits the
	// offer before the auction runs (see Arbiter). 0 is Themis as
	// published, where an app can lose every round (TestArbiterStarvation).
	Patience int
}

// Arbiter is Themis' multi-round auction arbiter (section 3.3.2, Pseudocode
// 1 lines 13-23, section 4.2.2) over a cluster of servers.
//
// Apps join with an Agent and leave when they finish. Each GPU is leased to
// at most one app. Advance(now) is a resource-available event: leases ending
// by now come back, and if GPUs are free a round runs:
//
//  1. every app's current rho is refreshed (below) and the apps are sorted
//     worst first: rho descending, then never won or longest since it
//     last won an auction, then name;
//  2. the first ⌈(1-f)·n⌉ (at least one) are invited; each invited agent
//     bids on the offer of all free GPUs;
//  3. AuctionTables picks rows; winner i leases its row's GPUs for c_i·Lease;
//     the rest of its lease, (1-c_i)·Lease, is its hidden payment: when its
//     lease ends those GPUs pass to an app drawn at random for the payment;
//  4. GPUs in no winning row are leftovers: each server's go to one app drawn
//     at random, for a full lease.
//
// Leftovers and payments go to apps not invited this round (Pseudocode 1
// line 21), drawn uniformly with the caller's rand.Source. When every app
// was invited (f = 0, or a lone app) the paper has no recipient; then they
// go to the invited apps other than the payer, which keeps the arbiter
// work-conserving and stops a zero c_i from stranding GPUs.
//
// Starvation: Themis argues (§3.3.2) that a loser's rho grows until it
// wins, but an app holding nothing already has rho +Inf, and the auction
// maximises Π 1/rho over what it can give: two 1-GPU apps holding nothing
// beat one 2-GPU app holding nothing in every round, however long it waits.
// With Patience p > 0, an invited app that is overdue (it held no GPU after
// each of the last p rounds it bid in) is served before the auction,
// worst rho first: it leases the lowest-rho row of its bid that fits what
// is left of the offer, for a full lease and no payment (GrantKind Overdue);
// the auction then runs over the rest, with the rows that still fit. So an
// overdue app wins in the first round whose offer holds one of its rows,
// and, as long as apps holding nothing are invited first (rho +Inf), every
// app with work holds GPUs within a bounded number of rounds. The guard
// gives up the auction's guarantees (c_i, payments) for those grants only.
//
// Current rho, cached per app as the proof of Theorem 3.3 needs: an app
// holding nothing has rho +Inf (equation 1: it never finishes), so waiting
// apps come first. Otherwise the arbiter prices what the app holds from the
// table of the last auction it bid in, applied to the GPUs it gained since
// (free disposal: the lowest rho of a row it covers, or RhoNone), which
// covers both a won row and leftover grants. Only when the app has lost GPUs
// since that bid (a lease ended, a GPU failed) is its agent asked (Agent.Rho);
// if that fails the last cached rho stands.
//
// Time is a parameter and must not go backwards. Every draw comes from the
// rand.Source given to NewArbiter and apps are visited in name order, so a
// sequence of calls gives the same leases for the same seed.
//
// Cost of a round: one Bid per invited app plus AuctionTables (an exact
// search, exponential in the worst case but bounded tightly; a round with
// 20 apps holding nothing over 64 GPUs takes tens of milliseconds at any f,
// most of it in the bid tables: BenchmarkArbiterRound), and
// O(GPUs·log GPUs) bookkeeping. An Arbiter is not safe for concurrent use.
type Arbiter struct {
	c      topology.Cluster
	lease  time.Duration
	filter float64
	// patience is ArbiterSettings.Patience.
	patience int
	rng      *rand.Rand
	now      time.Time
	slots    [][]slot // [server][slot]
	apps     map[string]*appState
}

// slot is one GPU: free, failed, or leased to app over [start, end). A
// leased GPU may carry a payment: at end it passes to payTo until payUntil.
type slot struct {
	failed     bool
	app        string
	kind       GrantKind
	start, end time.Time
	payTo      string
	payUntil   time.Time
}

type appState struct {
	agent   Agent
	gpus    int       // GPUs held
	lastWon time.Time // when it last won a row; zero if never
	table   *ftf.BidTable
	base    []int // GPUs held per server when table was bid
	rho     float64
	// hungry counts the rounds in a row it bid in and held no GPU after.
	hungry int
}

// NewArbiter returns an arbiter of the cluster's GPUs, all free, with no
// apps. s may be nil. It reports an invalid cluster, a negative lease and
// a filter outside [0, 1] as *gpufair.InputError. It panics if src is nil.
func NewArbiter(c topology.Cluster, s *ArbiterSettings, src rand.Source) (*Arbiter, error) {
	if src == nil {
		panic("auction: NewArbiter needs a rand.Source")
	}
	if err := c.Validate(); err != nil {
		return nil, badInput("Cluster", "", gpufair.ErrValue, "%v", err)
	}
	var set ArbiterSettings
	if s != nil {
		set = *s
	}
	if set.Lease < 0 {
		return nil, badInput("ArbiterSettings.Lease", "", gpufair.ErrValue, "%v is negative", set.Lease)
	}
	if set.Lease == 0 {
		set.Lease = DefaultLease
	}
	if !(set.Filter >= 0 && set.Filter <= 1) {
		return nil, badInput("ArbiterSettings.Filter", "", gpufair.ErrValue, "%v is outside [0, 1]", set.Filter)
	}
	if set.Patience < 0 {
		return nil, badInput("ArbiterSettings.Patience", "", gpufair.ErrValue, "%d is negative", set.Patience)
	}
	a := &Arbiter{c: c, lease: set.Lease, filter: set.Filter, patience: set.Patience, rng: rand.New(src), apps: map[string]*appState{}}
	a.slots = make([][]slot, len(c.Servers))
	for s, sv := range c.Servers {
		a.slots[s] = make([]slot, sv.GPUs)
	}
	return a, nil
}

// setTime expires every lease ending by now, in order of end time.
func (a *Arbiter) setTime(now time.Time) error {
	if now.Before(a.now) {
		return badInput("now", "", gpufair.ErrValue, "%v is before the arbiter's time %v", now, a.now)
	}
	a.now = now
	for {
		s, k, ok := a.nextEnd()
		if !ok || a.slots[s][k].end.After(now) {
			return nil
		}
		a.release(s, k, a.slots[s][k].end)
	}
}

// nextEnd returns the leased slot that ends first (ties by server, slot).
func (a *Arbiter) nextEnd() (int, int, bool) {
	bs, bk, ok := 0, 0, false
	for s, row := range a.slots {
		for k, sl := range row {
			if sl.app != "" && (!ok || sl.end.Before(a.slots[bs][bk].end)) {
				bs, bk, ok = s, k, true
			}
		}
	}
	return bs, bk, ok
}

// release ends the lease of slot (s, k) at t and hands on its payment, if
// one is due and its recipient is still here.
func (a *Arbiter) release(s, k int, t time.Time) {
	sl := &a.slots[s][k]
	a.take(sl.app, -1)
	to, until := sl.payTo, sl.payUntil
	*sl = slot{failed: sl.failed}
	if to != "" && until.After(t) && a.apps[to] != nil && !sl.failed {
		*sl = slot{app: to, kind: Payment, start: t, end: until}
		a.take(to, 1)
	}
}

// take counts d GPUs to or from app.
func (a *Arbiter) take(app string, d int) {
	if st := a.apps[app]; st != nil {
		st.gpus += d
	}
}

// Join adds an app at now with its agent. It reports an empty name, a name
// already present (gpufair.ErrDuplicate), a nil agent and a time before the
// arbiter's as *gpufair.InputError. Joining is not a resource-available
// event: call Advance to offer free GPUs to the newcomer.
func (a *Arbiter) Join(now time.Time, app string, ag Agent) error {
	switch {
	case app == "":
		return badInput("app", "", gpufair.ErrValue, "empty app name")
	case a.apps[app] != nil:
		return badInput("app", app, gpufair.ErrDuplicate, "app already joined")
	case ag == nil:
		return badInput("agent", app, gpufair.ErrValue, "nil agent")
	}
	if err := a.setTime(now); err != nil {
		return err
	}
	a.apps[app] = &appState{agent: ag, rho: math.Inf(1)}
	return nil
}

// Leave removes an app at now (it finished, failed or quit): its GPUs come
// back, passing on any payments they carry. Unknown apps are
// gpufair.ErrUnknownID.
func (a *Arbiter) Leave(now time.Time, app string) error {
	if a.apps[app] == nil {
		return badInput("app", app, gpufair.ErrUnknownID, "no such app")
	}
	if err := a.setTime(now); err != nil {
		return err
	}
	for s, row := range a.slots {
		for k := range row {
			if row[k].app == app {
				a.release(s, k, now)
			}
		}
	}
	delete(a.apps, app)
	return nil
}

// Fail takes GPUs out of service at now: a GPU's lease, and any payment it
// carries, ends, and the GPU is offered no more until Repair. A GPU outside
// the cluster is gpufair.ErrUnknownID; nothing changes then.
func (a *Arbiter) Fail(now time.Time, gpus ...topology.GPU) error {
	if err := a.checkGPUs(gpus); err != nil {
		return err
	}
	if err := a.setTime(now); err != nil {
		return err
	}
	for _, g := range gpus {
		sl := &a.slots[g.Server][g.Slot]
		sl.failed = true
		if sl.app != "" {
			a.release(g.Server, g.Slot, now)
		}
	}
	return nil
}

// Repair returns failed GPUs to service at now; they are offered at the
// next Advance. Errors as for Fail.
func (a *Arbiter) Repair(now time.Time, gpus ...topology.GPU) error {
	if err := a.checkGPUs(gpus); err != nil {
		return err
	}
	if err := a.setTime(now); err != nil {
		return err
	}
	for _, g := range gpus {
		a.slots[g.Server][g.Slot].failed = false
	}
	return nil
}

func (a *Arbiter) checkGPUs(gpus []topology.GPU) error {
	for _, g := range gpus {
		if g.Server < 0 || g.Server >= len(a.slots) || g.Slot < 0 || g.Slot >= len(a.slots[g.Server]) {
			return badInput("gpus", "", gpufair.ErrUnknownID, "GPU %v is not a slot of the cluster", g)
		}
	}
	return nil
}

// NextEvent returns when the next lease ends: the next resource-available
// event, at which to call Advance. ok is false when no GPU is leased.
func (a *Arbiter) NextEvent() (t time.Time, ok bool) {
	s, k, ok := a.nextEnd()
	if !ok {
		return time.Time{}, false
	}
	return a.slots[s][k].end, true
}

// Lease is one GPU's current lease.
type Lease struct {
	GPU        topology.GPU
	App        string
	Kind       GrantKind
	Start, End time.Time
	// PayTo, when not empty, receives the GPU at End until PayUntil: the
	// holder's hidden payment.
	PayTo    string
	PayUntil time.Time
}

// Leases returns every current lease, by server and slot.
func (a *Arbiter) Leases() []Lease {
	var out []Lease
	for s, row := range a.slots {
		for k, sl := range row {
			if sl.app != "" {
				out = append(out, Lease{GPU: topology.GPU{Server: s, Slot: k}, App: sl.app, Kind: sl.kind, Start: sl.start, End: sl.end, PayTo: sl.payTo, PayUntil: sl.payUntil})
			}
		}
	}
	return out
}

// Held returns the GPUs app holds per server (nil for an unknown app).
func (a *Arbiter) Held(app string) []int {
	if a.apps[app] == nil {
		return nil
	}
	return a.heldCounts(app)
}

func (a *Arbiter) heldCounts(app string) []int {
	out := make([]int, len(a.slots))
	for s, row := range a.slots {
		for _, sl := range row {
			if sl.app == app {
				out[s]++
			}
		}
	}
	return out
}

// Rho returns the app's cached current rho, as of the last round (+Inf
// before its first); ok is false for an unknown app.
func (a *Arbiter) Rho(app string) (rho float64, ok bool) {
	st := a.apps[app]
	if st == nil {
		return 0, false
	}
	return st.rho, true
}

// Apps returns the apps present, by name.
func (a *Arbiter) Apps() []string {
	ids := make([]string, 0, len(a.apps))
	for id := range a.apps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
