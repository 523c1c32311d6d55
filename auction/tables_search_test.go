package auction

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair/ftf"
	"pgregory.net/rapid"
)

// TestRelaxBoundsOptimum: at any prices ≥ 0 (and after subgradient steps
// from them) the Lagrangian relaxation is at least the weight of the best
// allocation found by brute force.
func TestRelaxBoundsOptimum(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tc := genTablesSized(tablesSize{3, 4, 1, 6, 6, 2}).Draw(t, "case")
		sr := newSearch(tc.offer, tc.bids)
		_, _, rows := bruteForceRows(tc.offer, tc.bids, -1)
		opt := sr.weigh(rows, -1)
		b := &bnb{search: sr, ctx: context.Background(), skip: -1, free: append([]int(nil), tc.offer.Free...),
			cur: make([]int, len(tc.bids)), pick: make([]int, len(tc.bids)), used: make([]int, len(tc.offer.Free)), grad: make([]float64, len(tc.offer.Free))}
		b.best.p, b.best.l = -1, math.Inf(-1)
		b.bestW = math.Inf(-1)
		var all []int
		for i := range tc.bids {
			b.cur[i] = -1
			all = append(all, i)
		}
		lam := make([]float64, len(tc.offer.Free))
		for s := range lam {
			lam[s] = rapid.Float64Range(0, 10).Draw(t, "price")
		}
		if u := b.relax(all, lam); u < opt-1e-9 {
			t.Fatalf("U(%v) = %v below the optimum %v", lam, u, opt)
		}
		b.bestW = opt - rapid.Float64Range(0, 5).Draw(t, "gap") // a Polyak target below the optimum
		if u := b.bound(all, lam, 0, 20); u < opt-1e-9 {
			t.Fatalf("bound after steps = %v below the optimum %v", u, opt)
		}
	})
}

// TestAuctionTablesServesMostFirst: four apps holding nothing (RhoNone
// +Inf) bid for one 2-GPU server. Every allocation leaves someone at value
// 0, so the search maximises the number served first: two apps with one
// GPU each, the two whose single GPU is worth most (product 1/0.5 · 1/1),
// rather than one app with both GPUs at its best rho 0.1.
func TestAuctionTablesServesMostFirst(t *testing.T) {
	o := racked(1, 2)
	inf := math.Inf(1)
	bids := []Bid{
		{"a", ftf.BidTable{RhoNone: inf, Rows: []ftf.Row{{Counts: []int{2}, Rho: 0.1}, {Counts: []int{1}, Rho: 4}}}},
		{"b", ftf.BidTable{RhoNone: inf, Rows: []ftf.Row{{Counts: []int{1}, Rho: 0.5}}}},
		{"c", ftf.BidTable{RhoNone: inf, Rows: []ftf.Row{{Counts: []int{1}, Rho: 2}}}},
		{"d", ftf.BidTable{RhoNone: inf, Rows: []ftf.Row{{Counts: []int{1}, Rho: 1}}}},
	}
	out, err := AuctionTables(context.Background(), o, bids)
	if err != nil {
		t.Fatal(err)
	}
	// Without b, c joins d and two of the others are served instead of
	// one, so b's presence costs the others a positive value: c_b = 0, and
	// likewise c_d = 0 (the arbiter prices RhoNone +Inf as waiting instead,
	// for this reason).
	want := &TableOutcome{Row: []int{-1, 0, -1, 0}, Value: []float64{0, 2, 0, 1}, Keep: []float64{1, 0, 1, 0}, Leftover: []int{0}}
	if diff := cmp.Diff(want, out, cmpopts.EquateApprox(0, 1e-12), cmpopts.IgnoreFields(TableOutcome{}, "Nodes")); diff != "" {
		t.Errorf("AuctionTables() mismatch (-want +got):\n%s", diff)
	}
}

// TestAuctionTablesStops: a node cap too small for the 64-GPU, 20-bidder
// benchmark instance returns the best allocation found, marked Partial,
// within the cap and with every c_i in [0, 1]; so does a 1 ms budget (the
// wall clock of a loaded machine is too noisy to test against: see
// TestArbiterBudget); a cancelled context returns its error and no
// outcome.
func TestAuctionTablesStops(t *testing.T) {
	o := racked(16, 4)
	bids := benchBids(t, o, 20, 1)
	full, err := AuctionTables(context.Background(), o, bids)
	if err != nil {
		t.Fatal(err)
	}
	if full.Partial {
		t.Fatal("unbounded search marked Partial")
	}
	for _, set := range []TableSettings{{MaxNodes: full.Nodes / 2}, {MaxNodes: 1}, {Budget: time.Millisecond}} {
		out, err := AuctionTablesWith(context.Background(), o, bids, &set)
		if err != nil {
			t.Fatalf("%+v: %v", set, err)
		}
		if set.MaxNodes > 0 && (out.Nodes > set.MaxNodes || !out.Partial) {
			t.Errorf("%+v: %d nodes, partial %v", set, out.Nodes, out.Partial)
		}
		if set.Budget > 0 && !out.Partial {
			t.Errorf("%+v: not cut short, yet the full search takes %d nodes", set, full.Nodes)
		}
		checkOutcome(t, o, bids, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if out, err := AuctionTables(ctx, o, bids); out != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: outcome %v, error %v; want context.Canceled", out != nil, err)
	}
}

// TestAuctionTablesBounded: under any node cap the outcome is a feasible
// allocation no better than the exact one, within the cap, with every c_i
// in [0, 1], and equal to the exact one when the search was not cut short.
func TestAuctionTablesBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tc := genTablesSized(tablesSize{3, 4, 1, 6, 6, 3}).Draw(t, "case")
		exact, err := AuctionTables(context.Background(), tc.offer, tc.bids)
		if err != nil {
			t.Fatal(err)
		}
		cap := rapid.IntRange(1, max(exact.Nodes, 1)).Draw(t, "maxNodes")
		out, err := AuctionTablesWith(context.Background(), tc.offer, tc.bids, &TableSettings{MaxNodes: cap})
		if err != nil {
			t.Fatal(err)
		}
		if out.Nodes > cap {
			t.Fatalf("%d nodes over a cap of %d", out.Nodes, cap)
		}
		checkOutcome(t, tc.offer, tc.bids, out)
		sr := newSearch(tc.offer, tc.bids)
		ep, el := sr.score(exact.Row, -1)
		bp, bl := sr.score(out.Row, -1)
		if better(bp, bl, ep, el) {
			t.Fatalf("bounded (%d, %v) beats exact (%d, %v)", bp, bl, ep, el)
		}
		if !out.Partial && better(ep, el, bp, bl) {
			t.Fatalf("not partial, yet exact (%d, %v) beats it (%d, %v)", ep, el, bp, bl)
		}
	})
}

// checkOutcome checks rows within the offer and c_i in [0, 1].
func checkOutcome(t interface{ Fatalf(string, ...any) }, o ftf.Offer, bids []Bid, out *TableOutcome) {
	used := make([]int, len(o.Free))
	for i, r := range out.Row {
		if k := out.Keep[i]; !(k >= 0 && k <= 1) {
			t.Fatalf("bid %d: c = %v", i, k)
		}
		if r < 0 {
			continue
		}
		for s, c := range bids[i].Table.Rows[r].Counts {
			used[s] += c
		}
	}
	for s := range used {
		if used[s] > o.Free[s] || used[s]+out.Leftover[s] != o.Free[s] {
			t.Fatalf("server %d: %d used, %d left over, %d offered", s, used[s], out.Leftover[s], o.Free[s])
		}
	}
}
