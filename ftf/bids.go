package ftf

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// Offer is the set of GPUs the arbiter puts up for auction: Free[s] GPUs of
// Cluster.Servers[s]. GPUs on one server are interchangeable, so an offer,
// like a bid, counts GPUs per server instead of naming slots.
type Offer struct {
	Cluster topology.Cluster
	Free    []int
}

// Validate reports an invalid cluster (wrapping the cluster's error, so
// topology.ErrInvalid too), a Free of the wrong length, and counts below zero
// or above a server's slots.
func (o Offer) Validate() error {
	if err := o.Cluster.Validate(); err != nil {
		return badInput("Offer.Cluster", "", gpufair.ErrValue, "%w", err)
	}
	if len(o.Free) != len(o.Cluster.Servers) {
		return badInput("Offer.Free", "", gpufair.ErrShape, "%d counts for %d servers", len(o.Free), len(o.Cluster.Servers))
	}
	for s, n := range o.Free {
		if n < 0 || n > o.Cluster.Servers[s].GPUs {
			return badInput("Offer.Free", o.Cluster.Servers[s].Name, gpufair.ErrValue, "%d free of %d slots", n, o.Cluster.Servers[s].GPUs)
		}
	}
	return nil
}

// Total returns the number of GPUs offered.
func (o Offer) Total() int {
	var n int
	for _, x := range o.Free {
		n += x
	}
	return n
}

// Row is one line of a bid table: Counts[s] GPUs of the offer's server s,
// and the rho the app expects if it wins them (on top of what it holds).
type Row struct {
	Counts []int
	Rho    float64
}

// GPUs returns the number of GPUs in the row.
func (r Row) GPUs() int {
	var n int
	for _, x := range r.Counts {
		n += x
	}
	return n
}

// BidTable is an app's bid (Themis' Table 2): rho for each allocation it
// asks for. RhoNone is rho_old, the app's rho if it wins nothing; it may be
// +Inf (an app holding no GPUs never finishes). Its valuation of a row is
// 1/Rho, the quantity the partial-allocation auction multiplies.
type BidTable struct {
	RhoNone float64
	Rows    []Row
}

// Validate checks the table against the offer it answers: RhoNone positive
// or +Inf, every row's rho positive and finite, each rho's reciprocal (the
// value an auction maximises the product of) finite too, so no rho below
// about 5.6e-309, counts of the offer's length
// within what the offer frees on each server (a row naming GPUs not offered
// is gpufair.ErrUnknownID), no empty row and no row listed twice
// (gpufair.ErrDuplicate). id labels the errors. An offer that Offer.Validate
// refuses is its error (a Free longer than the cluster's servers indexed
// past them).
func (t BidTable) Validate(o Offer, id string) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if math.IsNaN(t.RhoNone) || t.RhoNone <= 0 || math.IsInf(1/t.RhoNone, 1) {
		return badInput("BidTable.RhoNone", id, gpufair.ErrValue, "%v is not positive, or its reciprocal overflows", t.RhoNone)
	}
	seen := make(map[string]int, len(t.Rows))
	for i, r := range t.Rows {
		if math.IsNaN(r.Rho) || math.IsInf(r.Rho, 0) || r.Rho <= 0 || math.IsInf(1/r.Rho, 1) {
			return badInput("BidTable.Rows.Rho", id, gpufair.ErrValue, "row %d: rho %v is not positive and finite, or its reciprocal overflows", i, r.Rho)
		}
		if len(r.Counts) != len(o.Free) {
			return badInput("BidTable.Rows.Counts", id, gpufair.ErrShape, "row %d: %d counts for an offer of %d servers", i, len(r.Counts), len(o.Free))
		}
		n := 0
		for s, c := range r.Counts {
			if c < 0 {
				return badInput("BidTable.Rows.Counts", id, gpufair.ErrValue, "row %d: %d GPUs on server %q", i, c, o.Cluster.Servers[s].Name)
			}
			if c > o.Free[s] {
				return badInput("BidTable.Rows.Counts", id, gpufair.ErrUnknownID, "row %d: %d GPUs on server %q, which offers %d", i, c, o.Cluster.Servers[s].Name, o.Free[s])
			}
			n += c
		}
		if n == 0 {
			return badInput("BidTable.Rows.Counts", id, gpufair.ErrValue, "row %d asks for no GPUs (RhoNone prices that)", i)
		}
		key := countsKey(r.Counts)
		if j, ok := seen[key]; ok {
			return badInput("BidTable.Rows", id, gpufair.ErrDuplicate, "rows %d and %d ask for the same GPUs", j, i)
		}
		seen[key] = i
	}
	return nil
}

