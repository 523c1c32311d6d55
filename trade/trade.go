package trade

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Sentinel errors; bad input is reported as *gpufair.InputError wrapping one
// of these or one of alloc's sentinels. Test with errors.Is.
var (
	// ErrMaxTrades reports a run stopped by Settings.MaxTrades before
	// trading was exhausted; the trades made so far stand.
	ErrMaxTrades = errors.New("trade: trade limit reached")
)

// holdTol is the GPUs below which a holding counts as empty: trades move
// amounts computed by division, and a residue of 1e-15 GPUs must not make a
// bidder a buyer or seller again.
const holdTol = 1e-12

// moveTol is the relative error allowed in each of the four holdings a
// trade changes: an amount far below the holding it joins or leaves is
// partly or wholly rounded away (with Settings.Unit 1e-17, a buyer's K80s
// fell while its V100s stayed put), so such a trade is not made.
const moveTol = 1e-9

// Bidder is a tenant in the market: its Weight (Gandiva_fair's tickets)
// sets its share of every GPU type, and Rates is the rate at which one GPU
// of each type runs its jobs (throughput in work per second, or speedup over
// some reference; only ratios matter). The Weight must be positive and
// finite, and may lie outside [alloc.MinWeight, alloc.MaxWeight]
// (stride.GandivaFair bids tickets of up to 1e300); shares are taken
// relative to the largest weight, so a weight below the largest by more
// than float64's range holds nothing. Rates must be positive and finite,
// and given for every type of the market (Settings.Unprofiled relaxes
// this).
//
// Demand, if positive, is the most GPUs the bidder's jobs can use at once
// (the sum of their gangs): its value of a holding is then the throughput of
// its Demand fastest GPUs, and GPUs beyond them are worth nothing to it
// (Market.Value). Zero means no limit. It must be zero or positive and
// finite.
type Bidder struct {
	alloc.Tenant
	Rates  map[topology.GPUType]float64
	Demand float64 `json:"Demand,omitempty"`
}

// Trade is one exchange: Buyer gives Seller SlowGPUs GPUs of type Slow for
// FastGPUs GPUs of type Fast, at Rate = SlowGPUs/FastGPUs. Rate is negative
// when the record undoes an earlier trade with the same fields (Figure 9).
type Trade struct {
	Quantum  int
	Fast     topology.GPUType
	Slow     topology.GPUType
	Buyer    alloc.TenantID
	Seller   alloc.TenantID
	FastGPUs float64
	SlowGPUs float64
	Rate     float64
}

// String prints the trade as a row of Gandiva_fair's Figure 9: bought,
// sold, rate.
func (t Trade) String() string {
	return fmt.Sprintf("%s/%s %s/%s %.3g", t.Fast, t.Buyer, t.Slow, t.Seller, t.Rate)
}

// Settings tunes trading. A nil *Settings means the zero value.
type Settings struct {
	// Unit is the most fast GPUs one trade moves; zero means no limit, so
	// each trade moves as much as the buyer can pay for and the seller
	// holds. Table 3 of the paper trades one V100 at a time (Unit 1).
	// NewMarket refuses a Unit below MinUnit.
	Unit float64
	// MaxTrades bounds the trades of one Run; zero or negative means
	// 1<<20.
	MaxTrades int
	// Selective undoes trades selectively, as a running scheduler does:
	// a bidder joining takes its share of every type from everyone in
	// proportion, so the trades in force shrink in the same proportion and
	// none is undone; a bidder leaving undoes only its own trades (and any
	// later trade that spent what they brought), and its share goes to the
	// others in proportion to their weights. Without it, Join and Leave
	// undo every trade in force (Figure 9's replay).
	Selective bool
	// Unprofiled lets a bidder omit the rates of types its jobs have not
	// run on yet: it holds its share of such a type but neither buys nor
	// sells it until SetRates gives the rate.
	Unprofiled bool
}

