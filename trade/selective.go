package trade

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// join inserts mb at i, taking its share of every type from the others in
// proportion to what they hold: every holding, and so every trade in force,
// shrinks by W/(W+w), W the weights before. Each bidder's throughput and
// its fair value shrink by the same factor, so a trade that left a bidder
// no worse off than its share still does; a bidder with a Demand values a
// holding by at most Demand GPUs, which does not scale, so restore undoes
// the trades of any such bidder left below its share. It returns the
// records that undo them.
func (m *Market) join(i int, mb *member, q int) []Trade {
	// Weights relative to the largest, as in reshare: weights of 1e308
	// summed to +Inf and made every holding NaN.
	top := max(mb.Weight, largestWeight(m.users))
	W, w := weightSum(m.users, top), mb.Weight/top
	f := W / (W + w)
	for _, u := range m.users {
		for k := range u.hold {
			u.hold[k] *= f
		}
	}
	for i := range m.open {
		m.open[i].FastGPUs *= f
		m.open[i].SlowGPUs *= f
	}
	for k := range mb.hold {
		mb.hold[k] = m.count[k] * w / (W + w)
	}
	m.users = slices.Insert(m.users, i, mb)
	return m.restore(q)
}

// leave removes the bidder at i: its trades are undone (undoFor), which
// returns it to its share of every type, and that share goes to the others
// in proportion to their weights. A bidder keeps its surplus over its fair
// value: both its holdings and its fair value grow by the same amount
// (restore undoes the trades of a bidder with a Demand for whom they do
// not).
func (m *Market) leave(i int, q int) []Trade {
	id := m.users[i].ID
	undone := m.undoFor(q, func(t Trade) bool { return t.Buyer == id || t.Seller == id })
	// Weights relative to the largest, and the others' sum taken without
	// the leaver: W − gone cancelled to 0 for weights 1e20 and 1, and
	// weights of 1e308 overflowed, both making holdings NaN or +Inf.
	top := largestWeight(m.users)
	frac := m.users[i].Weight / top / weightSum(m.users, top) // the leaver's share
	m.users = slices.Delete(m.users, i, i+1)
	top = largestWeight(m.users)
	rest := weightSum(m.users, top)
	for _, u := range m.users {
		for k := range u.hold {
			u.hold[k] += m.count[k] * frac * (u.Weight / top) / rest
		}
	}
	return append(undone, m.restore(q)...)
}

// valueTol is the relative shortfall below the value of its share within
// which restore leaves a bidder's trades in force: holdings rebuilt by
// scaling and undoing trades are off by rounding.
const valueTol = 1e-9

// restore undoes, at quantum q, the trades in force of each bidder with a
// Demand whose value (Value) is below that of its Weight's share, with any
// later trade that spent what they brought (undoFor), bidder by bidder in
// ID order until none is; it returns the records that undo them. Run never
// takes a bidder below its share, but a join shrinking every holding, a
// leave growing them, or a new Demand can: a bidder that sold fast GPUs
// for slow ones beyond a small Demand loses more than its share does.
// Bidders without a Demand value holdings linearly and are left alone.
func (m *Market) restore(q int) []Trade {
	var out []Trade
	top := largestWeight(m.users)
	T := weightSum(m.users, top)
	share := make([]float64, len(m.count))
	for {
		trading := make(map[alloc.TenantID]bool, 2*len(m.open))
		for _, t := range m.open {
			trading[t.Buyer], trading[t.Seller] = true, true
		}
		var low *member
		for _, u := range m.users {
			if u.Demand == 0 || !trading[u.ID] {
				continue
			}
			for k, c := range m.count {
				share[k] = c * (u.Weight / top) / T // as reshare gives it
			}
			if fair := u.valueOf(share); u.value() < fair-valueTol*fair {
				low = u
				break
			}
		}
		if low == nil {
			return out
		}
		id := low.ID
		out = append(out, m.undoFor(q, func(t Trade) bool { return t.Buyer == id || t.Seller == id })...)
	}
}

