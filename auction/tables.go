package auction

import (
	"context"
	"math"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/ftf"
)

// Bid is one app's sealed bid in an auction of indivisible GPUs.
type Bid struct {
	App   string
	Table ftf.BidTable
}

// TableOutcome is the result of the partial-allocation mechanism on bid
// tables.
type TableOutcome struct {
	// Row[i] is the row of bid i in the proportionally fair allocation, or
	// -1 when bid i wins nothing.
	Row []int
	// Value[i] is 1/rho of bid i at that allocation (1/RhoNone without a
	// row, 0 if RhoNone is +Inf).
	Value []float64
	// Keep[i] is c_i: bid i holds its row's GPUs for the fraction c_i of the
	// lease; for the remaining 1-c_i they are its hidden payment. 1 for a
	// bid that wins nothing.
	Keep []float64
	// Leftover[s] is the GPUs of the offer's server s in no winning row.
	Leftover []int
	// Nodes counts branch-and-bound nodes over all n+1 searches.
	Nodes int
}

// AuctionTables runs Themis' one-shot partial-allocation auction on bid
// tables over indivisible GPUs (Pseudocode 1, lines 5-11):
//
//  1. the proportionally fair allocation: at most one row per bid, rows over
//     disjoint GPUs (per server, Σ counts ≤ the offer), maximising
//     Π_i 1/rho_i. When some bid has RhoNone = +Inf (value 0 without GPUs)
//     the product may be 0 for every choice; then, as in maximum Nash
//     welfare, the number of bids with a positive value is maximised first
//     and the product over those second;
//  2. the same without each bid i;
//  3. c_i = Π_{j≠i} v_j(x*) / Π_{j≠i} v_j(x*₋ᵢ) ≤ 1 (DESIGN.md's erratum);
//     if i's presence leaves fewer of the others with a positive value,
//     c_i = 0.
//
// The search is exact: depth-first branch and bound over bids (largest
// possible gain first), rows in table order (lowest rho first), pruned by
// the best row that still fits each remaining bid; the re-solves start from
// x* without i. Ties keep the first allocation found, so the result is
// deterministic.
//
// Granting a fraction of an indivisible bundle: bid i holds its row's GPUs
// for c_i of the lease, and the arbiter hands them on as leftovers for the
// other 1-c_i (Arbiter does so). Leftover holds only the GPUs no winning row
// uses.
//
// Every bid is validated against the offer (BidTable.Validate); bad bids
// and repeated app names are *alloc.InputError.
func AuctionTables(ctx context.Context, offer ftf.Offer, bids []Bid) (*TableOutcome, error) {
	if err := offer.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, b := range bids {
		if seen[b.App] {
			return nil, badInput("bids", b.App, alloc.ErrDuplicate, "app bids twice")
		}
		seen[b.App] = true
		if err := b.Table.Validate(offer, b.App); err != nil {
			return nil, err
		}
	}
	n := len(bids)
	sr := newSearch(offer, bids)
	out := &TableOutcome{Row: make([]int, n), Value: make([]float64, n), Keep: make([]float64, n), Leftover: append([]int(nil), offer.Free...)}
	best := sr.run(-1, nil)
	copy(out.Row, best.rows)
	for i, r := range best.rows {
		out.Value[i] = sr.value(i, r)
		if r >= 0 {
			for s, c := range bids[i].Table.Rows[r].Counts {
				out.Leftover[s] -= c
			}
		}
	}
	keep, err := sr.keeps(ctx, best.rows)
	if err != nil {
		return nil, err
	}
	out.Keep = keep
	out.Nodes = sr.nodes
	return out, nil
}

// keeps returns c_i for each bid given the chosen rows: 1 for a bid that
// wins nothing, else the others' product with i over their best product
// without i (0 if i's presence leaves fewer of them a positive value).
func (sr *search) keeps(ctx context.Context, rows []int) ([]float64, error) {
	keep := make([]float64, len(rows))
	for i := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if rows[i] < 0 {
			keep[i] = 1 // it takes nothing, so it changes nothing
			continue
		}
		start := append([]int(nil), rows...)
		start[i] = -1
		without := sr.run(i, start)
		withP, withL := sr.score(rows, i)
		if withP < without.p {
			continue
		}
		keep[i] = min(1, math.Exp(withL-without.l))
	}
	return keep, nil
}

// search is the exact product-maximising search over bid tables.
type search struct {
	offer ftf.Offer
	bids  []Bid
	// logv[i][r] is log(1/rho) of row r of bid i; base[i] the same without a
	// row (-Inf when RhoNone is +Inf). useful[i] lists rows improving on it.
	logv   [][]float64
	base   []float64
	useful [][]int
	order  []int // bids by decreasing best gain
	nodes  int
}