// MinUnit is the smallest positive Settings.Unit, the smallest GPU count a
// market takes (alloc.MinCount): a Unit of 1e-17 made a million trades
// that rounding all but wiped out.
const MinUnit = alloc.MinCount

// Market is Gandiva_fair's GPU trading (section 3.4) among bidders (the
// paper's users): every bidder starts with its Weight's share of every GPU
// type; then, for each pair of a fast and a slow type, the bidder with the
// highest speedup (rate on the fast type over rate on the slow one) among
// those holding slow GPUs buys fast GPUs from the bidder with the lowest
// speedup among those holding fast GPUs. The
// price, in slow GPUs per fast GPU, is the second-highest bid: the speedup
// of the best other bidder holding slow GPUs, if it lies above the seller's;
// otherwise the buyer and seller split the surplus (the mean of their
// speedups). A trade happens only when the buyer's speedup exceeds the
// seller's, so the seller gains and the buyer does not lose (it gains unless
// the two highest bids tie). Pairs are visited fastest fast type first,
// then slowest slow type first, until no pair trades. Bidders are ranked by
// speedup, highest first, ties by ID: the buyer is the first-ranked bidder
// holding slow GPUs, the seller the last-ranked bidder holding fast GPUs.
// A trade whose amounts are so small beside the holdings they change that
// rounding would move any of them by more than a relative 1e-9 is not
// made: the side whose holding limited it is passed over for that pair
// (or, if Settings.Unit limited it, the pair ends). So rounding never
// moves a holding by more than that fraction of what the trade records.
//
// A bidder with a Demand (Bidder.Demand) values a holding by its Demand
// fastest GPUs (Value), and each trade is cut short so that neither side's
// value falls: the seller sells only if the first fast GPU it gives up is
// worth less to it than the slow ones it receives, and only while the slow
// GPUs it receives are worth at least what it gives up (slow GPUs beyond
// its Demand are worth nothing); the buyer buys only fast GPUs its jobs can
// use, and only while they are worth at least what it pays. A side that
// can trade nothing at the price is passed over for the pair. The price is
// set as above, from the bids alone, but a bidder whose Demand the GPUs it
// holds of the fast type and faster ones fill bids nothing for another
// fast GPU, and sets no price. No trade Run makes lowers either
// side's value, so Run leaves no bidder below the value of its Weight's
// share. The cut costs O(T²) per trade with a Demand, T types.
//
// Second-price trading is not strategy-proof in general (OEF section 2.4;
// shared/ERRATA.md): a bidder who inflates its speedup can raise the price it
// is paid.
//
// When a bidder joins or leaves, the trades in force are undone (logged with
// negative rates), shares are recomputed for the new set of bidders, and the
// next Run trades again. With Settings.Selective, and on SetDemand, the
// trades of a bidder with a Demand that the change leaves below the value of
// its share are undone.
//
// Every method that takes a quantum q (Run, Exchange, Join, Leave, Undo,
// UndoFor) refuses, with gpufair.ErrOrder and changing nothing, a q below
// the latest quantum any of them was given (Last), so the log's quanta
// never decrease.
//
// The zero value is not usable; build one with NewMarket.
type Market struct {
	types []topology.GPUType // slowest first
	count []float64
	s     Settings
	users []*member // by ID
	log   []Trade
	open  []Trade // trades in force
	last  int     // the latest quantum given to a method
	ran   bool    // whether last is set
}

type member struct {
	Bidder
	rate []float64 // by type index
	hold []float64
	rank []int // type indices, fastest for the bidder first (value's greedy)
}