// countsKey returns a map key for a count vector.
func countsKey(counts []int) string {
	b := make([]byte, 0, 3*len(counts))
	for _, c := range counts {
		b = strconv.AppendInt(b, int64(c), 10)
		b = append(b, ',')
	}
	return string(b)
}

// RhoFunc is an app's rho for a placement (held GPUs plus a row), such as
// SingleJob.Rho or a closure over RhoHalving.
type RhoFunc func(Placement) (float64, error)

// TableSettings bounds a bid table. The zero value, or a nil pointer, gives
// the defaults; a negative field is an error.
type TableSettings struct {
	// MaxGPUs is the most GPUs a row asks for; 0 means all offered.
	MaxGPUs int
	// PerShape is the most rows kept per (GPU count, locality); 0 means 4.
	PerShape int
	// MaxRows caps the table after sorting; 0 means 256.
	MaxRows int
}

// NewTable builds an app's bid table over an offer, enumerating server
// combinations: exhaustive for small offers (section 4.3.3's example), but
// its time grows combinatorially with the servers (seconds for 24 servers
// of 8 GPUs) and it takes no context. Bids is the bounded builder an agent
// of a large cluster uses. held[s] is what the app
// already holds on server s (nil for nothing); rho is priced on held plus
// each row.
//
// Enumeration: GPUs on one server are interchangeable and rho depends on a
// placement only through its GPU count and locality, so rows are count
// vectors, not GPU subsets. For each count g up to MaxGPUs, rows use the
// fewest servers that can hold g GPUs, or one more (spreading wider only
// repeats a rho already in the table); servers are combined in index order
// and each (g, locality) keeps its first PerShape vectors, which gives the
// auction disjoint alternatives. Rows that do not improve on RhoNone are
// dropped. The table is sorted by rho, then GPUs, then counts
// lexicographically, and cut to MaxRows.
//
// It returns the offer's validation error and an *gpufair.InputError for
// a nil rho (gpufair.ErrEmpty), a negative setting, held of the wrong
// length or beyond a server's slots, and a rho that is NaN, not positive or
// so small that its reciprocal overflows (gpufair.ErrValue: BidTable.Validate
// refuses it), besides rho's own errors.
func NewTable(o Offer, held []int, rho RhoFunc, s *TableSettings) (BidTable, error) {
	if err := o.Validate(); err != nil {
		return BidTable{}, err
	}
	if rho == nil {
		return BidTable{}, badInput("rho", "", gpufair.ErrEmpty, "nil rho function")
	}
	var set TableSettings
	if s != nil {
		set = *s
	}
	if err := checkSettings("TableSettings", setting{"MaxGPUs", set.MaxGPUs}, setting{"PerShape", set.PerShape}, setting{"MaxRows", set.MaxRows}); err != nil {
		return BidTable{}, err
	}
	if set.PerShape <= 0 {
		set.PerShape = 4
	}
	if set.MaxRows <= 0 {
		set.MaxRows = 256
	}
	total := o.Total()
	if set.MaxGPUs <= 0 || set.MaxGPUs > total {
		set.MaxGPUs = total
	}
	n := len(o.Free)
	if held == nil {
		held = make([]int, n)
	}
	if err := checkHeld(o, held); err != nil {
		return BidTable{}, err
	}
	// price is rho for an app holding counts[s] GPUs on each server.
	price := func(counts []int) (float64, error) {
		loc, err := o.Cluster.LocalityOfCounts(counts)
		if err != nil {
			return 0, err
		}
		r, err := rho(Placement{GPUs: sum(counts), Locality: loc})
		if err != nil {
			return 0, err
		}
		if !validRho(r) {
			return 0, badInput("RhoFunc", "", gpufair.ErrValue, "rho %v for %v is not positive, or its reciprocal overflows", r, counts)
		}
		return r, nil
	}
	none, err := price(held)
	if err != nil {
		return BidTable{}, err
	}
	t := BidTable{RhoNone: none}

	var servers []int // servers with free GPUs, by index
	for s, f := range o.Free {
		if f > 0 {
			servers = append(servers, s)
		}
	}
	combined := make([]int, n)
	row := make([]int, n)
	for g := 1; g <= set.MaxGPUs; g++ {
		// k0: the fewest servers that can hold g GPUs.
		free := make([]int, 0, len(servers))
		for _, s := range servers {
			free = append(free, o.Free[s])
		}
		sort.Sort(sort.Reverse(sort.IntSlice(free)))
		k0, acc := 0, 0
		for acc < g {
			acc += free[k0]
			k0++
		}
		kept := [3]int{}
		for k := k0; k <= min(k0+1, len(servers), g); k++ {
			var rowErr error
			combinations(len(servers), k, func(idx []int) bool {
				room := 0
				for _, i := range idx {
					room += o.Free[servers[i]]
				}
				if room < g {
					return true
				}
				for s := range combined {
					combined[s] = held[s]
				}
				for _, i := range idx {
					combined[servers[i]]++
				}
				loc, err := o.Cluster.LocalityOfCounts(combined)
				if err != nil {
					rowErr = err
					return false
				}
				if kept[loc] >= set.PerShape {
					return true
				}
				compositions(g, idx, func(i int) int { return o.Free[servers[i]] }, func(parts []int) bool {
					for s := range row {
						row[s] = 0
					}
					for j, i := range idx {
						row[servers[i]] = parts[j]
					}
					for s := range combined {
						combined[s] = held[s] + row[s]
					}
					r, err := price(combined)
					if err != nil {
						rowErr = err
						return false
					}
					if r < none {
						t.Rows = append(t.Rows, Row{Counts: slices.Clone(row), Rho: r})
					}
					kept[loc]++
					return kept[loc] < set.PerShape
				})
				return rowErr == nil
			})
			if rowErr != nil {
				return BidTable{}, rowErr
			}
		}
	}
	SortRows(t.Rows)
	if len(t.Rows) > set.MaxRows {
		t.Rows = t.Rows[:set.MaxRows]
	}
	return t, nil
}

