package auction_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// Themis on the round contract: apps are the jobs' owners. A
// hyper-parameter search of three elastic jobs (up to 4 GPUs each) shares
// two 4-GPU servers with a one-job app, a rigid gang of 4. The arbiter
// auctions the 8 free GPUs: the search wins all 8 (c = 0.83) and keeps 7;
// the GPU it pays stays idle, since the gang cannot use one GPU and a
// payment never goes back to its payer. The search's scheduler places its
// longest trials on the 7 GPUs it holds. Both apps were ranked at +Inf in
// this first round, as neither had bid before; from the next round on the
// gang, holding nothing, is priced by its wait (see Arbiter).
func ExampleThemis() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "m0", Rack: "r0", Type: "v100", GPUs: 4},
		{Name: "m1", Rack: "r0", Type: "v100", GPUs: 4},
	}}
	s, err := auction.NewThemis(c, []topology.GPUType{"v100"}, &auction.ThemisSettings{Round: 600}, rand.NewPCG(1, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	var events []round.Event
	for i, work := range []float64{4000, 6000, 8000} {
		j := alloc.Job{ID: alloc.JobID(fmt.Sprint("trial-", i)), Owner: "search", Gang: 4, Weight: 1, Rates: []float64{4}, Elastic: true}
		events = append(events, round.Arrive(0, j, work))
	}
	events = append(events, round.Arrive(0, alloc.Job{ID: "solo", Gang: 4, Weight: 1, Rates: []float64{4}}, 12000))
	if err := s.Apply(events...); err != nil {
		fmt.Println(err)
		return
	}
	d, err := s.Decide(context.Background(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range d.Placements {
		fmt.Printf("%s on %d GPUs\n", p.Jobs[0], len(p.GPUs))
	}
	for _, app := range s.Arbiter().Apps() {
		rho, _ := s.Arbiter().Rho(app)
		fmt.Printf("%s holds %v GPUs per server, ranked at rho %.3g\n", app, s.Arbiter().Held(app), rho)
	}
	// Output:
	// trial-2 on 4 GPUs
	// trial-1 on 3 GPUs
	// search holds [4 3] GPUs per server, ranked at rho +Inf
	// solo holds [0 0] GPUs per server, ranked at rho +Inf
}