// NewMarket returns a market without bidders over count[k] GPUs of types[k],
// with types listed from slowest to fastest. It returns an
// *gpufair.InputError for an empty, mismatched or duplicated type list, for
// counts that are not finite and within [alloc.MinCount, alloc.MaxCount]
// (gpufair.ErrValue, or gpufair.ErrTooLarge above), and for a
// Settings.Unit that is negative, NaN, infinite or positive but below
// MinUnit (gpufair.ErrValue).
func NewMarket(types []topology.GPUType, count []float64, s *Settings) (*Market, error) {
	c, err := alloc.NewCapacity(types, count)
	if err != nil {
		return nil, err
	}
	m := &Market{types: c.Types, count: c.Count}
	if s != nil {
		m.s = *s
	}
	if u := m.s.Unit; u != 0 && !(u >= MinUnit) || math.IsInf(u, 0) {
		return nil, gpufair.Invalid("Settings.Unit", "", gpufair.ErrValue, "%v is not 0 or finite and at least %v", u, MinUnit)
	}
	if m.s.MaxTrades <= 0 {
		m.s.MaxTrades = 1 << 20
	}
	return m, nil
}

// Types returns the market's GPU types, slowest first.
func (m *Market) Types() []topology.GPUType { return slices.Clone(m.types) }

// Bidders returns the IDs of the market's bidders, in order.
func (m *Market) Bidders() []alloc.TenantID {
	ids := make([]alloc.TenantID, len(m.users))
	for i, u := range m.users {
		ids[i] = u.ID
	}
	return ids
}

// order refuses a quantum q below the latest one given, with
// gpufair.ErrOrder.
func (m *Market) order(q int) error {
	if m.ran && q < m.last {
		return gpufair.Invalid("Quantum", "", gpufair.ErrOrder, "quantum %d after %d", q, m.last)
	}
	return nil
}

// advance records q as the latest quantum given; order has accepted it.
func (m *Market) advance(q int) { m.ran, m.last = true, q }

func (m *Market) find(id alloc.TenantID) (int, bool) {
	return slices.BinarySearchFunc(m.users, id, func(u *member, id alloc.TenantID) int { return cmp.Compare(u.ID, id) })
}

func (m *Market) member(u Bidder) (*member, error) {
	id := string(u.ID)
	if u.ID == "" {
		return nil, gpufair.Invalid("Tenant.ID", "", gpufair.ErrValue, "empty tenant ID")
	}
	if !(u.Weight > 0) || math.IsInf(u.Weight, 0) {
		return nil, gpufair.Invalid("Tenant.Weight", id, gpufair.ErrValue, "weight %v is not positive and finite", u.Weight)
	}
	if d := u.Demand; !(d >= 0) || math.IsInf(d, 0) {
		return nil, gpufair.Invalid("Bidder.Demand", id, gpufair.ErrValue, "demand %v is not 0 or positive and finite", d)
	}
	mb := &member{Bidder: u, rate: make([]float64, len(m.types)), hold: make([]float64, len(m.types))}
	for k, t := range m.types {
		r, ok := u.Rates[t]
		if !ok && m.s.Unprofiled {
			continue // rate 0: unknown
		}
		if !ok {
			return nil, gpufair.Invalid("Bidder.Rates", id, gpufair.ErrUnknownType, "no rate for %q", t)
		}
		if !(r > 0) || math.IsInf(r, 0) {
			return nil, gpufair.Invalid("Bidder.Rates", id, gpufair.ErrValue, "rate %v on %q", r, t)
		}
		mb.rate[k] = r
	}
	// Speedups are ratios of rates: a spread beyond alloc's limit makes
	// them overflow (a rate of 1.8e-310 gave an infinite price and a
	// million empty trades).
	top := slices.Max(mb.rate)
	for k, r := range mb.rate {
		if alloc.BelowRateSpread(r, top) {
			return nil, gpufair.Invalid("Bidder.Rates", id, gpufair.ErrValue, "rate %v on %q is more than %v times below the largest, %v", r, m.types[k], alloc.MaxRateSpread, top)
		}
	}
	// A throughput is Σ rate·holding, at most the largest rate times all
	// the GPUs: rates of 1e300 over 1e12 GPUs made Value +Inf.
	var gpus float64
	for _, c := range m.count {
		gpus += c
	}
	if math.IsInf(top*gpus, 0) {
		return nil, gpufair.Invalid("Bidder.Rates", id, gpufair.ErrTooLarge, "rate %v times %v GPUs overflows", top, gpus)
	}
	// Fastest first; of equal rates, the faster type of the market first.
	mb.rank = make([]int, len(m.types))
	for k := range mb.rank {
		mb.rank[k] = len(m.types) - 1 - k
	}
	slices.SortStableFunc(mb.rank, func(a, b int) int { return cmp.Compare(mb.rate[b], mb.rate[a]) })
	if len(u.Rates) != len(m.types) || m.s.Unprofiled {
		for _, t := range slices.Sorted(maps.Keys(u.Rates)) {
			if !slices.Contains(m.types, t) {
				return nil, gpufair.Invalid("Bidder.Rates", id, gpufair.ErrUnknownType, "%q", t)
			}
		}
	}
	return mb, nil
}

