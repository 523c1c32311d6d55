// Command auction walks through Themis (NSDI'20) with packages ftf and
// auction, in three steps.
//
// Step 1 is the agent's side (section 4.3.3): a successive-halving app with
// four jobs prices 1, 2, 4, 8 and 16 GPUs by equation 2, the bids of Table 3
// (exactly: ERRATA.md explains the printed 1, 0.5 and 0.34).
//
// Step 2 is the one-shot partial-allocation auction (Pseudocode 1, lines
// 5-11) on bid tables: two apps on one 4-GPU server get the proportionally
// fair split and keep the fraction c_i of it; the rest is a hidden payment.
//
// Step 3 is the multi-round arbiter: leases, filtering with f = 0.5, and the
// hidden payments handed to the app left out of the round.
//
// Usage:
//
//	go run ./examples/auction
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "auction:", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	if err := table3(w); err != nil {
		return err
	}
	if err := oneShot(w); err != nil {
		return err
	}
	return rounds(w)
}

// table3 prices section 4.3.3's app: jobs at 80, 100, 100 and 120 s per
// iteration, phases of 8, 16 and 36 iterations (later jobs undecided: the
// median stands in), a 10,000 s budget on 16 GPUs shared by 4 apps.
func table3(w io.Writer) error {
	one := topology.Slowdown{1, 1, 1}
	app := ftf.Phases{
		{{ItersRemaining: 8, IterTime: 80, Slowdown: one}, {ItersRemaining: 8, IterTime: 100, Slowdown: one},
			{ItersRemaining: 8, IterTime: 100, Slowdown: one}, {ItersRemaining: 8, IterTime: 120, Slowdown: one}},
		{{ItersRemaining: 16, Slowdown: one}, {ItersRemaining: 16, Slowdown: one}},
		{{ItersRemaining: 36, Slowdown: one}},
	}
	info := ftf.AppInfo{Budget: 10000, AppDemandMax: 16, JobDemandMax: 8, ClusterGPUs: 16, Contention: 4}
	fmt.Fprintf(w, "Step 1: Table 3, T_id = %v s\n", info.Independent())
	for _, g := range []int{1, 2, 4, 8, 16} {
		lit, err := ftf.RhoHalving(app, info, ftf.Placement{GPUs: g}, ftf.Literal)
		if err != nil {
			return err
		}
		med, err := ftf.RhoHalving(app, info, ftf.Placement{GPUs: g}, ftf.MedianAll)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %2d GPUs: rho %.4g (equation 2), %.3g (median model, as printed)\n", g, lit, med)
	}
	return nil
}

// oneShot auctions one 4-GPU server between two apps already running on
// GPUs elsewhere (so RhoNone is finite). Each keeps c_i = the other's value
// with it present over the other's value had it taken the whole server.
func oneShot(w io.Writer) error {
	o := ftf.Offer{Cluster: topology.Cluster{Servers: []topology.Server{{Name: "m0", Type: "v100", GPUs: 4}}}, Free: []int{4}}
	fmt.Fprintln(w, "\nStep 2: one-shot partial allocation over 4 GPUs")
	var bids []auction.Bid
	for _, app := range []struct {
		name string
		job  ftf.SingleJob
		held int
	}{
		{"vgg", ftf.SingleJob{ItersLeft: 4000, ItersTotal: 4000, IterTime: 1, DemandMax: 8, ClusterGPUs: 8, Contention: 2}, 1},
		{"inception", ftf.SingleJob{ItersLeft: 2000, ItersTotal: 4000, IterTime: 1, DemandMax: 8, ClusterGPUs: 8, Contention: 2}, 3},
	} {
		rho := func(p ftf.Placement) (float64, error) { p.GPUs += app.held; return app.job.Rho(p) }
		tab, err := ftf.NewTable(o, nil, rho, nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s bids: rho %.3g with nothing more", app.name, tab.RhoNone)
		for _, r := range tab.Rows {
			fmt.Fprintf(w, ", %.3g with %d", r.Rho, r.GPUs())
		}
		fmt.Fprintln(w)
		bids = append(bids, auction.Bid{App: app.name, Table: tab})
	}
	out, err := auction.AuctionTables(context.Background(), o, bids)
	if err != nil {
		return err
	}
	for i, b := range bids {
		g := 0
		if out.Row[i] >= 0 {
			g = b.Table.Rows[out.Row[i]].GPUs()
		}
		fmt.Fprintf(w, "  %s wins %d GPUs and keeps c = %.3g of them (%.3g GPUs in expectation)\n", b.App, g, out.Keep[i], out.Keep[i]*float64(g))
	}
	return nil
}

// rounds runs the arbiter for two leases over two 3-GPU servers and three
// one-job apps, one of them placement-sensitive.
func rounds(w io.Writer) error {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "m0", Rack: "r0", Type: "v100", GPUs: 3},
		{Name: "m1", Rack: "r0", Type: "v100", GPUs: 3},
	}}
	arb, err := auction.NewArbiter(c, &auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.5}, rand.NewPCG(1, 2))
	if err != nil {
		return err
	}
	t0 := time.Date(2020, 2, 25, 9, 0, 0, 0, time.UTC)
	for _, app := range []struct {
		name string
		slow topology.Slowdown
	}{{"inception", topology.Slowdown{1, 1.02, 1.05}}, {"resnet", topology.Slowdown{1, 1.1, 1.3}}, {"vgg", topology.Slowdown{1, 2, 3}}} {
		job := ftf.SingleJob{ItersLeft: 3600, ItersTotal: 3600, IterTime: 1, DemandMax: 4, ClusterGPUs: 6, Contention: 3, Slowdown: app.slow}
		agent := auction.RhoAgent{RhoAt: func(now time.Time, p ftf.Placement) (float64, error) {
			j := job
			j.Elapsed = now.Sub(t0).Seconds()
			return j.Rho(p)
		}, Bids: &ftf.BidSettings{Demand: job.DemandMax}}
		if err := arb.Join(t0, app.name, agent); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nStep 3: rounds with 10-minute leases, f = 0.5")
	for now := t0; now.Before(t0.Add(20 * time.Minute)); {
		r, err := arb.Advance(context.Background(), now)
		if err != nil {
			return err
		}
		if r.Offer.Total() > 0 {
			fmt.Fprintf(w, "  t=%v: %d GPUs offered to %v\n", now.Sub(t0), r.Offer.Total(), r.Invited)
		}
		for _, g := range r.Grants {
			fmt.Fprintf(w, "    %s: %d GPUs (%v) %v..%v", g.App, len(g.GPUs), g.Kind, g.From.Sub(t0), g.Until.Sub(t0))
			if g.Payer != "" {
				fmt.Fprintf(w, " from %s", g.Payer)
			}
			fmt.Fprintln(w)
		}
		next, ok := arb.NextEvent()
		if !ok {
			break
		}
		now = next
	}
	return nil
}