func newSearch(o ftf.Offer, bids []Bid) *search {
	n := len(bids)
	sr := &search{offer: o, bids: bids, logv: make([][]float64, n), base: make([]float64, n), useful: make([][]int, n)}
	gain := make([]float64, n)
	for i, b := range bids {
		sr.base[i] = -math.Log(b.Table.RhoNone)
		sr.logv[i] = make([]float64, len(b.Table.Rows))
		best := math.Inf(-1)
		for r, row := range b.Table.Rows {
			sr.logv[i][r] = -math.Log(row.Rho)
			if sr.logv[i][r] > sr.base[i] {
				sr.useful[i] = append(sr.useful[i], r)
				best = max(best, sr.logv[i][r])
			}
		}
		// Rows in table order are lowest rho first; keep that order but make
		// sure of it for hand-built tables.
		u := sr.useful[i]
		for a := 1; a < len(u); a++ {
			for b := a; b > 0 && sr.logv[i][u[b]] > sr.logv[i][u[b-1]]; b-- {
				u[b], u[b-1] = u[b-1], u[b]
			}
		}
		gain[i] = best - sr.base[i]
		if len(u) == 0 {
			gain[i] = math.Inf(-1)
		}
		sr.order = append(sr.order, i)
	}
	for a := 1; a < len(sr.order); a++ { // stable insertion sort by gain
		for b := a; b > 0 && gain[sr.order[b]] > gain[sr.order[b-1]]; b-- {
			sr.order[b], sr.order[b-1] = sr.order[b-1], sr.order[b]
		}
	}
	return sr
}

func (sr *search) value(i, r int) float64 {
	if r < 0 {
		return 1 / sr.bids[i].Table.RhoNone
	}
	return 1 / sr.bids[i].Table.Rows[r].Rho
}

// score returns the number of bids with a positive value and the sum of
// their logs, leaving out bid skip.
func (sr *search) score(rows []int, skip int) (int, float64) {
	var p int
	var l float64
	for i, r := range rows {
		if i == skip {
			continue
		}
		v := sr.base[i]
		if r >= 0 {
			v = sr.logv[i][r]
		}
		if !math.IsInf(v, -1) {
			p++
			l += v
		}
	}
	return p, l
}

type solution struct {
	rows []int
	p    int
	l    float64
}

// better reports whether (p, l) beats (bp, bl) lexicographically; l must
// exceed bl by more than rounding.
func better(p int, l float64, bp int, bl float64) bool {
	if p != bp {
		return p > bp
	}
	return l > bl+1e-12*max(1, math.Abs(bl))
}

// run searches for the best rows with bid skip left out (-1: none), starting
// from the incumbent start when given.
func (sr *search) run(skip int, start []int) solution {
	n := len(sr.bids)
	order := make([]int, 0, n)
	for _, i := range sr.order {
		if i != skip {
			order = append(order, i)
		}
	}
	best := solution{rows: make([]int, n), p: -1, l: math.Inf(-1)}
	for i := range best.rows {
		best.rows[i] = -1
	}
	if start != nil {
		copy(best.rows, start)
	}
	best.p, best.l = sr.score(best.rows, skip)
	free := append([]int(nil), sr.offer.Free...)
	cur := make([]int, n)
	for i := range cur {
		cur[i] = -1
	}
	fits := func(i, r int) bool {
		for s, c := range sr.bids[i].Table.Rows[r].Counts {
			if c > free[s] {
				return false
			}
		}
		return true
	}
	take := func(i, r, sign int) {
		for s, c := range sr.bids[i].Table.Rows[r].Counts {
			free[s] -= sign * c
		}
	}
	var dfs func(d, p int, l float64)
	dfs = func(d, p int, l float64) {
		sr.nodes++
		if d == len(order) {
			if better(p, l, best.p, best.l) {
				best.p, best.l = p, l
				copy(best.rows, cur)
			}
			return
		}
		// Bound: every remaining bid gets its best row that fits now.
		ubP, ubL := p, l
		for _, j := range order[d:] {
			v := sr.base[j]
			for _, r := range sr.useful[j] {
				if fits(j, r) {
					v = sr.logv[j][r]
					break
				}
			}
			if !math.IsInf(v, -1) {
				ubP++
				ubL += v
			}
		}
		if ubP < best.p || (ubP == best.p && !better(ubP, ubL, best.p, best.l)) {
			return
		}
		i := order[d]
		for _, r := range sr.useful[i] {
			if !fits(i, r) {
				continue
			}
			take(i, r, 1)
			cur[i] = r
			dfs(d+1, p+1, l+sr.logv[i][r])
			cur[i] = -1
			take(i, r, -1)
		}
		if math.IsInf(sr.base[i], -1) {
			dfs(d+1, p, l)
		} else {
			dfs(d+1, p+1, l+sr.base[i])
		}
	}
	dfs(0, 0, 0)
	return best
}