// Join adds a bidder at quantum q. The trades in force are undone first
// (only shrunk, with Settings.Selective, but for those of a bidder with a
// Demand the shrinking leaves below the value of its share); the records
// that undo them are returned (and logged). It returns an
// *gpufair.InputError for an empty or known ID, a weight or rates that are
// not positive and finite or that spread over more than
// alloc.MaxRateSpread (gpufair.ErrValue), rates so large that the bidder's
// throughput over every GPU overflows (gpufair.ErrTooLarge), rates for
// unknown or missing types (gpufair.ErrUnknownType), a Demand that is
// negative, NaN or infinite (gpufair.ErrValue), and q below Last
// (gpufair.ErrOrder); it changes nothing then.
func (m *Market) Join(u Bidder, q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	mb, err := m.member(u)
	if err != nil {
		return nil, err
	}
	i, ok := m.find(u.ID)
	if ok {
		return nil, gpufair.Invalid("Tenant.ID", string(u.ID), gpufair.ErrDuplicate, "already in the market")
	}
	m.advance(q)
	if m.s.Selective {
		return m.join(i, mb, q), nil
	}
	undone := m.undo(q)
	m.users = slices.Insert(m.users, i, mb)
	m.reshare()
	return undone, nil
}

// Leave removes a bidder, undoing the trades in force as Join does (only
// the bidder's own, with Settings.Selective, and those of a bidder with a
// Demand left below the value of its share). It returns an
// *gpufair.InputError, and changes nothing, for an unknown bidder
// (gpufair.ErrUnknownID) and q below Last (gpufair.ErrOrder).
func (m *Market) Leave(id alloc.TenantID, q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	i, ok := m.find(id)
	if !ok {
		return nil, gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not in the market")
	}
	m.advance(q)
	if m.s.Selective {
		return m.leave(i, q), nil
	}
	undone := m.undo(q)
	m.users = slices.Delete(m.users, i, i+1)
	m.reshare()
	return undone, nil
}

// Undo undoes every trade in force at quantum q, returning each bidder to
// its Weight's share of every type, and returns the records that undo them
// (also logged). Gandiva_fair undoes trades when a job's profile changes.
// It returns an *gpufair.InputError wrapping gpufair.ErrOrder, and changes
// nothing, for q below Last.
func (m *Market) Undo(q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	m.advance(q)
	undone := m.undo(q)
	m.reshare()
	return undone, nil
}

func (m *Market) undo(q int) []Trade {
	var out []Trade
	for i := len(m.open) - 1; i >= 0; i-- {
		t := m.open[i]
		t.Quantum, t.Rate = q, -t.Rate
		out = append(out, t)
	}
	m.open = m.open[:0]
	m.log = append(m.log, out...)
	return out
}

// reshare gives every bidder its Weight's share of every type. Weights are
// taken relative to the largest, so that their sum cannot overflow (two
// weights of 1e308 made a holding +Inf).
func (m *Market) reshare() {
	top := largestWeight(m.users)
	T := weightSum(m.users, top)
	for _, u := range m.users {
		for k := range u.hold {
			u.hold[k] = m.count[k] * (u.Weight / top) / T
		}
	}
}

