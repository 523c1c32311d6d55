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
	// Won: a winning row of the auction, for c_i of the lease.
	Won GrantKind = iota
	// Leftover: GPUs in no winning row, given at random to an app not
	// invited.
	Leftover
	// Payment: a winner's hidden payment, the rest of its lease after
	// c_i·Lease, given at random to an app not invited.
	Payment
	// Overdue: a row granted before the auction, for a full lease, to an
	// app that bid in ArbiterSettings.Patience rounds in a row and held no
	// GPU after any of them.
	Overdue
)

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
	}
	return "GrantKind(?)"
}

// Grant is a lease decided in a round.
type Grant struct {
	App  string
	Kind GrantKind
	GPUs []topology.GPU // sorted by server, slot
	// From and Until bound the lease. For a Payment From is when the payer's
	// lease ends; if the payer leaves earlier, the GPUs pass on then.
	From, Until time.Time
	Keep        float64 // c_i of a Won grant, 1 for Overdue; 0 otherwise
	Payer       string  // the winner whose payment this is
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
	// overdue apps served before it, and rows that no longer fit), Outcome
	// the auction over them (nil when there were none).
	Bids    []Bid
	Outcome *TableOutcome
	Grants  []Grant
	// Errors holds an *AgentError for each agent that failed this round.
	Errors []error
}

// Advance is a resource-available event at now: leases ending by now come
// back (payments pass on), and if any GPU is free and any app present, a
// round runs (see Arbiter). It returns the round, with an empty Offer when
// none ran. Agents' failures are in Round.Errors, not returned; the error
// is a time before the arbiter's, or ctx's.
func (a *Arbiter) Advance(ctx context.Context, now time.Time) (*Round, error) {
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
	a.rank(ctx, r)
	uninvited := map[string]bool{}
	for _, rk := range r.Ranking[len(r.Invited):] {
		uninvited[rk.App] = true
	}
	held := map[string][]int{}
	var waitBids []Bid // r.Bids with RhoNone +Inf priced as waiting (waitRho)
	for _, id := range r.Invited {
		st := a.apps[id]
		held[id] = a.heldCounts(id)
		tab, err := st.agent.Bid(ctx, now, r.Offer, held[id])
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if err == nil {
			err = tab.Validate(r.Offer, id)
		}
		if err != nil {
			r.Errors = append(r.Errors, &AgentError{App: id, Op: "Bid", Err: err})
			continue
		}
		st.table, st.base = &tab, held[id]
		if len(tab.Rows) > 0 {
			r.Bids = append(r.Bids, Bid{App: id, Table: tab})
			wait := tab
			if math.IsInf(tab.RhoNone, 1) {
				wait.RhoNone = a.waitRho(ctx, id, tab, held[id], &r.Errors)
			}
			waitBids = append(waitBids, Bid{App: id, Table: wait})
		}
	}
	bidders := make([]string, len(r.Bids))
	for i, b := range r.Bids {
		bidders[i] = b.App
	}
	offer := r.Offer
	if a.patience > 0 {
		offer, r.Bids, waitBids = a.serveOverdue(r, waitBids, uninvited)
	}
	leftover := offer.Free
	if len(r.Bids) > 0 {
		out, err := AuctionTables(ctx, offer, r.Bids)
		if err != nil {
			return nil, err // bids are valid: only ctx can fail here
		}
		// c_i from the bids with losing priced as waiting, so that a winner
		// keeping out an app that holds nothing does not pay everything.
		if out.Keep, err = newSearch(offer, waitBids).keeps(ctx, out.Row); err != nil {
			return nil, err
		}
		r.Outcome, leftover = out, out.Leftover
		for i, b := range r.Bids {
			if out.Row[i] >= 0 {
				a.grantRow(r, b.App, Won, b.Table.Rows[out.Row[i]], out.Keep[i], uninvited)
			}
		}
	}
	for s, n := range leftover {
		if n == 0 {
			continue
		}
		to := a.draw(r.Invited, uninvited, "")
		if to == "" {
			continue
		}
		gpus := a.leaseSlots(to, Leftover, s, n, now, now.Add(a.lease))
		r.Grants = append(r.Grants, Grant{App: to, Kind: Leftover, GPUs: gpus, From: now, Until: now.Add(a.lease)})
	}
	for _, id := range a.Apps() { // prices leftover and payment grants too
		a.apps[id].rho = a.cachedRho(id)
	}
	for _, id := range bidders {
		if st := a.apps[id]; st.gpus == 0 {
			st.hungry++
		} else {
			st.hungry = 0
		}
	}
	return r, nil
}

