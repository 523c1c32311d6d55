package sim_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// Three jobs of one model (40 steps/s on a V100, 10 on a K80) with one,
// two and three hours of V100 work arrive together on one V100 and two
// K80s; Gavel's heterogeneity-aware max-min policy is realised in 6-minute
// rounds by Gavel's mechanism (stride.Gavel). While all three run, each
// gets a third of the V100 and two thirds of a K80 on average; the
// shortest finishes first and the others speed up.
func ExampleRun() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "v", Type: "v100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 2},
	}}
	w := &sim.Workload{Types: []topology.GPUType{"v100", "k80"}, Jobs: []sim.Job{
		{Job: alloc.Job{ID: "short", Gang: 1, Rates: []float64{40, 10}}, Steps: 40 * 3600},
		{Job: alloc.Job{ID: "medium", Gang: 1, Rates: []float64{40, 10}}, Steps: 2 * 40 * 3600},
		{Job: alloc.Job{ID: "long", Gang: 1, Rates: []float64{40, 10}}, Steps: 3 * 40 * 3600},
	}}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, w.Types, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sim.Run(context.Background(), w, c, s, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range res.Jobs {
		fmt.Printf("%-6s JCT %.3g h, rho %.3g\n", j.ID, j.JCT/3600, j.Rho)
	}
	sum := res.Summary()
	fmt.Printf("average JCT %.3g h, max rho %.3g, utilisation %.3g\n", sum.AvgJCT/3600, sum.MaxRho, sum.Utilisation)
	// Output:
	// long   JCT 4.65 h, rho 0.775
	// medium JCT 3.65 h, rho 0.913
	// short  JCT 1.9 h, rho 0.95
	// average JCT 3.4 h, max rho 0.95, utilisation 0.731
}

// The same three jobs with an H100 added, on which the model runs at 160
// steps/s (a rate measured on one, or estimated by speedup.Complete): the
// work is the same, and each job finishes sooner.
func ExampleWorkload_WithType() {
	w := &sim.Workload{Types: []topology.GPUType{"v100", "k80"}, Jobs: []sim.Job{
		{Job: alloc.Job{ID: "short", Gang: 1, Rates: []float64{40, 10}}, Steps: 40 * 3600},
		{Job: alloc.Job{ID: "medium", Gang: 1, Rates: []float64{40, 10}}, Steps: 2 * 40 * 3600},
		{Job: alloc.Job{ID: "long", Gang: 1, Rates: []float64{40, 10}}, Steps: 3 * 40 * 3600},
	}}
	w, err := w.WithType("h100", func(*sim.Job) float64 { return 160 })
	if err != nil {
		fmt.Println(err)
		return
	}
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "v", Type: "v100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 2}, {Name: "h", Type: "h100", GPUs: 1},
	}}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, w.Types, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := sim.Run(context.Background(), w, c, s, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Types)
	for _, j := range res.Jobs {
		fmt.Printf("%-6s JCT %.3g h\n", j.ID, j.JCT/3600)
	}
	// Output:
	// [v100 k80 h100]
	// long   JCT 1.31 h
	// medium JCT 1.08 h
	// short  JCT 0.55 h
}