// Holdings returns bidder id's GPUs of each type, in the order of Types.
func (m *Market) Holdings(id alloc.TenantID) ([]float64, bool) {
	i, ok := m.find(id)
	if !ok {
		return nil, false
	}
	return slices.Clone(m.users[i].hold), true
}

// Value returns bidder id's throughput: Σ_k rate_k·holding_k, over the
// types whose rates are known. With a Demand D, it is the most its jobs get
// from the holding on at most D GPUs: max Σ_k rate_k·y_k over 0 ≤ y_k ≤
// holding_k, Σ_k y_k ≤ D, which the greedy that takes the bidder's fastest
// types first attains.
func (m *Market) Value(id alloc.TenantID) (float64, bool) {
	i, ok := m.find(id)
	if !ok {
		return 0, false
	}
	return m.users[i].value(), true
}

func (u *member) value() float64 { return u.valueOf(u.hold) }

// valueOf returns u's value of holding h (Value). It is concave in h, so
// along a trade it rises, then stays, then falls.
func (u *member) valueOf(h []float64) float64 {
	var v, n float64
	for _, x := range h {
		n += x
	}
	if u.Demand == 0 || n <= u.Demand {
		for k, x := range h {
			v += u.rate[k] * x
		}
		return v
	}
	left := u.Demand
	for _, k := range u.rank {
		x := min(h[k], left)
		v += u.rate[k] * x
		if left -= x; left <= 0 {
			break
		}
	}
	return v
}

// slopeTol is the slack, relative to the rates a trade moves
// (rate_f·|df| + rate_s·|ds|), within which reach takes a change in value
// per GPU traded for zero: a seller must gain more at the first GPU, and
// a change less negative does not count as a loss.
const slopeTol = 1e-12

// reach returns how many fast GPUs, up to x, bidder u trades along a trade
// that changes its holding of type f by df and of type s by ds per fast GPU
// (df = −1, ds = price for the seller; df = 1, ds = −price for the buyer)
// before its value (Value) would fall below what it is now; a seller must
// also gain at the first GPU it sells (or it trades none), and a buyer
// stops where it would come to hold type-f GPUs its jobs cannot use.
// Without a Demand, or where the holding stays within it, the value is
// linear and the price alone decides: reach returns x.
//
// The value is concave and piecewise linear in the GPUs traded, with a kink
// wherever the GPUs of the bidder's j fastest types cross its Demand;
// reach takes the slope of each piece at its midpoint. Cost: O(T²), T
// types.
func (u *member) reach(f, s int, df, ds, x float64, seller bool) float64 {
	D := u.Demand
	if D == 0 {
		return x
	}
	var n float64
	for _, h := range u.hold {
		n += h
	}
	if n <= D && n+x*(df+ds) <= D {
		return x
	}
	d := func(k int) float64 {
		switch k {
		case f:
			return df
		case s:
			return ds
		}
		return 0
	}
	// cum[j] + y·dc[j] is what the bidder holds of its j fastest types
	// once y fast GPUs are traded.
	cum, dc := make([]float64, len(u.rank)+1), make([]float64, len(u.rank)+1)
	for j, k := range u.rank {
		cum[j+1], dc[j+1] = cum[j]+u.hold[k], dc[j]+d(k)
	}
	var cuts []float64
	for j := 1; j < len(cum); j++ {
		if dc[j] != 0 {
			if y := (D - cum[j]) / dc[j]; y > 0 && y < x {
				cuts = append(cuts, y)
			}
		}
	}
	slices.Sort(cuts)
	cuts = append(cuts, x)
	tol := slopeTol * (u.rate[f]*math.Abs(df) + u.rate[s]*math.Abs(ds))
	a, gain := 0.0, 0.0 // gain: the change in value from 0 to a
	for _, b := range cuts {
		if b <= a {
			continue
		}
		y := (a + b) / 2
		var slope float64
		usable := true
		for j, k := range u.rank {
			room, h := D-(cum[j]+y*dc[j]), u.hold[k]+y*d(k)
			switch {
			case room <= 0: // none of type k is used
			case room >= h: // all of it is
				slope += u.rate[k] * d(k)
			default: // what the faster types leave
				slope -= u.rate[k] * dc[j]
			}
			if k == f {
				usable = room-h >= -holdTol
			}
		}
		switch {
		case a == 0 && seller && !(slope > tol):
			return 0
		case !seller && !usable:
			return a
		case slope < -tol && gain+slope*(b-a) < 0:
			return a + gain/-slope // where the value is back to where it was
		}
		gain += slope * (b - a)
		a = b
	}
	return x
}

