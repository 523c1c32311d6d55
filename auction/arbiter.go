package auction

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// DefaultLease is the lease of a zero ArbiterSettings: Themis' choice of ten
// minutes (section 6.4).
const DefaultLease = 10 * time.Minute

// Shares of a round's budget (ArbiterSettings.Budget): the agents' calls
// (ranking, bids and their waiting prices) must end by agentShare of it,
// the auction by auctionShare; the rest is for granting leases and
// leftovers.
const (
	agentShare   = 0.5
	auctionShare = 0.8
)

// ArbiterSettings configures an Arbiter. The zero value leases GPUs for
// DefaultLease, invites every app (f = 0) and bounds nothing.
type ArbiterSettings struct {
	// Lease is how long a granted GPU stays with its app; 0 means
	// DefaultLease.
	Lease time.Duration
	// Filter is Themis' fairness knob f in [0, 1]: each round invites the
	// ⌈(1-f)·n⌉ of the n apps with the worst current rho, at least one.
	Filter float64
	// Patience, when positive, bounds starvation: an app that held no GPU
	// after each of the last Patience rounds is overdue; it is invited
	// whatever its rank, and served before the auction (see Arbiter). 0
	// is Themis as published.
	Patience int
	// UnboundedWait prices an app holding nothing at rho = +Inf, as section
	// 3.3.2 does ("its ρ [becomes] unbounded"), instead of by its wait (see
	// Arbiter): waiting apps rank first, longest since they last won
	// first, and the auction serves as many of them as it can before it
	// weighs 1/rho (AuctionTables).
	UnboundedWait bool
	// Budget bounds the wall time of a round (Advance); 0 means no bound.
	// The agents get the first half, the auction what is left of the
	// first 80%, and the auction returns the best allocation it found in
	// its part (AuctionTablesWith). A round that binds is marked Partial;
	// its outcome then depends on the machine's speed.
	Budget time.Duration
	// MaxNodes bounds the auction's branch-and-bound nodes per round, a
	// deterministic bound; 0 means none.
	MaxNodes int
}

