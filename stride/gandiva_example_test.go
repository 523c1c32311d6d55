package stride_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// Gandiva_fair with trading, in a scheduler's loop: tenant A's jobs gain
// little from a V100 (1.25x), C's gain much (6.25x), as in section 3.4.
// The scheduler profiles each job from the progress it reports, and the
// tenants trade: A sells V100 time for K80s (with no third bidder the price
// splits the surplus), and jobs migrate to the GPUs their tenant holds. C
// keeps jobs on the K80 that A's seven jobs leave idle: the bonus of a
// share its owner cannot use (moving them to the V100s would not raise
// C's throughput, so they stay).
func ExampleGandivaFair() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 4}, {Name: "k80-1", Type: "k80", GPUs: 4},
		{Name: "v100-0", Type: "v100", GPUs: 4},
	}}
	types := []topology.GPUType{"k80", "v100"} // oldest first
	s, err := stride.NewGandivaFair(c, types, &stride.GandivaSettings{Trading: true, Migrations: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	speed := map[alloc.TenantID][]float64{"A": {1, 1.25}, "C": {1, 6.25}} // true work per second
	done := map[alloc.JobID]float64{}
	for i := range 8 {
		for _, u := range []alloc.TenantID{"A", "C"} {
			j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s%d", u, i)), Owner: u, Gang: 1, Weight: 1, Rates: []float64{1, 1}}
			if err := s.Apply(round.Arrive(0, j, 0)); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	ctx := context.Background()
	for q := range 30 {
		now := float64(q) * stride.DefaultQuantum
		d, err := s.Decide(ctx, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		// The jobs report their progress at the end of the quantum.
		var progress []round.Event
		for _, p := range d.Placements {
			id := p.Jobs[0]
			k := 0
			if p.Type == "v100" {
				k = 1
			}
			done[id] += stride.DefaultQuantum * speed[alloc.TenantID(id[:1])][k]
			progress = append(progress, round.Progress(d.End, id, done[id]))
		}
		if err := s.Apply(progress...); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, t := range s.Trades() {
		fmt.Println("trade:", t)
	}
	for _, u := range []alloc.TenantID{"A", "C"} {
		h, _ := s.Holdings(u)
		r := s.Rates(u)
		f := s.Fair()
		fmt.Printf("%s holds %.3g K80 and %.3g V100, runs %d jobs on K80 and %d on V100; profiled V100 speedup %.3g\n",
			u, h[0], h[1], f.Demand(u, "k80"), f.Demand(u, "v100"), r[1]/r[0])
	}
	// Output:
	// trade: v100/C k80/A 3.75
	// A holds 8 K80 and 0.933 V100, runs 7 jobs on K80 and 1 on V100; profiled V100 speedup 1.25
	// C holds 0 K80 and 3.07 V100, runs 4 jobs on K80 and 4 on V100; profiled V100 speedup 6.25
}
