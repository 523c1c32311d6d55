package stride_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// A scheduler's loop around Gavel's mechanism: events in, one leased
// decision per round out.
func ExampleGavel() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 2},
		{Name: "v100-0", Type: "v100", GPUs: 2},
	}}
	types := []topology.GPUType{"k80", "v100"}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Round: 360})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	err = s.Apply(
		round.Arrive(0, alloc.Job{ID: "resnet", Gang: 1, Weight: 1, Rates: []float64{1, 4}}, 0),
		round.Arrive(0, alloc.Job{ID: "lstm", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0),
		round.Arrive(0, alloc.Job{ID: "gan", Gang: 2, Weight: 1, Rates: []float64{1, 3}}, 0),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for now := 0.0; now < 3*360; now += 360 {
		d, err := s.Decide(ctx, now)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("round %d:", d.Round)
		for _, p := range d.Placements {
			fmt.Printf(" %s on %d %s (renewed %v)", p.Jobs[0], len(p.GPUs), p.Type, p.Renewed)
		}
		fmt.Println()
	}
	x, _ := s.Target("gan")
	fmt.Printf("gan's allocation: %.3g of the time on k80, %.3g on v100\n", x[0], x[1])
	// Output:
	// round 0: gan on 2 k80 (renewed false) lstm on 1 v100 (renewed false) resnet on 1 v100 (renewed false)
	// round 1: gan on 2 v100 (renewed false) lstm on 1 k80 (renewed false) resnet on 1 k80 (renewed false)
	// round 2: gan on 2 k80 (renewed false) lstm on 1 v100 (renewed false) resnet on 1 v100 (renewed false)
	// gan's allocation: 0.85 of the time on k80, 0.15 on v100
}
