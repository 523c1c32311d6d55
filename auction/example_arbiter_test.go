package auction_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// jobAgent bids for a single-job app whose rho is equation 1, elapsed time
// counted from start.
func jobAgent(job ftf.SingleJob, start time.Time) auction.RhoAgent {
	return auction.RhoAgent{RhoAt: func(now time.Time, p ftf.Placement) (float64, error) {
		j := job
		j.Elapsed = now.Sub(start).Seconds()
		return j.Rho(p)
	}, Bids: &ftf.BidSettings{Demand: job.DemandMax}}
}

// A scheduler drives the arbiter with its own clock: apps join with an
// agent, Advance runs a round on each resource-available event, and
// NextEvent says when the next lease ends. With f = 0.5 two of the three
// apps are invited; each wins one server and keeps c_i of its 3 GPUs (2 of
// them here); the GPUs they pay go, in the same round, to the app left
// out, which is invited next.
func ExampleArbiter() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "m0", Rack: "r0", Type: "v100", GPUs: 3},
		{Name: "m1", Rack: "r0", Type: "v100", GPUs: 3},
	}}
	arb, err := auction.NewArbiter(c, &auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.5}, rand.NewPCG(1, 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2020, 2, 25, 9, 0, 0, 0, time.UTC)
	// Three one-job apps: an hour of serial work each, using up to 4 GPUs;
	// "vgg" is placement-sensitive.
	for _, app := range []struct {
		name string
		slow topology.Slowdown
	}{{"inception", topology.Slowdown{1, 1.02, 1.05}}, {"resnet", topology.Slowdown{1, 1.1, 1.3}}, {"vgg", topology.Slowdown{1, 2, 3}}} {
		job := ftf.SingleJob{ItersLeft: 3600, ItersTotal: 3600, IterTime: 1, DemandMax: 4, ClusterGPUs: 6, Contention: 3, Slowdown: app.slow}
		if err := arb.Join(t0, app.name, jobAgent(job, t0)); err != nil {
			fmt.Println(err)
			return
		}
	}
	now := t0
	for now.Before(t0.Add(20 * time.Minute)) {
		r, err := arb.Advance(context.Background(), now)
		if err != nil {
			fmt.Println(err)
			return
		}
		if r.Offer.Total() > 0 {
			fmt.Printf("t=%v: %d GPUs offered to %v\n", now.Sub(t0), r.Offer.Total(), r.Invited)
		}
		for _, g := range r.Grants {
			fmt.Printf("  %-9s %-8v %d GPUs %v..%v", g.App, g.Kind, len(g.GPUs), g.From.Sub(t0), g.Until.Sub(t0))
			if g.Payer != "" {
				fmt.Printf(" from %s", g.Payer)
			}
			if g.Kind == auction.Won {
				fmt.Printf(" (c = %.3g)", g.Keep)
			}
			fmt.Println()
		}
		next, ok := arb.NextEvent()
		if !ok {
			break
		}
		now = next
	}
	// Output:
	// t=0s: 6 GPUs offered to [inception resnet]
	//   inception won      2 GPUs 0s..10m0s (c = 0.825)
	//   resnet    won      2 GPUs 0s..10m0s (c = 0.765)
	//   vgg       payment  1 GPUs 0s..10m0s from resnet
	//   vgg       payment  1 GPUs 0s..10m0s from inception
	// t=10m0s: 6 GPUs offered to [vgg resnet]
	//   vgg       won      2 GPUs 10m0s..20m0s (c = 0.883)
	//   resnet    won      3 GPUs 10m0s..20m0s (c = 1)
	//   inception payment  1 GPUs 10m0s..20m0s from vgg
}
