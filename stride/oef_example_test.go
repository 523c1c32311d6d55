package stride_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// OEF's scheduler on two K80s and two V100s: tenant a runs four 1-GPU
// jobs, tenant b one that cannot run on a K80. Cooperative OEF with demand
// caps gives b a V100 of its own; a's jobs take turns on the other three
// GPUs, longest waiting first, each running three rounds of four (without work conservation, so each tenant runs only
// within its rounded share).
func ExampleOEF() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 2},
		{Name: "v100-0", Type: "v100", GPUs: 2},
	}}
	types := []topology.GPUType{"k80", "v100"}
	s, err := stride.NewOEF(alloc.OEF{Mode: alloc.Cooperative, DemandCaps: true}, c, types, &stride.OEFSettings{Round: 300, NoWorkConservation: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = s.Apply(
		round.Arrive(0, alloc.Job{ID: "a1", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "a2", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "a3", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "a4", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "b1", Owner: "b", Gang: 1, Weight: 1, Rates: []float64{0, 5}}, 0),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for now := 0.0; now < 4*300; now += 300 {
		d, err := s.Decide(context.Background(), now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("round %d:", d.Round)
		for _, p := range d.Placements {
			fmt.Printf(" %s on %s", p.Jobs[0], p.Type)
		}
		fmt.Println()
	}
	a, _ := s.Ideal("a")
	b, _ := s.Ideal("b")
	fmt.Printf("ideal GPUs: a %.3g k80 + %.3g v100, b %.3g k80 + %.3g v100\n", a[0], a[1], b[0], b[1])
	// Output:
	// round 0: a1 on v100 a2 on k80 a3 on k80 b1 on v100
	// round 1: a2 on k80 b1 on v100 a1 on k80 a4 on v100
	// round 2: a1 on k80 b1 on v100 a3 on v100 a4 on k80
	// round 3: a4 on k80 b1 on v100 a2 on v100 a3 on k80
	// ideal GPUs: a 2 k80 + 1 v100, b 0 k80 + 1 v100
}