// Arbiter is Themis' multi-round auction arbiter (section 3.3.2, Pseudocode
// 1 lines 13-23, section 4.2.2) over a cluster of servers.
//
// Apps join with an Agent and leave when they finish. Each GPU is leased to
// at most one app. Advance(now) is a resource-available event: leases ending
// by now come back, and if GPUs are free a round runs:
//
//  1. every app's current rho is priced (below) and the apps are sorted
//     worst first: rho descending, then never won or longest since it
//     last won, then name;
//  2. the first ⌈(1-f)·n⌉ (at least one) are invited; each invited agent
//     bids on the offer of all free GPUs;
//  3. AuctionTablesWith picks one row per bid and each winner's c_i;
//     winner i keeps c_i of its row's GPUs (below) for a full lease and
//     pays the rest;
//  4. the GPUs of those payments, and the GPUs in no winning row, go out
//     one by one, in the same round, each to an app drawn at random among
//     the apps not invited that would use it (Agent.Wants): Pseudocode 1
//     lines 10 and 21, at GPU granularity.
//
// Hidden payments of indivisible GPUs. Pseudocode 1 grants c_i·G_i. A row
// of g GPUs is granted ⌊c_i·g⌋ GPUs and one more with probability
// c_i·g − ⌊c_i·g⌋ (drawn from the arbiter's source), so that the app keeps
// c_i·g GPUs in expectation; it keeps those on the servers where its row is
// densest, which keeps its locality. If the app cannot use that part of
// the row (its agent prices it at +Inf: a rigid gang cut short), it keeps
// the whole row with probability c_i and none of it otherwise: c_i·g GPUs
// in expectation still.
//
// Work conservation. Themis calls the multi-round scheme work-conserving
// because leftovers are given away (section 3.3.2), but when no app outside
// the auction would use a GPU (f = 0 invites everyone) Pseudocode 1 leaves
// it idle. Such a GPU goes instead, at random, to an invited app that
// would use it, other than the app whose payment it is (a payment returned
// to its payer would be no payment): a Spare grant. So at the end of a
// round no free GPU is wanted by any app, save a payer's own payment.
//
// Apps that hold nothing. Equation 1 assumes the allocation binds until the
// app finishes, so an app holding nothing has rho = +Inf: every waiting
// app looks alike, and the product of 1/rho turns into a count of apps
// served. Round by round an empty allocation binds for one lease, after
// which the app is auctioned again, so the arbiter prices holding nothing
// by that wait, in ranking, in the auction and in c_i alike: an app holding
// nothing has the rho its agent gives for waiting one lease and then
// holding the best row of its latest bid (Agent.Rho at now + Lease). That
// rho grows with the wait (T_sh counts it), so a waiting app rises in the
// ranking and in what winning is worth to it. Before its first bid an app
// has no such row and ranks first, at +Inf. (A bid whose agent cannot price
// the wait keeps RhoNone = +Inf; the auction then serves such apps first,
// as AuctionTables says.) ArbiterSettings.UnboundedWait prices every app
// holding nothing at +Inf instead, as the paper does.
//
// Starvation guard. Finish-time fairness can starve an app for good: an
// app whose rho grows slower while it waits than the others' do while they
// run (TestArbiterStarvation) ranks last and loses every auction. With
// Patience p > 0, an app that held no GPU after each of the last p rounds
// is overdue: it is invited whatever its rank, and served before the
// auction, hungriest first (then worst rho first): it leases the lowest-rho
// row of its bid that fits what is left of the offer, for a full lease and
// no payment (GrantKind Overdue); the auction then runs over the rest, with
// the rows that still fit. So an overdue app holds GPUs from the first
// round whose offer holds one of its rows, once the apps hungrier than it
// are served. The guard is this library's, not Themis'.
//
// Time is a parameter and must not go backwards. Every draw comes from the
// rand.Source given to NewArbiter and apps are visited in name order, so a
// sequence of calls gives the same leases for the same seed, unless a time
// Budget binds.
//
// Cost of a round: for n apps, n Rho calls for the ranking, one Bid and one
// Rho call per invited app, AuctionTablesWith (exact search, exponential in
// the worst case; bound it with Budget or MaxNodes), and O(L·n) Wants calls
// for L GPUs left over. BenchmarkArbiterRound runs 200 apps on 256 GPUs
// within a 100 ms budget. An Arbiter is not safe for concurrent use.
type Arbiter struct {
	c   topology.Cluster
	set ArbiterSettings
	src rand.Source // rng's, which Themis' snapshots save
	rng *rand.Rand
	now time.Time
	// slots[s][k] is GPU k of server s.
	slots [][]slot
	apps  map[string]*appState
}

// slot is one GPU: free, failed, or leased to app over [start, end).
type slot struct {
	failed     bool
	app        string
	kind       GrantKind
	start, end time.Time
	// last is the app whose lease ended last, while the slot is free: an
	// app that wins GPUs of the server again gets its own slots back, so
	// that its jobs keep running there instead of restarting.
	last string
}

type appState struct {
	agent   Agent
	held    []int     // GPUs held per server
	gpus    int       // GPUs held in all
	lastWon time.Time // when it last won GPUs in an auction; zero if never
	// best is held plus the lowest-rho row of its latest valid bid with
	// rows: where it prices waiting. nil before.
	best []int
	rho  float64
	// hungry counts the rounds in a row it held no GPU after.
	hungry int
}

