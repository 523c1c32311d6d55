package auction

import (
	"context"
	"math"
	"time"

	"github.com/gpufair/gpufair"
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
	// Keep[i] is c_i, the fraction of its row bid i keeps; the remaining
	// 1-c_i is its hidden payment. For divisible goods that is the fraction
	// c_i of the lease; the Arbiter, whose GPUs are not divisible, grants
	// ⌊c_i·g⌋ of the row's g GPUs, and one more with probability equal to
	// the fraction left over, for the whole lease. 1 for a bid that wins
	// nothing.
	Keep []float64
	// Leftover[s] is the GPUs of the offer's server s in no winning row.
	Leftover []int
	// Nodes counts branch-and-bound nodes over all n+1 searches.
	Nodes int
	// Partial reports that a search stopped at its bound (TableSettings)
	// before proving its allocation optimal: Row is then the best found.
	Partial bool
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
// Ordering of outcomes: allocations are compared by the number of bids
// with a positive value first (a bid with RhoNone = +Inf counts only when
// it wins a row), then by Σ log 1/rho over those; so when more apps holding
// nothing bid than the offer can serve, as many as possible are served and
// the product decides among such allocations. Products within a relative
// 1e-12 of each other are ties: the allocation found first stands, which
// is deterministic for given bids but not otherwise specified.
//
// The search is exact: depth-first branch and bound over bids (largest
// possible gain first). Rows that another row of the same bid beats while
// using no more GPUs on any server are dropped. Each node is bounded by the
// Lagrangian relaxation of the servers' capacities (prices λ_s ≥ 0 on each
// server's free GPUs: Σ_j max(none_j, best fitting row's log value − λ·its
// GPUs) + λ·free, with none_j = -M for RhoNone = +Inf and M larger than any
// difference of log products), tightened by a few subgradient steps from
// the parent's prices; branches are tried best adjusted value first.
// Greedy allocations and relaxed choices that happen to fit supply
// incumbents, and each re-solve starts from x* without i. The worst case is
// exponential in the number of bids; BenchmarkAuctionTables measures about
// 4,400 nodes for 20 bids over 16 servers (docs/benchmarks/themis.md). The
// search checks ctx every 256 nodes; AuctionTablesWith bounds its nodes or
// its time and returns the best allocation found.
//
// Granting a fraction of an indivisible bundle is the caller's: Arbiter
// grants c_i of a row's GPUs in expectation and gives the rest away in the
// same round. Leftover holds only the GPUs no winning row uses.
//
// Every bid is validated against the offer (BidTable.Validate); bad bids
// and repeated app names are *gpufair.InputError. A cancelled ctx returns its
// error and no outcome.
func AuctionTables(ctx context.Context, offer ftf.Offer, bids []Bid) (*TableOutcome, error) {
	return AuctionTablesWith(ctx, offer, bids, nil)
}

// TableSettings bound the bid-table search. A nil *TableSettings and the
// zero value mean no bound but ctx: the search is exact.
type TableSettings struct {
	// MaxNodes caps the branch-and-bound nodes over all n+1 searches; 0
	// means no cap. The cap is deterministic: the same bids give the same
	// outcome.
	MaxNodes int
	// Budget caps the wall time of the call; 0 means no cap. A budget that
	// binds makes the outcome depend on the machine's speed.
	Budget time.Duration
}

// AuctionTablesWith is AuctionTables within the bounds of s (nil: none).
//
// A bounded search returns the best allocation it found, never an error
// for running out: each search starts from a greedy allocation (and each
// re-solve from x* without its bidder, improved row by row) and the branch
// and bound improves on it while the bound lasts. Half of the bound goes to
// x*, the rest to the re-solves of the winners, shared equally as they
// come. The outcome is then marked Partial. Since a re-solve never returns
// less than x* without its bidder, every c_i stays at most 1; it may be
// higher than the exact search's (a smaller hidden payment).
func AuctionTablesWith(ctx context.Context, offer ftf.Offer, bids []Bid, s *TableSettings) (*TableOutcome, error) {
	if err := offer.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, b := range bids {
		if seen[b.App] {
			return nil, badInput("bids", b.App, gpufair.ErrDuplicate, "app bids twice")
		}
		seen[b.App] = true
		if err := b.Table.Validate(offer, b.App); err != nil {
			return nil, err
		}
	}
	return auctionTables(ctx, offer, bids, s)
}

// auctionTables is AuctionTablesWith on bids already validated.
func auctionTables(ctx context.Context, offer ftf.Offer, bids []Bid, s *TableSettings) (*TableOutcome, error) {
	n := len(bids)
	sr := newSearch(offer, bids)
	if s != nil {
		if s.MaxNodes < 0 || s.Budget < 0 {
			return nil, badInput("TableSettings", "", gpufair.ErrValue, "negative bound: %d nodes, %v", s.MaxNodes, s.Budget)
		}
		sr.limit = newLimit(s.MaxNodes, s.Budget)
	}
	out := &TableOutcome{Row: make([]int, n), Value: make([]float64, n), Keep: make([]float64, n), Leftover: append([]int(nil), offer.Free...)}
	sr.limit.share(2, sr.nodes)
	best, err := sr.run(ctx, -1, nil)
	if err != nil {
		return nil, err
	}
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
	out.Partial = sr.partial
	return out, nil
}

// keeps returns c_i for each bid given the chosen rows: 1 for a bid that
// wins nothing, else the others' product with i over their best product
// without i (0 if i's presence leaves fewer of them a positive value).
// The winners' re-solves share what is left of the search's limit.
func (sr *search) keeps(ctx context.Context, rows []int) ([]float64, error) {
	keep := make([]float64, len(rows))
	winners := 0
	for _, r := range rows {
		if r >= 0 {
			winners++
		}
	}
	for i := range rows {
		if rows[i] < 0 {
			keep[i] = 1 // it takes nothing, so it changes nothing
			continue
		}
		sr.limit.share(winners, sr.nodes)
		winners--
		start := append([]int(nil), rows...)
		start[i] = -1
		without, err := sr.run(ctx, i, start)
		if err != nil {
			return nil, err
		}
		withP, withL := sr.score(rows, i)
		if withP < without.p {
			continue
		}
		keep[i] = min(1, math.Exp(withL-without.l))
	}
	return keep, nil
}
