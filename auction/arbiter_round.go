package auction

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// GrantKind says how an app came to lease GPUs.
type GrantKind int

const (
	// Won: the part of a winning row its app keeps, c_i of it.
	Won GrantKind = iota
	// Leftover: a GPU in no winning row, given at random to an app not
	// invited that would use it.
	Leftover
	// Payment: a GPU of a winner's hidden payment, the part of its row it
	// does not keep, given at random to an app not invited that would use
	// it.
	Payment
	// Overdue: a row granted before the auction, whole, to an app that bid
	// in ArbiterSettings.Patience rounds in a row and held no GPU after
	// any of them.
	Overdue
	// Spare: a leftover or payment GPU that no app outside the auction
	// would use, given at random to an invited app that would (never the
	// payer), so that no GPU wanted sits idle.
	Spare
)

// String returns the kind's name.
func (k GrantKind) String() string {
	switch k {
	case Won:
		return "won"
	case Leftover:
		return "leftover"
	case Payment:
		return "payment"
	case Overdue:
		return "overdue"
	case Spare:
		return "spare"
	}
	return "GrantKind(?)"
}

// Grant is a lease decided in a round: GPUs for [From, Until), a full
// lease.
type Grant struct {
	App  string
	Kind GrantKind
	GPUs []topology.GPU // sorted by server, slot
	// From and Until bound the lease.
	From, Until time.Time
	// Keep is c_i of a Won grant (which holds the GPUs it kept, possibly
	// none), 1 for Overdue; 0 otherwise.
	Keep float64
	// Payer is the winner whose payment a Payment or Spare GPU was; empty
	// for a leftover.
	Payer string
}

// Ranked is an app and its current rho when a round ranked it.
type Ranked struct {
	App string
	Rho float64
}

// Round is what one Advance did.
type Round struct {
	At time.Time
	// Offer is the free GPUs offered; its Total is 0 when no round ran.
	// Overdue grants come out of it first; the auction gets the rest.
	Offer ftf.Offer
	// Ranking is every app, worst current rho first; Invited is its first
	// ⌈(1-f)·n⌉.
	Ranking []Ranked
	Invited []string
	// Bids are the invited apps' valid bids that went to the auction (less
	// overdue apps served before it, and rows that no longer fit), each
	// with RhoNone priced as Arbiter says; Outcome the auction over them
	// (nil when there were none).
	Bids    []Bid
	Outcome *TableOutcome
	Grants  []Grant
	// Errors holds an *AgentError for each agent that failed this round,
	// context.DeadlineExceeded for one still busy at the agents' deadline.
	Errors []error
	// Partial reports that the round's budget or node bound cut the
	// auction short: Outcome is the best allocation it found.
	Partial bool
	// Took is the wall time of the round.
	Took time.Duration
}

// Advance is a resource-available event at now: leases ending by now come
// back, and if any GPU is free and any app present, a round runs (see
// Arbiter). It returns the round, with an empty Offer when none ran.
// Agents' failures are in Round.Errors, not returned, and leave their apps'
// state as it was; the error is a time before the arbiter's, or ctx's.
func (a *Arbiter) Advance(ctx context.Context, now time.Time) (*Round, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := a.setTime(now); err != nil {
		return nil, err
	}
	r := &Round{At: now, Offer: ftf.Offer{Cluster: a.c, Free: a.freeCounts()}}
	if r.Offer.Total() == 0 || len(a.apps) == 0 {
		return r, nil
	}
	agentCtx := ctx
	if a.set.Budget > 0 {
		var cancel context.CancelFunc
		agentCtx, cancel = context.WithDeadline(ctx, start.Add(time.Duration(agentShare*float64(a.set.Budget))))
		defer cancel()
	}
	roundCtx := ctx // for the agents' calls after the auction
	if a.set.Budget > 0 {
		var cancel context.CancelFunc
		roundCtx, cancel = context.WithDeadline(ctx, start.Add(a.set.Budget))
		defer cancel()
	}
	if err := a.rank(ctx, agentCtx, r); err != nil {
		return nil, err
	}
	uninvited := map[string]bool{}
	for _, rk := range r.Ranking {
		uninvited[rk.App] = !slices.Contains(r.Invited, rk.App)
	}
	if err := a.bids(ctx, agentCtx, r); err != nil {
		return nil, err
	}
	offer := r.Offer
	if a.set.Patience > 0 {
		offer = a.serveOverdue(r)
	}
	var pool []spare // GPUs to give away, each with its payer
	leftover := offer.Free
	if len(r.Bids) > 0 {
		set := &TableSettings{MaxNodes: a.set.MaxNodes}
		if a.set.Budget > 0 {
			// At least a nanosecond: a zero Budget would mean no bound.
			set.Budget = max(time.Until(start.Add(time.Duration(auctionShare*float64(a.set.Budget)))), 1)
		}
		out, err := auctionTables(ctx, offer, r.Bids, set) // each bid validated in bids
		if err != nil {
			return nil, err // bids are valid: only ctx can fail here
		}
		r.Outcome, r.Partial, leftover = out, out.Partial, out.Leftover
		for i, b := range r.Bids {
			if out.Row[i] >= 0 {
				pool = append(pool, a.grantWon(roundCtx, r, b.App, b.Table.Rows[out.Row[i]].Counts, out.Keep[i])...)
			}
		}
	}
	for s, n := range leftover {
		for range n {
			pool = append(pool, spare{server: s})
		}
	}
	a.giveAway(r, pool, uninvited)
	for _, st := range a.apps {
		if st.gpus == 0 {
			st.hungry++
		} else {
			st.hungry = 0
		}
	}
	r.Took = time.Since(start)
	return r, nil
}