// NewArbiter returns an arbiter of the cluster's GPUs, all free, with no
// apps. s may be nil. It reports an invalid cluster, a negative lease,
// budget, node bound or patience and a filter outside [0, 1] as
// *gpufair.InputError, as it does a nil src.
func NewArbiter(c topology.Cluster, s *ArbiterSettings, src rand.Source) (*Arbiter, error) {
	if src == nil {
		return nil, badInput("src", "", gpufair.ErrEmpty, "NewArbiter needs a rand.Source")
	}
	if err := c.Validate(); err != nil {
		return nil, badInput("Cluster", "", gpufair.ErrValue, "%v", err)
	}
	var set ArbiterSettings
	if s != nil {
		set = *s
	}
	switch {
	case set.Lease < 0:
		return nil, badInput("ArbiterSettings.Lease", "", gpufair.ErrValue, "%v is negative", set.Lease)
	case !(set.Filter >= 0 && set.Filter <= 1):
		return nil, badInput("ArbiterSettings.Filter", "", gpufair.ErrValue, "%v is outside [0, 1]", set.Filter)
	case set.Patience < 0:
		return nil, badInput("ArbiterSettings.Patience", "", gpufair.ErrValue, "%d is negative", set.Patience)
	case set.Budget < 0:
		return nil, badInput("ArbiterSettings.Budget", "", gpufair.ErrValue, "%v is negative", set.Budget)
	case set.MaxNodes < 0:
		return nil, badInput("ArbiterSettings.MaxNodes", "", gpufair.ErrValue, "%d is negative", set.MaxNodes)
	}
	if set.Lease == 0 {
		set.Lease = DefaultLease
	}
	a := &Arbiter{c: c, set: set, src: src, rng: rand.New(src), apps: map[string]*appState{}}
	a.slots = make([][]slot, len(c.Servers))
	for s, sv := range c.Servers {
		a.slots[s] = make([]slot, sv.GPUs)
	}
	return a, nil
}

// setTime ends every lease ending by now.
func (a *Arbiter) setTime(now time.Time) error {
	if now.Before(a.now) {
		return badInput("now", "", gpufair.ErrValue, "%v is before the arbiter's time %v", now, a.now)
	}
	a.now = now
	for s, row := range a.slots {
		for k, sl := range row {
			if sl.app != "" && !sl.end.After(now) {
				a.release(s, k)
			}
		}
	}
	return nil
}

// release ends the lease of slot (s, k).
func (a *Arbiter) release(s, k int) {
	sl := &a.slots[s][k]
	a.take(sl.app, s, -1)
	*sl = slot{failed: sl.failed, last: sl.app}
}

// take counts d GPUs of server s to or from app.
func (a *Arbiter) take(app string, s, d int) {
	if st := a.apps[app]; st != nil {
		st.held[s] += d
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
	a.apps[app] = &appState{agent: ag, held: make([]int, len(a.slots)), rho: math.Inf(1)}
	return nil
}

// Leave removes an app at now (it finished, failed or quit): its GPUs come
// back. Unknown apps are gpufair.ErrUnknownID.
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
				a.release(s, k)
			}
		}
	}
	delete(a.apps, app)
	return nil
}

// Fail takes GPUs out of service at now: a GPU's lease ends and the GPU is
// offered no more until Repair. A GPU outside the cluster is
// gpufair.ErrUnknownID; nothing changes then.
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
			a.release(g.Server, g.Slot)
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
		if !a.c.Has(g) {
			return badInput("gpus", "", gpufair.ErrUnknownID, "GPU %v is not a slot of the cluster", g)
		}
	}
	return nil
}

// NextEvent returns when the next lease ends: the next resource-available
// event, at which to call Advance. ok is false when no GPU is leased.
func (a *Arbiter) NextEvent() (t time.Time, ok bool) {
	for _, row := range a.slots {
		for _, sl := range row {
			if sl.app != "" && (!ok || sl.end.Before(t)) {
				t, ok = sl.end, true
			}
		}
	}
	return t, ok
}

// Lease is one GPU's current lease.
type Lease struct {
	GPU        topology.GPU
	App        string
	Kind       GrantKind
	Start, End time.Time
}

// Leases returns every current lease, by server and slot.
func (a *Arbiter) Leases() []Lease {
	var out []Lease
	for s, row := range a.slots {
		for k, sl := range row {
			if sl.app != "" {
				out = append(out, Lease{GPU: topology.GPU{Server: s, Slot: k}, App: sl.app, Kind: sl.kind, Start: sl.start, End: sl.end})
			}
		}
	}
	return out
}

// Held returns the GPUs app holds per server (nil for an unknown app).
func (a *Arbiter) Held(app string) []int {
	if st := a.apps[app]; st != nil {
		return slices.Clone(st.held)
	}
	return nil
}

// Rho returns the app's current rho as the last round ranked it (+Inf
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
