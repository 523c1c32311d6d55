package ftf_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// Section 4.3.3's successive-halving app priced by equation 2 (Table 3):
// four jobs at 80, 100, 100 and 120 s per iteration, phases of 8, 16 and 36
// iterations whose survivors are not yet known (IterTime 0: the median of
// the running jobs stands in), a 10,000 s budget on 16 GPUs shared by 4
// apps. ERRATA.md: the paper prints the median model's 1, 0.5 and 0.34.
func ExampleRhoHalving() {
	one := topology.Slowdown{1, 1, 1}
	app := ftf.Phases{
		{{ItersRemaining: 8, IterTime: 80, Slowdown: one}, {ItersRemaining: 8, IterTime: 100, Slowdown: one},
			{ItersRemaining: 8, IterTime: 100, Slowdown: one}, {ItersRemaining: 8, IterTime: 120, Slowdown: one}},
		{{ItersRemaining: 16, Slowdown: one}, {ItersRemaining: 16, Slowdown: one}},
		{{ItersRemaining: 36, Slowdown: one}},
	}
	info := ftf.AppInfo{Budget: 10000, AppDemandMax: 16, JobDemandMax: 8, ClusterGPUs: 16, Contention: 4}
	for _, g := range []int{1, 2, 4, 8, 16} {
		rho, err := ftf.RhoHalving(app, info, ftf.Placement{GPUs: g}, ftf.Literal)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%2d GPUs: rho %.4g\n", g, rho)
	}
	// Output:
	//  1 GPUs: rho 4
	//  2 GPUs: rho 2
	//  4 GPUs: rho 1.064
	//  8 GPUs: rho 0.532
	// 16 GPUs: rho 0.3453
}

// A performance-curve app (section 4.3.3, Hyperdrive- or Vizier-style
// stopping): three running jobs, each forecast to stop after 50, 80 and
// 120 iterations of 10, 10 and 20 s on one GPU (500, 800 and 2,400 s of
// work), 600 s after the app started. T_id = 12,000/min(16, 8)·2 = 3,000 s.
// On one GPU the jobs run one after another (3,700 s); on two, the longest
// alone (2,400 s); from four, each further GPU goes to the job that
// finishes last, up to four GPUs a job: 1,200 s, then 800 s, then 600 s.
func ExampleRhoCurve() {
	one := topology.Slowdown{1, 1, 1}
	app := ftf.Running{
		{ItersRemaining: 50, IterTime: 10, Slowdown: one},
		{ItersRemaining: 80, IterTime: 10, Slowdown: one},
		{ItersRemaining: 120, IterTime: 20, Slowdown: one},
	}
	info := ftf.AppInfo{Elapsed: 600, Budget: 12000, AppDemandMax: 8, JobDemandMax: 4, ClusterGPUs: 16, Contention: 2}
	for _, g := range []int{1, 2, 4, 5, 8} {
		rho, err := ftf.RhoCurve(app, info, ftf.Placement{GPUs: g})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d GPUs: rho %.4g\n", g, rho)
	}
	// Output:
	// 1 GPUs: rho 1.433
	// 2 GPUs: rho 1
	// 4 GPUs: rho 0.6
	// 5 GPUs: rho 0.4667
	// 8 GPUs: rho 0.4
}

// Themis' Table 2: a job with 200 s of serial work left and T_id = 400 s,
// offered the two GPUs of one server. Either single GPU is one row (GPUs on
// a server are interchangeable); holding nothing, rho_old is +Inf.
func ExampleNewTable() {
	job := ftf.SingleJob{ItersLeft: 200, ItersTotal: 200, IterTime: 1, DemandMax: 2, ClusterGPUs: 2, Contention: 4}
	o := ftf.Offer{Cluster: topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "k80", GPUs: 2}}}, Free: []int{2}}
	tab, err := ftf.NewTable(o, nil, job.Rho, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("nothing: rho %v\n", tab.RhoNone)
	for _, r := range tab.Rows {
		fmt.Printf("%d GPU(s): rho %.3g\n", r.GPUs(), r.Rho)
	}
	// Output:
	// nothing: rho +Inf
	// 2 GPU(s): rho 0.25
	// 1 GPU(s): rho 0.5
}

// Bids for a one-job app that can use 4 GPUs, over an offer of 3 free GPUs
// on one server and 4 on another of the same rack: for each GPU count, the
// single servers that fit, two alternatives on distinct servers (4 GPUs
// fit only m1; spread over both servers they would be slower, 1.5x, and
// are not needed). Holding nothing, the app never finishes: RhoNone is
// +Inf (the arbiter prices that by the wait).
func ExampleBids() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "m0", Rack: "r0", Type: "v100", GPUs: 4},
		{Name: "m1", Rack: "r0", Type: "v100", GPUs: 4},
	}}
	offer := ftf.Offer{Cluster: c, Free: []int{3, 4}}
	job := ftf.SingleJob{ItersLeft: 3600, ItersTotal: 3600, IterTime: 1, DemandMax: 4, ClusterGPUs: 8, Contention: 2, Slowdown: topology.Slowdown{1, 1.5, 2}}
	price := func(counts []int) (float64, error) {
		loc, err := c.LocalityOfCounts(counts)
		if err != nil {
			return 0, err
		}
		return job.Rho(ftf.Placement{GPUs: counts[0] + counts[1], Locality: loc})
	}
	tab, err := ftf.Bids(context.Background(), offer, nil, price, &ftf.BidSettings{Demand: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("nothing:", tab.RhoNone)
	for _, r := range tab.Rows {
		fmt.Printf("%v: %.3g\n", r.Counts, r.Rho)
	}
	// Output:
	// nothing: +Inf
	// [0 4]: 0.5
	// [0 3]: 0.667
	// [3 0]: 0.667
	// [0 2]: 1
	// [2 0]: 1
	// [0 1]: 2
	// [1 0]: 2
}