// setting is a count of a settings struct, by name.
type setting struct {
	name string
	v    int
}

// checkSettings returns an *gpufair.InputError on the first of the counts
// of the settings struct named typ that is negative: 0 means its default,
// and a negative count has no meaning.
func checkSettings(typ string, counts ...setting) error {
	for _, c := range counts {
		if c.v < 0 {
			return badInput(typ+"."+c.name, "", gpufair.ErrValue, "%d is negative", c.v)
		}
	}
	return nil
}

// validRho reports whether a table may hold r as a rho: positive (+Inf
// only for RhoNone, which Bids and NewTable never put in a row) and not so
// small that 1/r overflows, as BidTable.Validate requires (5e-324 made a
// table that its own Validate refused).
func validRho(r float64) bool { return r > 0 && !math.IsInf(1/r, 1) }

// SortRows sorts rows by rho, then GPU count, then counts lexicographically:
// the table order NewTable guarantees. A NaN rho, which BidTable.Validate
// refuses, sorts first, as cmp.Compare orders it, so that the order does not
// depend on the rows' order before.
func SortRows(rows []Row) {
	sort.SliceStable(rows, func(a, b int) bool {
		ra, rb := rows[a], rows[b]
		if c := cmp.Compare(ra.Rho, rb.Rho); c != 0 {
			return c < 0
		}
		if ga, gb := ra.GPUs(), rb.GPUs(); ga != gb {
			return ga < gb
		}
		return slices.Compare(ra.Counts, rb.Counts) < 0
	})
}

func sum(xs []int) int {
	var n int
	for _, x := range xs {
		n += x
	}
	return n
}

// combinations calls f with each k-subset of 0..n-1 in lexicographic order
// until f returns false.
func combinations(n, k int, f func([]int) bool) {
	if k > n || k <= 0 {
		return
	}
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		if !f(idx) {
			return
		}
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// compositions calls f with each way of writing g as len(idx) parts, part j
// in [1, capOf(idx[j])], largest parts first, until f returns false.
func compositions(g int, idx []int, capOf func(int) int, f func([]int) bool) {
	parts := make([]int, len(idx))
	suffix := make([]int, len(idx)+1) // most GPUs idx[j:] can hold
	for j := len(idx) - 1; j >= 0; j-- {
		suffix[j] = suffix[j+1] + capOf(idx[j])
	}
	var rec func(j, left int) bool
	rec = func(j, left int) bool {
		if j == len(idx)-1 {
			parts[j] = left
			return f(parts)
		}
		rest := len(idx) - 1 - j // each later part needs at least 1
		for p := min(capOf(idx[j]), left-rest); p >= 1; p-- {
			if left-p > suffix[j+1] {
				break
			}
			parts[j] = p
			if !rec(j+1, left-p) {
				return false
			}
		}
		return true
	}
	if g >= len(idx) && g <= suffix[0] {
		rec(0, g)
	}
}
