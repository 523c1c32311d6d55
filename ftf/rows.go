package ftf

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
)

// CountsFunc prices a holding: rho for an app that keeps counts[s] GPUs of
// each server s until it finishes. Unlike RhoFunc it sees which servers, so
// a type-aware app can price GPU types differently.
type CountsFunc func(counts []int) (float64, error)

// BidSettings bound a bid table built by Bids. The zero value, or a nil
// pointer, gives the defaults; a negative Demand, Alternatives or MaxRows is
// an error.
type BidSettings struct {
	// Demand is the most GPUs the app can use at once (app_demand_max),
	// held GPUs included; rows never take it past that. 0 means no limit.
	Demand int
	// Alternatives is how many rows each GPU count keeps, on pairwise
	// distinct servers; 0 means 2.
	Alternatives int
	// MaxRows is the row budget: the table keeps its MaxRows rows of
	// lowest rho; 0 means 32.
	MaxRows int
	// Usable, if not nil, reports whether the app can run on server s's
	// GPUs (a type it has a rate on); rows use no other server.
	Usable func(s int) bool
}

// Defaults of BidSettings.
const (
	defaultAlternatives = 2
	defaultMaxRows      = 32
)

// Bids builds an app's bid table over an offer (Themis section 4.3.2:
// rows over GPU subsets of the offer that fit the app's demand), in time
// linear in the servers for each GPU count, however large the offer.
// held[s] is what the app holds on server s (nil for nothing); each row is
// priced by price(held + row), RhoNone by price(held).
//
// Rows. GPU counts g run over 1..8, then doubling, and the most the app
// can still use (min(Demand − held, offered)); for each g, candidates are,
// in this order: single servers that fit g, servers where the app already
// holds GPUs first, then the tightest fit; failing that, the fewest servers
// of one rack (racks that fit g, tightest first, their fullest servers
// first); failing that, the fewest servers of the offer, fullest first.
// Each g keeps its first Alternatives candidates on pairwise distinct
// servers, so that apps competing for one server each have somewhere else
// to go.
//
// Pruning rule: a row is dropped if it does not improve on RhoNone, or if
// a row with fewer GPUs has a rho at least as low (GPUs it would not put
// to use). The table is sorted as SortRows does and cut to MaxRows.
//
// It returns the offer's validation error, an *gpufair.InputError for a
// nil price (gpufair.ErrEmpty), a negative setting, held of the wrong
// length or beyond a server's slots and for a price that is NaN, not
// positive or so small that its reciprocal overflows (gpufair.ErrValue:
// BidTable.Validate refuses it), price's own errors, and ctx's error
// (checked for each GPU count).
func Bids(ctx context.Context, o Offer, held []int, price CountsFunc, s *BidSettings) (BidTable, error) {
	if err := o.Validate(); err != nil {
		return BidTable{}, err
	}
	if price == nil {
		return BidTable{}, badInput("price", "", gpufair.ErrEmpty, "nil price function")
	}
	var set BidSettings
	if s != nil {
		set = *s
	}
	if err := checkSettings("BidSettings", setting{"Demand", set.Demand}, setting{"Alternatives", set.Alternatives}, setting{"MaxRows", set.MaxRows}); err != nil {
		return BidTable{}, err
	}
	if set.Alternatives <= 0 {
		set.Alternatives = defaultAlternatives
	}
	if set.MaxRows <= 0 {
		set.MaxRows = defaultMaxRows
	}
	n := len(o.Free)
	if held == nil {
		held = make([]int, n)
	}
	if err := checkHeld(o, held); err != nil {
		return BidTable{}, err
	}
	counts := make([]int, n)
	priced := func(row []int) (float64, error) {
		for i := range counts {
			counts[i] = held[i] + row[i]
		}
		r, err := price(counts)
		if err != nil {
			return 0, err
		}
		if !validRho(r) {
			return 0, badInput("CountsFunc", "", gpufair.ErrValue, "rho %v for %v is not positive, or its reciprocal overflows", r, counts)
		}
		return r, nil
	}
	none, err := priced(make([]int, n))
	if err != nil {
		return BidTable{}, err
	}
	t := BidTable{RhoNone: none}
	var servers []int // usable servers with free GPUs
	for sv, f := range o.Free {
		if f > 0 && (set.Usable == nil || set.Usable(sv)) {
			servers = append(servers, sv)
		}
	}
	offered := 0
	for _, sv := range servers {
		offered += o.Free[sv]
	}
	most := offered
	if set.Demand > 0 {
		most = min(most, set.Demand-sum(held))
	}
	b := rowBuilder{o: o, held: held, servers: servers}
	for _, g := range bidSizes(most) {
		if err := ctx.Err(); err != nil {
			return BidTable{}, err
		}
		for _, row := range b.rows(g, set.Alternatives) {
			r, err := priced(row)
			if err != nil {
				return BidTable{}, err
			}
			if r < none {
				t.Rows = append(t.Rows, Row{Counts: row, Rho: r})
			}
		}
	}
	SortRows(t.Rows)
	// Rows are by rho, then GPUs: a row is dominated when an earlier row
	// (rho as low) asks for fewer GPUs. Rows of as many GPUs stay: they
	// are alternatives on other servers.
	kept := t.Rows[:0]
	fewest := math.MaxInt
	for _, r := range t.Rows {
		if g := r.GPUs(); g <= fewest {
			kept = append(kept, r)
			fewest = g
		}
	}
	t.Rows = kept
	if len(t.Rows) > set.MaxRows {
		t.Rows = t.Rows[:set.MaxRows]
	}
	return t, nil
}