// SetDemand sets bidder id's Demand (Bidder.Demand) to d at quantum q, as a
// scheduler does when its jobs come and go; 0 means no limit. The trades in
// force stand, unless they leave a bidder with a Demand below the value of
// its share (a bidder that sold fast GPUs for slow ones while it had few
// jobs, say, now has more): those bidders' trades are undone, with any
// later trade that spent what they brought, and the records that undo them
// returned (and logged). It returns an *gpufair.InputError, and changes
// nothing, for an unknown bidder (gpufair.ErrUnknownID), a d that is
// negative, NaN or infinite (gpufair.ErrValue), and q below Last
// (gpufair.ErrOrder).
func (m *Market) SetDemand(id alloc.TenantID, d float64, q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	i, ok := m.find(id)
	if !ok {
		return nil, gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not in the market")
	}
	if !(d >= 0) || math.IsInf(d, 0) {
		return nil, gpufair.Invalid("Bidder.Demand", string(id), gpufair.ErrValue, "demand %v is not 0 or positive and finite", d)
	}
	m.advance(q)
	if m.users[i].Demand == d {
		return nil, nil // the trades in force were checked against it
	}
	m.users[i].Demand = d
	return m.restore(q), nil
}

// largestWeight returns the largest of the bidders' weights, 0 for none.
func largestWeight(users []*member) float64 {
	var top float64
	for _, u := range users {
		top = max(top, u.Weight)
	}
	return top
}

// weightSum returns the sum of the bidders' weights over top, at least
// their largest, which cannot overflow.
func weightSum(users []*member, top float64) float64 {
	var s float64
	for _, u := range users {
		s += u.Weight / top
	}
	return s
}

// UndoFor undoes, at quantum q, the trades in force that bidder id made,
// and any later trade that spent what they brought, and returns the
// records that undo them (also logged). The other trades stand. A
// scheduler calls it when a bidder's profiled rates change. It returns an
// *gpufair.InputError, and changes nothing, for an unknown bidder
// (gpufair.ErrUnknownID) and q below Last (gpufair.ErrOrder).
func (m *Market) UndoFor(id alloc.TenantID, q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	if _, ok := m.find(id); !ok {
		return nil, gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not in the market")
	}
	m.advance(q)
	return m.undoFor(q, func(t Trade) bool { return t.Buyer == id || t.Seller == id }), nil
}

// undoFor undoes the open trades that match, latest first. Undoing a trade
// takes back what it gave; a bidder that has since traded that away would
// be left holding less than nothing, so the latest open trade in which it
// gave that type away is undone too, until no holding is negative.
func (m *Market) undoFor(q int, match func(Trade) bool) []Trade {
	var out []Trade
	undo := func(i int) {
		t := m.open[i]
		b, _ := m.find(t.Buyer)
		s, _ := m.find(t.Seller)
		f, sl := slices.Index(m.types, t.Fast), slices.Index(m.types, t.Slow)
		buyer, seller := m.users[b], m.users[s]
		buyer.hold[f] -= t.FastGPUs
		seller.hold[f] += t.FastGPUs
		buyer.hold[sl] += t.SlowGPUs
		seller.hold[sl] -= t.SlowGPUs
		t.Quantum, t.Rate = q, -t.Rate
		out = append(out, t)
		m.open = slices.Delete(m.open, i, i+1)
	}
	for i := len(m.open) - 1; i >= 0; i-- {
		if match(m.open[i]) {
			undo(i)
		}
	}
	for {
		u, k := m.negative()
		if u == nil {
			break
		}
		i := len(m.open) - 1
		for ; i >= 0; i-- {
			t := m.open[i]
			if (t.Seller == u.ID && t.Fast == m.types[k]) || (t.Buyer == u.ID && t.Slow == m.types[k]) {
				break
			}
		}
		if i < 0 { // rounding only: no trade gave it away
			u.hold[k] = 0
			continue
		}
		undo(i)
	}
	for _, u := range m.users {
		for k, h := range u.hold {
			if h < holdTol {
				u.hold[k] = max(h, 0)
			}
		}
	}
	m.log = append(m.log, out...)
	return out
}

// negative returns a bidder holding less than nothing of type k, or nil.
func (m *Market) negative() (*member, int) {
	for _, u := range m.users {
		for k, h := range u.hold {
			if h < -holdTol*max(1, m.count[k]) {
				return u, k
			}
		}
	}
	return nil, 0
}