// wants reports whether u's jobs would use one more GPU of type f: u has
// no Demand, or what it holds of f and of the types it ranks before f
// falls short of it.
func (u *member) wants(f int) bool {
	if u.Demand == 0 {
		return true
	}
	var n float64
	for _, k := range u.rank {
		n += u.hold[k]
		if k == f {
			break
		}
	}
	return n < u.Demand-holdTol
}

// Allocation returns the holdings as an allocation, one row per bidder in
// ID order.
func (m *Market) Allocation() *alloc.Allocation {
	rows := make([]string, len(m.users))
	for i, u := range m.users {
		rows[i] = string(u.ID)
	}
	a := alloc.NewAllocation(rows, alloc.Capacity{Types: m.types, Count: m.count})
	for i, u := range m.users {
		copy(a.GPUs[i], u.hold)
	}
	return a
}

// Log returns every trade and undo so far, oldest first.
func (m *Market) Log() []Trade { return slices.Clone(m.log) }

// Last returns the latest quantum given to Run, Exchange, Join, Leave, Undo
// or UndoFor, and false before the first: each of them refuses an earlier
// quantum.
func (m *Market) Last() (int, bool) { return m.last, m.ran }

// Open returns the trades in force, oldest first.
func (m *Market) Open() []Trade { return slices.Clone(m.open) }

// Run trades at quantum q until no pair of types offers a trade, and returns
// the trades made. q must not be below Last (trades of one quantum may
// span several calls): an earlier q is refused with an
// *gpufair.InputError wrapping gpufair.ErrOrder. If Settings.MaxTrades is
// reached it
// returns the trades made with an error wrapping ErrMaxTrades. ctx is
// checked before the first trade and between trades; once it is done, Run
// returns the trades made with an error wrapping ctx.Err(). Either way the
// trades made stand, and a later Run goes on from them.
//
// Cost: O(P·(n log n + trades)) per pass over the P type pairs, n bidders.
func (m *Market) Run(ctx context.Context, q int) ([]Trade, error) {
	if err := m.order(q); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("trade: quantum %d: %w", q, err)
	}
	m.advance(q)
	var out []Trade
	order := make([]int, 0, len(m.users))
	speed := make([]float64, len(m.users))
	for {
		traded := false
		for f := len(m.types) - 1; f > 0; f-- {
			for s := 0; s < f; s++ {
				n, err := m.pair(ctx, q, f, s, order, speed, &out)
				if err != nil {
					return out, err
				}
				traded = traded || n > 0
			}
		}
		if !traded {
			return out, nil
		}
	}
}