func checkHeld(o Offer, held []int) error {
	if len(held) != len(o.Free) {
		return badInput("held", "", gpufair.ErrShape, "%d counts for %d servers", len(held), len(o.Free))
	}
	for sv, h := range held {
		if h < 0 || h+o.Free[sv] > o.Cluster.Servers[sv].GPUs {
			return badInput("held", o.Cluster.Servers[sv].Name, gpufair.ErrValue, "%d held with %d free of %d slots", h, o.Free[sv], o.Cluster.Servers[sv].GPUs)
		}
	}
	return nil
}

// bidSizes returns the GPU counts Bids prices: 1..8, then doubling, and
// most itself.
func bidSizes(most int) []int {
	var out []int
	for g := 1; g <= most; {
		out = append(out, g)
		if g < 8 {
			g++
		} else {
			g *= 2
		}
	}
	if most > 0 && (len(out) == 0 || out[len(out)-1] != most) {
		out = append(out, most)
	}
	return out
}

// rowBuilder finds the candidate rows of one GPU count (see Bids).
type rowBuilder struct {
	o       Offer
	held    []int
	servers []int // usable servers with free GPUs, by index
}

// rows returns up to alt rows of g GPUs on pairwise distinct servers.
func (b rowBuilder) rows(g, alt int) [][]int {
	used := map[int]bool{}
	var out [][]int
	add := func(row []int) bool {
		for sv, k := range row {
			if k > 0 && used[sv] {
				return false
			}
		}
		for sv, k := range row {
			if k > 0 {
				used[sv] = true
			}
		}
		out = append(out, row)
		return len(out) < alt
	}
	free := func(sv int) int {
		if used[sv] {
			return 0
		}
		return b.o.Free[sv]
	}
	// Single servers: where it holds GPUs first, then the tightest fit.
	one := slices.Clone(b.servers)
	slices.SortStableFunc(one, func(x, y int) int {
		if c := cmp.Compare(b.held[y], b.held[x]); c != 0 {
			return c
		}
		return cmp.Compare(b.o.Free[x], b.o.Free[y])
	})
	for _, sv := range one {
		if b.o.Free[sv] >= g && !used[sv] {
			row := make([]int, len(b.o.Free))
			row[sv] = g
			if !add(row) {
				return out
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	// One rack: racks that hold g, tightest first.
	racks := map[string][]int{}
	var keys []string
	for _, sv := range b.servers {
		k := b.o.Cluster.RackOf(sv)
		if racks[k] == nil {
			keys = append(keys, k)
		}
		racks[k] = append(racks[k], sv)
	}
	for {
		best, room := "", 0
		for _, k := range keys {
			r := 0
			for _, sv := range racks[k] {
				r += free(sv)
			}
			if r >= g && (best == "" || r < room) {
				best, room = k, r
			}
		}
		if best == "" {
			break
		}
		if !add(b.fill(racks[best], g, free)) {
			return out
		}
	}
	if len(out) > 0 {
		return out
	}
	// The whole offer, fullest servers first.
	for {
		room := 0
		for _, sv := range b.servers {
			room += free(sv)
		}
		if room < g || !add(b.fill(b.servers, g, free)) {
			return out
		}
	}
}

// fill takes g GPUs from servers, fullest first (free says how many each
// has), on as few servers as it can.
func (b rowBuilder) fill(servers []int, g int, free func(int) int) []int {
	order := slices.Clone(servers)
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(free(y), free(x)) })
	row := make([]int, len(b.o.Free))
	for _, sv := range order {
		take := min(g, free(sv))
		row[sv] = take
		g -= take
		if g == 0 {
			break
		}
	}
	return row
}