// SetRates replaces bidder id's rates (newly profiled ones) by rates, the
// whole map: a type rates omits has no rate afterwards (with
// Settings.Unprofiled; without it, every type must be given), so a caller
// adding one rate passes the known ones too (Bidder returns them). The
// trades in force stand; UndoFor undoes them. It returns the errors of
// Join for bad rates and gpufair.ErrUnknownID for an unknown bidder, and
// changes nothing then.
func (m *Market) SetRates(id alloc.TenantID, rates map[topology.GPUType]float64) error {
	i, ok := m.find(id)
	if !ok {
		return gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not in the market")
	}
	u := m.users[i]
	mb, err := m.member(Bidder{Tenant: u.Tenant, Rates: rates, Demand: u.Demand})
	if err != nil {
		return err
	}
	u.Rates, u.rate, u.rank = mb.Rates, mb.rate, mb.rank
	return nil
}

// Exchange makes trade t at quantum q, as given: t.Buyer gives t.Seller
// t.SlowGPUs GPUs of type t.Slow for t.FastGPUs GPUs of type t.Fast (the
// Quantum and Rate fields are set from q and the amounts). It is for a
// trade decided elsewhere, such as one replayed from a log. It returns an
// *gpufair.InputError, and changes nothing, for an unknown buyer or
// seller or the same bidder on both sides (gpufair.ErrUnknownID,
// gpufair.ErrDuplicate), an unknown type (gpufair.ErrUnknownType), a fast
// type that is not faster than the slow one, amounts that are not
// positive and finite, whose ratio overflows, or more than the giver holds
// (gpufair.ErrValue),
// and q below Last (gpufair.ErrOrder).
func (m *Market) Exchange(t Trade, q int) error {
	if err := m.order(q); err != nil {
		return err
	}
	bi, okb := m.find(t.Buyer)
	si, oks := m.find(t.Seller)
	f, s := slices.Index(m.types, t.Fast), slices.Index(m.types, t.Slow)
	switch {
	case !okb:
		return gpufair.Invalid("Trade.Buyer", string(t.Buyer), gpufair.ErrUnknownID, "not in the market")
	case !oks:
		return gpufair.Invalid("Trade.Seller", string(t.Seller), gpufair.ErrUnknownID, "not in the market")
	case bi == si:
		return gpufair.Invalid("Trade.Seller", string(t.Seller), gpufair.ErrDuplicate, "trades with itself")
	case f < 0:
		return gpufair.Invalid("Trade.Fast", string(t.Fast), gpufair.ErrUnknownType, "not in the market")
	case s < 0:
		return gpufair.Invalid("Trade.Slow", string(t.Slow), gpufair.ErrUnknownType, "not in the market")
	case f <= s:
		return gpufair.Invalid("Trade.Fast", string(t.Fast), gpufair.ErrValue, "%q is not faster than %q", t.Fast, t.Slow)
	case !(t.FastGPUs > 0) || math.IsInf(t.FastGPUs, 0):
		return gpufair.Invalid("Trade.FastGPUs", "", gpufair.ErrValue, "%v %s is not positive and finite", t.FastGPUs, t.Fast)
	case !(t.SlowGPUs > 0) || math.IsInf(t.SlowGPUs, 0):
		return gpufair.Invalid("Trade.SlowGPUs", "", gpufair.ErrValue, "%v %s is not positive and finite", t.SlowGPUs, t.Slow)
	case math.IsInf(t.SlowGPUs/t.FastGPUs, 0):
		// The rate is logged and marshalled: +Inf (1 for 1e-320) broke MarshalJSON.
		return gpufair.Invalid("Trade.FastGPUs", "", gpufair.ErrValue, "rate %v %s for %v %s overflows", t.SlowGPUs, t.Slow, t.FastGPUs, t.Fast)
	case m.users[si].hold[f] < t.FastGPUs-holdTol:
		return gpufair.Invalid("Trade.FastGPUs", string(t.Seller), gpufair.ErrValue, "%v %s sold, %v held", t.FastGPUs, t.Fast, m.users[si].hold[f])
	case m.users[bi].hold[s] < t.SlowGPUs-holdTol:
		return gpufair.Invalid("Trade.SlowGPUs", string(t.Buyer), gpufair.ErrValue, "%v %s paid, %v held", t.SlowGPUs, t.Slow, m.users[bi].hold[s])
	}
	buyer, seller := m.users[bi], m.users[si]
	seller.hold[f] = max(seller.hold[f]-t.FastGPUs, 0)
	buyer.hold[f] += t.FastGPUs
	buyer.hold[s] = max(buyer.hold[s]-t.SlowGPUs, 0)
	seller.hold[s] += t.SlowGPUs
	t.Quantum, t.Rate = q, t.SlowGPUs/t.FastGPUs
	m.advance(q)
	m.open = append(m.open, t)
	m.log = append(m.log, t)
	return nil
}