// pair trades fast type f against slow type s until no trade is left.
func (m *Market) pair(ctx context.Context, q, f, s int, order []int, speed []float64, out *[]Trade) (int, error) {
	order = order[:0]
	for i, u := range m.users {
		if u.rate[f] > 0 && u.rate[s] > 0 { // both rates known
			order = append(order, i)
			speed[i] = u.rate[f] / u.rate[s]
		}
	}
	// Highest speedup first; ties to the smaller ID (bidders are by ID).
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(speed[b], speed[a]) })
	n := 0
	b, e := 0, len(order)-1
	// r is the next bidder ranked between buyer and seller. Only the
	// buyer's and seller's slow holdings change during a pair, so a bidder
	// skipped for holding no slow GPUs stays skipped and r only moves on.
	r := 1
	for {
		for b < len(order) && m.users[order[b]].hold[s] <= holdTol {
			b++
		}
		for e >= 0 && m.users[order[e]].hold[f] <= holdTol {
			e--
		}
		if b >= e || !(speed[order[b]] > speed[order[e]]) {
			return n, nil
		}
		if len(*out) >= m.s.MaxTrades {
			return n, fmt.Errorf("%w: %d trades", ErrMaxTrades, len(*out))
		}
		if err := ctx.Err(); err != nil {
			return n, fmt.Errorf("trade: quantum %d after %d trades: %w", q, len(*out), err)
		}
		buyer, seller := m.users[order[b]], m.users[order[e]]
		sb, ss := speed[order[b]], speed[order[e]]
		price := (sb + ss) / 2
		r = max(r, b+1)
		// The second bid is that of a bidder that could buy instead: one
		// holding slow GPUs to pay with whose jobs would use another fast
		// GPU. One whose Demand its GPUs of f and faster types already
		// fill would buy none, so it sets no price. Neither changes
		// during the pair (only the buyer's and seller's holdings do), so
		// r only moves on.
		for r < e && (m.users[order[r]].hold[s] <= holdTol || !m.users[order[r]].wants(f)) {
			r++
		}
		if r < e && speed[order[r]] > ss {
			price = speed[order[r]]
		}
		amount := min(seller.hold[f], buyer.hold[s]/price)
		if m.s.Unit > 0 {
			amount = min(amount, m.s.Unit)
		}
		// by is what limited the amount.
		const (
			bySeller = iota
			byBuyer
			byUnit
		)
		by := byBuyer
		switch {
		case amount == seller.hold[f]:
			by = bySeller
		case m.s.Unit > 0 && amount == m.s.Unit:
			by = byUnit
		}
		// A bidder with a Demand trades only while its value rises
		// (seller) or does not fall (buyer, on GPUs its jobs can use).
		if x := seller.reach(f, s, -1, price, amount, true); x < amount {
			amount, by = x, bySeller
		}
		if x := buyer.reach(f, s, 1, -price, amount, false); x < amount {
			amount, by = x, byBuyer
		}
		pay := amount * price
		sellF, buyF, buyS, sellS := seller.hold[f]-amount, buyer.hold[f]+amount, buyer.hold[s]-pay, seller.hold[s]+pay
		if !(amount > 0) || !moved(seller.hold[f]-sellF, amount) || !moved(buyF-buyer.hold[f], amount) || !moved(buyer.hold[s]-buyS, pay) || !moved(sellS-seller.hold[s], pay) {
			// Nothing to trade, or rounding would eat part of the
			// trade. Pass over the side whose holding or Demand limited
			// it, a residue too small to trade; a Unit too small for the
			// holdings ends the pair.
			switch by {
			case bySeller:
				e--
			case byUnit:
				return n, nil
			default:
				b++
			}
			continue
		}
		seller.hold[f], buyer.hold[f], buyer.hold[s], seller.hold[s] = sellF, buyF, buyS, sellS
		for _, h := range []*float64{&seller.hold[f], &buyer.hold[s]} {
			if *h <= holdTol {
				*h = 0
			}
		}
		t := Trade{Quantum: q, Fast: m.types[f], Slow: m.types[s], Buyer: buyer.ID, Seller: seller.ID, FastGPUs: amount, SlowGPUs: pay, Rate: price}
		*out = append(*out, t)
		m.open = append(m.open, t)
		m.log = append(m.log, t)
		n++
	}
}

// moved reports whether a holding changed by got, where a trade meant it
// to change by want, to within moveTol of want.
func moved(got, want float64) bool { return math.Abs(got-want) <= moveTol*want }