// bids asks the invited apps for their bids, fills r.Bids, and prices
// each bid's RhoNone (see Arbiter): an agent prices its wait in the same
// call as its bid. An agent that fails is recorded in r.Errors and bids
// nothing; so does one that bids no row. It returns only ctx's error.
func (a *Arbiter) bids(ctx, agentCtx context.Context, r *Round) error {
	type answer struct {
		tab     ftf.BidTable
		best    []int // held plus its best row
		wait    float64
		waitErr error
	}
	// An agent's call that the budget abandons runs on while the round
	// goes on, so the calls see only what is read here (callAgents).
	calls := a.agentCalls(r.Invited, func(st *appState) []int { return st.held })
	at, offer, waitAt, c := r.At, r.Offer, a.now.Add(a.set.Lease), a.c
	answers, errs := callAgents(agentCtx, len(calls), func(ctx context.Context, i int) (answer, error) {
		call := calls[i]
		tab, err := call.agent.Bid(ctx, at, ftf.Offer{Cluster: offer.Cluster, Free: slices.Clone(offer.Free)}, slices.Clone(call.held))
		if err == nil {
			err = tab.Validate(offer, call.id)
		}
		if err != nil || len(tab.Rows) == 0 {
			return answer{tab: tab}, err
		}
		ans := answer{tab: tab, best: slices.Clone(call.held)}
		best := tab.Rows[0]
		for _, row := range tab.Rows[1:] {
			if row.Rho < best.Rho {
				best = row
			}
		}
		for s, n := range best.Counts {
			ans.best[s] += n
		}
		if math.IsInf(tab.RhoNone, 1) && !a.set.UnboundedWait {
			ans.wait, ans.waitErr = call.agent.Rho(ctx, waitAt, c, slices.Clone(ans.best))
			if ans.waitErr == nil && (math.IsNaN(ans.wait) || ans.wait <= 0) {
				ans.waitErr = badInput("rho", call.id, gpufair.ErrValue, "%v is not positive", ans.wait)
			}
			if ans.waitErr == nil && ans.wait > best.Rho {
				ans.tab.RhoNone = ans.wait
			}
		}
		return ans, nil
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, id := range r.Invited {
		ans, err := answers[i], errs[i]
		if err != nil {
			r.Errors = append(r.Errors, &AgentError{App: id, Op: "Bid", Err: err})
			continue
		}
		if len(ans.tab.Rows) == 0 {
			continue
		}
		if ans.waitErr != nil {
			r.Errors = append(r.Errors, &AgentError{App: id, Op: "Rho", Err: ans.waitErr})
		}
		a.apps[id].best = ans.best
		r.Bids = append(r.Bids, Bid{App: id, Table: ans.tab})
	}
	return nil
}

// waitRhos prices waiting for each of ids: the rho of waiting one lease
// and then holding its best row, the agents called concurrently.
func (a *Arbiter) waitRhos(ctx context.Context, ids []string) ([]float64, []error) {
	return a.rhos(ctx, ids, a.now.Add(a.set.Lease), func(st *appState) []int { return st.best })
}

// agentCall is what one agent's call reads of the arbiter's state, copied
// before the call: a call that a budget abandons (callAgents) runs on
// while the arbiter changes its state.
type agentCall struct {
	id    string
	agent Agent
	held  []int
}

// agentCalls copies, for each of ids, its agent and a clone of the counts
// that held gives.
func (a *Arbiter) agentCalls(ids []string, held func(*appState) []int) []agentCall {
	calls := make([]agentCall, len(ids))
	for i, id := range ids {
		st := a.apps[id]
		calls[i] = agentCall{id, st.agent, slices.Clone(held(st))}
	}
	return calls
}

// rhos asks each of ids' agent for Rho at when, holding what held gives,
// concurrently, and checks the answers.
func (a *Arbiter) rhos(ctx context.Context, ids []string, when time.Time, held func(*appState) []int) ([]float64, []error) {
	calls, c := a.agentCalls(ids, held), a.c
	vals, errs := callAgents(ctx, len(calls), func(ctx context.Context, i int) (float64, error) {
		return calls[i].agent.Rho(ctx, when, c, calls[i].held)
	})
	for i, rho := range vals {
		if errs[i] == nil && (math.IsNaN(rho) || rho <= 0) {
			errs[i] = badInput("rho", ids[i], gpufair.ErrValue, "%v is not positive", rho)
		}
	}
	return vals, errs
}

// rank prices every app's current rho and fills r.Ranking and r.Invited.
// An agent that fails keeps its last rho. It returns only ctx's error.
func (a *Arbiter) rank(ctx, agentCtx context.Context, r *Round) error {
	ids := a.Apps()
	var holding, waiting []string
	for _, id := range ids {
		switch st := a.apps[id]; {
		case st.gpus > 0:
			holding = append(holding, id)
		case st.best != nil && !a.set.UnboundedWait:
			waiting = append(waiting, id)
		default:
			st.rho = math.Inf(1) // never bid, or UnboundedWait: first in line
		}
	}
	hr, herrs := a.rhos(agentCtx, holding, r.At, func(st *appState) []int { return st.held })
	wr, werrs := a.waitRhos(agentCtx, waiting)
	if err := ctx.Err(); err != nil {
		return err
	}
	failed := map[string]error{}
	for _, set := range []struct {
		ids  []string
		rhos []float64
		errs []error
	}{{holding, hr, herrs}, {waiting, wr, werrs}} {
		for i, id := range set.ids {
			if set.errs[i] != nil {
				failed[id] = set.errs[i]
			} else {
				a.apps[id].rho = set.rhos[i]
			}
		}
	}
	for _, id := range ids {
		if err := failed[id]; err != nil {
			r.Errors = append(r.Errors, &AgentError{App: id, Op: "Rho", Err: err})
		}
		r.Ranking = append(r.Ranking, Ranked{App: id, Rho: a.apps[id].rho})
	}
	slices.SortStableFunc(r.Ranking, func(x, y Ranked) int {
		if c := cmp.Compare(y.Rho, x.Rho); c != 0 {
			return c
		}
		return a.apps[x.App].lastWon.Compare(a.apps[y.App].lastWon) // names already in order
	})
	n := len(r.Ranking)
	k := int(math.Ceil((1-a.set.Filter)*float64(n) - 1e-9))
	k = min(max(k, 1), n)
	for i, rk := range r.Ranking {
		if i < k || a.overdue(rk.App) {
			r.Invited = append(r.Invited, rk.App)
		}
	}
	return nil
}

// overdue reports whether app id held nothing after each of the last
// Patience rounds (ArbiterSettings.Patience > 0).
func (a *Arbiter) overdue(id string) bool {
	return a.set.Patience > 0 && a.apps[id].hungry >= a.set.Patience
}

// serveOverdue grants each overdue bidder (see ArbiterSettings.Patience),
// hungriest first, the lowest-rho row of its bid that fits what is left of
// the offer, for a full lease. It returns what is left, and leaves in
// r.Bids the other bids with the rows that still fit (a bid left with none
// drops out).
func (a *Arbiter) serveOverdue(r *Round) ftf.Offer {
	free := slices.Clone(r.Offer.Free)
	served := map[string]bool{}
	// Hungriest first, then in ranking order (r.Bids follows it).
	order := slices.Clone(r.Bids)
	slices.SortStableFunc(order, func(x, y Bid) int { return cmp.Compare(a.apps[y.App].hungry, a.apps[x.App].hungry) })
	for _, b := range order {
		if !a.overdue(b.App) {
			continue
		}
		best := -1
		for i, row := range b.Table.Rows {
			if covers(free, row.Counts) && (best < 0 || row.Rho < b.Table.Rows[best].Rho) {
				best = i
			}
		}
		if best < 0 {
			continue
		}
		counts := b.Table.Rows[best].Counts
		a.apps[b.App].lastWon = r.At
		r.Grants = append(r.Grants, Grant{App: b.App, Kind: Overdue, GPUs: a.leaseCounts(b.App, Overdue, counts), From: r.At, Until: r.At.Add(a.set.Lease), Keep: 1})
		for s, n := range counts {
			free[s] -= n
		}
		served[b.App] = true
	}
	if len(served) == 0 {
		return r.Offer
	}
	var bids []Bid
	for _, b := range r.Bids {
		if served[b.App] {
			continue
		}
		t := b.Table
		t.Rows = slices.DeleteFunc(slices.Clone(t.Rows), func(row ftf.Row) bool { return !covers(free, row.Counts) })
		if len(t.Rows) > 0 {
			bids = append(bids, Bid{App: b.App, Table: t})
		}
	}
	r.Bids = bids
	return ftf.Offer{Cluster: r.Offer.Cluster, Free: free}
}

// spare is a GPU of server to give away; payer is the winner whose
// payment it is, empty for a leftover.
type spare struct {
	server int
	payer  string
}

// grantWon leases app the part of its winning row counts it keeps for c
// (see Arbiter) and returns the rest, its payment.
func (a *Arbiter) grantWon(ctx context.Context, r *Round, app string, counts []int, c float64) []spare {
	g := total(counts)
	x := c * float64(g)
	k := int(math.Floor(x))
	if a.rng.Float64() < x-float64(k) {
		k++
	}
	k = min(k, g)
	kept := a.keptCounts(app, counts, k)
	if k > 0 && k < g && !a.usable(ctx, app, kept) {
		// The app cannot use part of the row (a rigid gang): it keeps the
		// whole row with probability c, c·g GPUs in expectation still.
		k = 0
		if a.rng.Float64() < c {
			k = g
		}
		kept = a.keptCounts(app, counts, k)
	}
	var pay []spare
	for s, n := range counts {
		for range n - kept[s] {
			pay = append(pay, spare{server: s, payer: app})
		}
	}
	st := a.apps[app]
	gpus := a.leaseCounts(app, Won, kept)
	if len(gpus) > 0 {
		st.lastWon = r.At
	}
	r.Grants = append(r.Grants, Grant{App: app, Kind: Won, GPUs: gpus, From: r.At, Until: r.At.Add(a.set.Lease), Keep: c})
	return pay
}

// usable reports whether app's agent gives a finite rho for holding what
// it holds plus kept; a failing or late agent counts as no.
func (a *Arbiter) usable(ctx context.Context, app string, kept []int) bool {
	st := a.apps[app]
	held := slices.Clone(st.held)
	for s, n := range kept {
		held[s] += n
	}
	agent, now, c := st.agent, a.now, a.c // see agentCall
	rho, errs := callAgents(ctx, 1, func(ctx context.Context, _ int) (float64, error) {
		return agent.Rho(ctx, now, c, held)
	})
	return errs[0] == nil && rho[0] > 0 && !math.IsInf(rho[0], 1)
}

// keptCounts returns k GPUs of the row counts: the densest servers of the
// row first, then where app holds most, which keeps its locality.
func (a *Arbiter) keptCounts(app string, counts []int, k int) []int {
	// Densest servers of the row first, then where it holds most.
	st := a.apps[app]
	servers := make([]int, 0, len(counts))
	for s, n := range counts {
		if n > 0 {
			servers = append(servers, s)
		}
	}
	slices.SortStableFunc(servers, func(x, y int) int {
		if d := cmp.Compare(counts[y], counts[x]); d != 0 {
			return d
		}
		return cmp.Compare(st.held[y], st.held[x])
	})
	kept := make([]int, len(counts))
	for _, s := range servers {
		n := min(counts[s], k)
		kept[s], k = n, k-n
	}
	return kept
}

// giveAway hands out the GPUs of pool, a bundle at a time: to an app drawn
// at random among the apps not invited that want a bundle of them
// (Agent.Wants), or failing that (Spare) among the invited apps that want
// one of the GPUs that are not their own payment; GPUs no app wants stay
// free.
func (a *Arbiter) giveAway(r *Round, pool []spare, uninvited map[string]bool) {
	if len(pool) == 0 {
		return
	}
	type key struct {
		app   string
		kind  GrantKind
		payer string
	}
	index := map[key]int{}
	apps := a.Apps()
	// free returns the pool's GPUs per server, less those app paid.
	free := func(app string) []int {
		out := make([]int, len(a.slots))
		for _, p := range pool {
			if p.payer != app || app == "" {
				out[p.server]++
			}
		}
		return out
	}
	type want struct {
		app    string
		bundle []int
	}
	var cands []want
	for len(pool) > 0 {
		cands = cands[:0]
		all := free("")
		for _, id := range apps {
			if uninvited[id] {
				if b := a.apps[id].agent.Wants(a.apps[id].held, all); fits(b, all) {
					cands = append(cands, want{id, b})
				}
			}
		}
		isSpare := len(cands) == 0
		if isSpare {
			for _, id := range apps {
				if f := free(id); !uninvited[id] {
					if b := a.apps[id].agent.Wants(a.apps[id].held, f); fits(b, f) {
						cands = append(cands, want{id, b})
					}
				}
			}
		}
		if len(cands) == 0 {
			return
		}
		w := cands[a.rng.IntN(len(cands))]
		for s, n := range w.bundle {
			for ; n > 0; n-- {
				// The bundle's GPU on s: a leftover first, then a payment
				// not its own.
				i := slices.IndexFunc(pool, func(p spare) bool { return p.server == s && p.payer == "" })
				if i < 0 {
					i = slices.IndexFunc(pool, func(p spare) bool { return p.server == s && p.payer != w.app })
				}
				p := pool[i]
				pool = slices.Delete(pool, i, i+1)
				kind := Leftover
				switch {
				case isSpare:
					kind = Spare
				case p.payer != "":
					kind = Payment
				}
				one := make([]int, len(a.slots))
				one[s] = 1
				gpus := a.leaseCounts(w.app, kind, one)
				k := key{w.app, kind, p.payer}
				g, ok := index[k]
				if !ok {
					g = len(r.Grants)
					index[k] = g
					r.Grants = append(r.Grants, Grant{App: w.app, Kind: kind, From: r.At, Until: r.At.Add(a.set.Lease), Payer: p.payer})
				}
				r.Grants[g].GPUs = append(r.Grants[g].GPUs, gpus...)
			}
		}
	}
	for i := range r.Grants {
		topology.SortGPUs(r.Grants[i].GPUs)
	}
}

// fits reports whether bundle is a non-empty bundle within free.
func fits(bundle, free []int) bool {
	if len(bundle) != len(free) {
		return false
	}
	n := 0
	for s, k := range bundle {
		if k < 0 || k > free[s] {
			return false
		}
		n += k
	}
	return n > 0
}

// leaseCounts leases app counts[s] free slots of each server s for a full
// lease from now, and returns them: the slots app held last first, then
// those no other app still in the auction held last, then the lowest, so
// that apps winning GPUs again keep the slots their jobs run on.
func (a *Arbiter) leaseCounts(app string, kind GrantKind, counts []int) []topology.GPU {
	tier := func(sl *slot) int {
		switch {
		case sl.last == app:
			return 0
		case sl.last == "" || a.apps[sl.last] == nil:
			return 1
		}
		return 2
	}
	var out []topology.GPU
	for s, n := range counts {
		for pass := range 3 {
			for k := range a.slots[s] {
				if n == 0 {
					break
				}
				if sl := &a.slots[s][k]; sl.app == "" && !sl.failed && tier(sl) == pass {
					*sl = slot{app: app, kind: kind, start: a.now, end: a.now.Add(a.set.Lease)}
					out = append(out, topology.GPU{Server: s, Slot: k})
					a.take(app, s, 1)
					n--
				}
			}
		}
	}
	topology.SortGPUs(out)
	return out
}

func (a *Arbiter) freeCounts() []int {
	out := make([]int, len(a.slots))
	for s, row := range a.slots {
		for _, sl := range row {
			if sl.app == "" && !sl.failed {
				out[s]++
			}
		}
	}
	return out
}