type marketJSON struct {
	Types   []topology.GPUType `json:"types"`
	Count   []float64          `json:"count"`
	Bidders []bidderJSON       `json:"bidders"`
	Open    []Trade            `json:"open,omitempty"`
	Log     []Trade            `json:"log,omitempty"`
	Last    int                `json:"last"`
	Ran     bool               `json:"ran"`
}

type bidderJSON struct {
	Bidder
	Hold []float64 `json:"hold"`
}

// MarshalJSON writes the market's whole state: bidders, holdings, the
// trades in force and the log.
func (m *Market) MarshalJSON() ([]byte, error) {
	v := marketJSON{Types: m.types, Count: m.count, Open: m.open, Log: m.log, Last: m.last, Ran: m.ran}
	for _, u := range m.users {
		v.Bidders = append(v.Bidders, bidderJSON{Bidder: u.Bidder, Hold: u.hold})
	}
	return json.Marshal(v)
}

// UnmarshalJSON replaces the state of a market built by NewMarket with one
// written by MarshalJSON for the same types and counts. It returns an
// error wrapping gpufair.ErrSnapshot, and changes nothing, for another
// market's state, one that fails the checks of Join, or open trades that
// name a bidder or type not in it.
func (m *Market) UnmarshalJSON(b []byte) error {
	bad := func(format string, args ...any) error {
		return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, format, args...)
	}
	var v marketJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return bad("market: %v", err)
	}
	if !slices.Equal(v.Types, m.types) || !slices.Equal(v.Count, m.count) {
		return bad("a market over other types or counts")
	}
	users := make([]*member, 0, len(v.Bidders))
	for _, bj := range v.Bidders {
		mb, err := m.member(bj.Bidder)
		if err != nil {
			return bad("bidder %q: %v", bj.ID, err)
		}
		if len(bj.Hold) != len(m.types) || slices.ContainsFunc(bj.Hold, func(h float64) bool { return !(h >= 0) || math.IsInf(h, 0) }) {
			return bad("bidder %q holds %v", bj.ID, bj.Hold)
		}
		if n := len(users); n > 0 && users[n-1].ID >= mb.ID {
			return bad("bidders out of ID order at %q", mb.ID)
		}
		mb.hold = bj.Hold
		users = append(users, mb)
	}
	// Undoing an open trade indexes its bidders and types (undoFor).
	known := func(id alloc.TenantID) bool {
		return slices.ContainsFunc(users, func(u *member) bool { return u.ID == id })
	}
	for _, t := range v.Open {
		if !known(t.Buyer) || !known(t.Seller) || !slices.Contains(m.types, t.Fast) || !slices.Contains(m.types, t.Slow) {
			return bad("open trade %v names an unknown bidder or type", t)
		}
	}
	m.users, m.open, m.log, m.last, m.ran = users, v.Open, v.Log, v.Last, v.Ran
	return nil
}

// Bidder returns bidder id as it stands: its weight, known rates and
// Demand.
func (m *Market) Bidder(id alloc.TenantID) (Bidder, bool) {
	i, ok := m.find(id)
	if !ok {
		return Bidder{}, false
	}
	u := m.users[i].Bidder
	rates := make(map[topology.GPUType]float64, len(m.types))
	for k, t := range m.types {
		if r := m.users[i].rate[k]; r > 0 {
			rates[t] = r
		}
	}
	u.Rates = rates
	return u, true
}

// Rates returns bidder id's rates in the order of Types, 0 where unknown.
func (m *Market) Rates(id alloc.TenantID) ([]float64, bool) {
	i, ok := m.find(id)
	if !ok {
		return nil, false
	}
	return slices.Clone(m.users[i].rate), true
}
