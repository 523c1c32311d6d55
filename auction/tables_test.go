package auction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// racked returns servers×gpus slots, four servers to a rack, all free.
func racked(servers, gpus int) ftf.Offer {
	var o ftf.Offer
	for s := 0; s < servers; s++ {
		o.Cluster.Servers = append(o.Cluster.Servers, topology.Server{Name: fmt.Sprintf("s%02d", s), Rack: fmt.Sprintf("r%d", s/4), Type: "v100", GPUs: gpus})
		o.Free = append(o.Free, gpus)
	}
	return o
}

func TestAuctionTablesTwoApps(t *testing.T) {
	// Two apps on one 2-GPU server, each already holding GPUs elsewhere
	// (rho 1 without more): 1 GPU gives rho 0.4, 2 GPUs rho 0.25. One GPU
	// each: product 2.5·2.5 = 6.25 beats 4·1. Without either app, the other
	// takes both (value 4), so c = 2.5/4 = 0.625 each.
	o := racked(1, 2)
	tab := ftf.BidTable{RhoNone: 1, Rows: []ftf.Row{{Counts: []int{2}, Rho: 0.25}, {Counts: []int{1}, Rho: 0.4}}}
	out, err := AuctionTables(context.Background(), o, []Bid{{"a", tab}, {"b", tab}})
	if err != nil {
		t.Fatal(err)
	}
	want := &TableOutcome{Row: []int{1, 1}, Value: []float64{2.5, 2.5}, Keep: []float64{0.625, 0.625}, Leftover: []int{0}}
	if diff := cmp.Diff(want, out, cmpopts.EquateApprox(0, 1e-12), cmpopts.IgnoreFields(TableOutcome{}, "Nodes")); diff != "" {
		t.Errorf("AuctionTables() mismatch (-want +got):\n%s", diff)
	}
}

func TestAuctionTablesBadBids(t *testing.T) {
	o := racked(2, 2)
	good := ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{{Counts: []int{1, 0}, Rho: 1}}}
	for _, tc := range []struct {
		name string
		bids []Bid
		want error
	}{
		{"rho zero", []Bid{{"a", ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{{Counts: []int{1, 0}, Rho: 0}}}}}, gpufair.ErrValue},
		{"rho negative", []Bid{{"a", ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{{Counts: []int{1, 0}, Rho: -3}}}}}, gpufair.ErrValue},
		{"rho NaN", []Bid{{"a", ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{{Counts: []int{1, 0}, Rho: math.NaN()}}}}}, gpufair.ErrValue},
		{"GPUs not offered", []Bid{{"a", ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{{Counts: []int{3, 0}, Rho: 1}}}}}, gpufair.ErrUnknownID},
		{"duplicate rows", []Bid{{"a", ftf.BidTable{RhoNone: 2, Rows: []ftf.Row{good.Rows[0], good.Rows[0]}}}}, gpufair.ErrDuplicate},
		{"app twice", []Bid{{"a", good}, {"a", good}}, gpufair.ErrDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AuctionTables(context.Background(), o, tc.bids)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.ID != "a" {
				t.Errorf("error = %v, want an *gpufair.InputError for app a wrapping %v", err, tc.want)
			}
		})
	}
}

// genTables draws a small offer and bid tables with distinct rows.
func genTables() *rapid.Generator[tablesCase] { return genTablesSized(tablesSize{3, 3, 0, 4, 4, 4}) }

// tablesSize bounds genTablesSized: servers, slots per server, the fewest
// free, bids, rows per bid, and one bid in inf has RhoNone = +Inf.
type tablesSize struct{ servers, slots, minFree, bids, rows, inf int }

// genTablesSized draws an offer and bid tables with distinct rows within sz.
func genTablesSized(sz tablesSize) *rapid.Generator[tablesCase] {
	return rapid.Custom(func(t *rapid.T) tablesCase {
		ns := rapid.IntRange(1, sz.servers).Draw(t, "servers")
		o := racked(ns, 0)
		for s := range o.Cluster.Servers {
			o.Cluster.Servers[s].GPUs = rapid.IntRange(1, sz.slots).Draw(t, "slots")
			o.Free[s] = rapid.IntRange(min(sz.minFree, o.Cluster.Servers[s].GPUs), o.Cluster.Servers[s].GPUs).Draw(t, "free")
		}
		nb := rapid.IntRange(1, sz.bids).Draw(t, "bids")
		rows := rapid.IntRange(0, sz.rows)
		if sz.minFree > 0 { // crowded: every bid asks for something
			rows = rapid.IntRange(sz.rows/2, sz.rows)
		}
		bids := make([]Bid, nb)
		for i := range bids {
			none := rapid.Float64Range(0.5, 8).Draw(t, "rhoNone")
			if rapid.IntRange(1, sz.inf).Draw(t, "inf") == 1 {
				none = math.Inf(1)
			}
			tab := ftf.BidTable{RhoNone: none}
			seen := map[string]bool{}
			for r := rows.Draw(t, "rows"); r > 0; r-- {
				counts := make([]int, ns)
				total := 0
				for s := range counts {
					counts[s] = rapid.IntRange(0, o.Free[s]).Draw(t, "count")
					total += counts[s]
				}
				if total == 0 || seen[fmt.Sprint(counts)] {
					continue
				}
				seen[fmt.Sprint(counts)] = true
				tab.Rows = append(tab.Rows, ftf.Row{Counts: counts, Rho: rapid.Float64Range(0.1, 10).Draw(t, "rho")})
			}
			bids[i] = Bid{App: fmt.Sprint("app", i), Table: tab}
		}
		return tablesCase{o, bids}
	})
}