// serveOverdue grants each overdue bidder (see ArbiterSettings.Patience), in
// ranking order, the lowest-rho row of its bid that fits what is left of
// the offer, for a full lease. It returns what is left and the other bids
// and waitBids, each with the rows that still fit (a bid left with none
// drops out).
func (a *Arbiter) serveOverdue(r *Round, waitBids []Bid, uninvited map[string]bool) (ftf.Offer, []Bid, []Bid) {
	free := slices.Clone(r.Offer.Free)
	served := map[string]bool{}
	for _, b := range r.Bids {
		if a.apps[b.App].hungry < a.patience {
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
		row := b.Table.Rows[best]
		a.grantRow(r, b.App, Overdue, row, 1, uninvited)
		for s, n := range row.Counts {
			free[s] -= n
		}
		served[b.App] = true
	}
	if len(served) == 0 {
		return r.Offer, r.Bids, waitBids
	}
	fitting := func(bids []Bid) []Bid {
		var out []Bid
		for _, b := range bids {
			if served[b.App] {
				continue
			}
			t := b.Table
			t.Rows = slices.DeleteFunc(slices.Clone(t.Rows), func(row ftf.Row) bool { return !covers(free, row.Counts) })
			if len(t.Rows) > 0 {
				out = append(out, Bid{App: b.App, Table: t})
			}
		}
		return out
	}
	return ftf.Offer{Cluster: r.Offer.Cluster, Free: free}, fitting(r.Bids), fitting(waitBids)
}

// grantRow leases app's row, won in the auction or overdue (kind), for
// c·Lease and, when c < 1, schedules the rest of the lease as a payment to
// an app drawn at random.
func (a *Arbiter) grantRow(r *Round, app string, kind GrantKind, row ftf.Row, c float64, uninvited map[string]bool) {
	now, full := r.At, r.At.Add(a.lease)
	end := now.Add(time.Duration(math.Round(c * float64(a.lease))))
	var gpus []topology.GPU
	for s, n := range row.Counts {
		if n > 0 {
			gpus = append(gpus, a.leaseSlots(app, kind, s, n, now, end)...)
		}
	}
	a.apps[app].lastWon = now
	r.Grants = append(r.Grants, Grant{App: app, Kind: kind, GPUs: gpus, From: now, Until: end, Keep: c})
	if !end.Before(full) {
		return
	}
	if to := a.draw(r.Invited, uninvited, app); to != "" {
		for _, g := range gpus {
			a.slots[g.Server][g.Slot].payTo, a.slots[g.Server][g.Slot].payUntil = to, full
		}
		r.Grants = append(r.Grants, Grant{App: to, Kind: Payment, GPUs: gpus, From: end, Until: full, Payer: app})
	}
	if !end.After(now) { // c = 0: the payment starts now
		for _, g := range gpus {
			a.release(g.Server, g.Slot, now)
		}
	}
}

// leaseSlots gives app the n lowest free slots of server s over [from, until).
func (a *Arbiter) leaseSlots(app string, kind GrantKind, s, n int, from, until time.Time) []topology.GPU {
	var out []topology.GPU
	for k := range a.slots[s] {
		if len(out) == n {
			break
		}
		if sl := &a.slots[s][k]; sl.app == "" && !sl.failed {
			*sl = slot{app: app, kind: kind, start: from, end: until}
			out = append(out, topology.GPU{Server: s, Slot: k})
		}
	}
	a.take(app, len(out))
	return out
}

// draw picks uniformly among the apps not invited, or, when every app was
// invited, among the invited other than payer; "" if there is none.
func (a *Arbiter) draw(invited []string, uninvited map[string]bool, payer string) string {
	var pool []string
	if len(uninvited) > 0 {
		for id := range uninvited {
			pool = append(pool, id)
		}
		slices.Sort(pool)
	} else {
		for _, id := range invited {
			if id != payer {
				pool = append(pool, id)
			}
		}
	}
	if len(pool) == 0 {
		return ""
	}
	return pool[a.rng.IntN(len(pool))]
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

// rank refreshes every app's current rho and fills r.Ranking and r.Invited.
func (a *Arbiter) rank(ctx context.Context, r *Round) {
	for _, id := range a.Apps() {
		st := a.apps[id]
		if rho, ok := a.tableRho(id); ok {
			st.rho = rho
		} else {
			rho, err := st.agent.Rho(ctx, r.At, a.c, a.heldCounts(id))
			if err == nil && (math.IsNaN(rho) || rho <= 0) {
				err = badInput("rho", id, gpufair.ErrValue, "%v is not positive", rho)
			}
			if err != nil {
				r.Errors = append(r.Errors, &AgentError{App: id, Op: "Rho", Err: err})
			} else {
				st.rho = rho
			}
		}
		r.Ranking = append(r.Ranking, Ranked{App: id, Rho: st.rho})
	}
	slices.SortStableFunc(r.Ranking, func(x, y Ranked) int {
		if c := cmp.Compare(y.Rho, x.Rho); c != 0 {
			return c
		}
		return a.apps[x.App].lastWon.Compare(a.apps[y.App].lastWon) // names already in order
	})
	n := len(r.Ranking)
	k := int(math.Ceil((1-a.filter)*float64(n) - 1e-9))
	k = min(max(k, 1), n)
	for _, rk := range r.Ranking[:k] {
		r.Invited = append(r.Invited, rk.App)
	}
}

// cachedRho is tableRho when the cached table prices the app's holding,
// else the last rho.
func (a *Arbiter) cachedRho(id string) float64 {
	if rho, ok := a.tableRho(id); ok {
		return rho
	}
	return a.apps[id].rho
}

// tableRho prices what app id holds without asking its agent: +Inf for
// nothing; else, if it holds at least what it held at its last bid, the
// lowest rho over that table's rows covered by its gains since, or RhoNone.
func (a *Arbiter) tableRho(id string) (float64, bool) {
	st := a.apps[id]
	if st.gpus == 0 {
		return math.Inf(1), true
	}
	if st.table == nil {
		return 0, false
	}
	held := a.heldCounts(id)
	for s := range held {
		if held[s] < st.base[s] {
			return 0, false
		}
	}
	rho := st.table.RhoNone
rows:
	for _, row := range st.table.Rows {
		for s, n := range row.Counts {
			if n > held[s]-st.base[s] {
				continue rows
			}
		}
		rho = min(rho, row.Rho)
	}
	return rho, true
}

// waitRho prices winning nothing, for a bid that says +Inf, as what losing
// means between rounds: waiting one lease and then holding the table's best
// row, as the agent's Rho at now+Lease says. With +Inf the one-shot auction
// would charge any winner that keeps such an app out its whole bundle
// (c_i = 0), and under scarcity every round would end that way. It stays
// +Inf if the agent fails or prices waiting no worse than the row.
func (a *Arbiter) waitRho(ctx context.Context, id string, tab ftf.BidTable, held []int, errs *[]error) float64 {
	best := tab.Rows[0]
	for _, row := range tab.Rows[1:] {
		if row.Rho < best.Rho {
			best = row
		}
	}
	counts := slices.Clone(held)
	for s, n := range best.Counts {
		counts[s] += n
	}
	rho, err := a.apps[id].agent.Rho(ctx, a.now.Add(a.lease), a.c, counts)
	if err != nil {
		*errs = append(*errs, &AgentError{App: id, Op: "Rho", Err: err})
		return math.Inf(1)
	}
	if math.IsNaN(rho) || !(rho > best.Rho) {
		return math.Inf(1)
	}
	return rho
}