type tablesCase struct {
	offer ftf.Offer
	bids  []Bid
}

// bruteForce returns the best (positive count, log product) over every
// choice of at most one row per bid on disjoint GPUs, leaving out skip.
func bruteForce(o ftf.Offer, bids []Bid, skip int) (int, float64) {
	p, l, _ := bruteForceRows(o, bids, skip)
	return p, l
}

// bruteForceRows is bruteForce that also returns a best choice of rows.
func bruteForceRows(o ftf.Offer, bids []Bid, skip int) (int, float64, []int) {
	bestP, bestL := -1, math.Inf(-1)
	free := append([]int(nil), o.Free...)
	cur, best := make([]int, len(bids)), make([]int, len(bids))
	for i := range cur {
		cur[i] = -1
	}
	var rec func(i, p int, l float64)
	rec = func(i, p int, l float64) {
		if i == len(bids) {
			if p > bestP || (p == bestP && l > bestL) {
				bestP, bestL = p, l
				copy(best, cur)
			}
			return
		}
		if i == skip {
			rec(i+1, p, l)
			return
		}
		t := bids[i].Table
		if math.IsInf(t.RhoNone, 1) {
			rec(i+1, p, l)
		} else {
			rec(i+1, p+1, l-math.Log(t.RhoNone))
		}
	rows:
		for ri, r := range t.Rows {
			for s, c := range r.Counts {
				if c > free[s] {
					continue rows
				}
			}
			for s, c := range r.Counts {
				free[s] -= c
			}
			cur[i] = ri
			rec(i+1, p+1, l-math.Log(r.Rho))
			cur[i] = -1
			for s, c := range r.Counts {
				free[s] += c
			}
		}
	}
	rec(0, 0, 0)
	return bestP, bestL, best
}

func TestAuctionTablesMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkAgainstBruteForce(t, genTables().Draw(t, "case")) })
}

// TestAuctionTablesMatchesBruteForceCrowded draws more bids and rows than
// the offer can serve, half of them holding nothing (RhoNone +Inf), so that
// the Lagrangian bound, the count of served bids and the warm-started
// re-solves all matter.
func TestAuctionTablesMatchesBruteForceCrowded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkAgainstBruteForce(t, genTablesSized(tablesSize{3, 4, 1, 6, 6, 2}).Draw(t, "case"))
	})
}

// checkAgainstBruteForce checks AuctionTables' allocation, log product and
// every c_i against exhaustive enumeration.
func checkAgainstBruteForce(t *rapid.T, tc tablesCase) {
	{
		out, err := AuctionTables(context.Background(), tc.offer, tc.bids)
		if err != nil {
			t.Fatal(err)
		}
		// The chosen rows are disjoint and within the offer.
		used := make([]int, len(tc.offer.Free))
		var p int
		var l float64
		for i, r := range out.Row {
			if r >= 0 {
				for s, c := range tc.bids[i].Table.Rows[r].Counts {
					used[s] += c
				}
			}
			if out.Value[i] > 0 {
				p++
				l += math.Log(out.Value[i])
			}
		}
		for s := range used {
			if used[s]+out.Leftover[s] != tc.offer.Free[s] {
				t.Fatalf("server %d: rows use %d, leftover %d, offer %d", s, used[s], out.Leftover[s], tc.offer.Free[s])
			}
		}
		wantP, wantL := bruteForce(tc.offer, tc.bids, -1)
		if p != wantP || math.Abs(l-wantL) > 1e-9 {
			t.Fatalf("search (%d, %v), brute force (%d, %v)", p, l, wantP, wantL)
		}
		// c_i from brute force.
		for i := range tc.bids {
			if !(out.Keep[i] >= 0 && out.Keep[i] <= 1) {
				t.Fatalf("c[%d] = %v outside [0, 1]", i, out.Keep[i])
			}
			if out.Row[i] < 0 {
				continue
			}
			woP, woL := bruteForce(tc.offer, tc.bids, i)
			var op int
			var ol float64
			for j := range tc.bids {
				if j != i && out.Value[j] > 0 {
					op++
					ol += math.Log(out.Value[j])
				}
			}
			want := math.Exp(ol - woL)
			if op < woP {
				want = 0
			}
			if math.Abs(out.Keep[i]-min(want, 1)) > 1e-9 {
				t.Fatalf("c[%d] = %v, brute force %v", i, out.Keep[i], want)
			}
		}
	}
}
