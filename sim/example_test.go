package sim_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
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
// steps/s (a rate measured on one, or estimated: see MeasuredRates): the
// work is the same, and each job finishes sooner.
func ExampleWorkload_WithType() {
	w := &sim.Workload{Types: []topology.GPUType{"v100", "k80"}, Jobs: []sim.Job{
		{Job: alloc.Job{ID: "short", Gang: 1, Rates: []float64{40, 10}}, Steps: 40 * 3600},
		{Job: alloc.Job{ID: "medium", Gang: 1, Rates: []float64{40, 10}}, Steps: 2 * 40 * 3600},
		{Job: alloc.Job{ID: "long", Gang: 1, Rates: []float64{40, 10}}, Steps: 3 * 40 * 3600},
	}}
	w, err := w.WithType("h100", func(*sim.Job) (one, spread float64) { return 160, 160 })
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

// Gavel's job types on an H100: the rates gpufair measured on one for
// Gavel's one-GPU job types, and estimates for the rest, given to a
// workload drawn as Gavel's simulator draws one.
func ExampleMeasuredRates() {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	row, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	rates, err := sim.MeasuredRates(tp, sim.GavelTypes(), row)
	if err != nil {
		fmt.Println(err)
		return
	}
	estimated := 0
	for _, r := range rates {
		if r.Estimated {
			estimated++
		}
	}
	fmt.Printf("%d job types, %d of their H100 rates estimated\n", len(rates), estimated)
	for _, jt := range []data.JobType{{Model: "ResNet-50 (batch size 64)", Scale: 1}, {Model: "LM (batch size 20)", Scale: 8}} {
		r := rates[jt]
		fmt.Printf("%v: %.3g steps/s, %.3g spread over servers (estimated: %v)\n", jt, r.One, r.Spread, r.Estimated)
	}
	w, err := sim.Generate(tp, sim.GenerateSettings{Jobs: 3, Rate: 1}, rand.NewPCG(1, 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err = w.WithType("h100", rates.Of)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range w.Jobs {
		fmt.Printf("%s %s: %.3g steps/s on %v\n", j.ID, j.Kind, j.Rates, w.Types)
	}
	// Output:
	// 83 job types, 58 of their H100 rates estimated
	// ResNet-50 (batch size 64) ×1: 26.6 steps/s, 26.6 spread over servers (estimated: false)
	// LM (batch size 20) ×8: 1.23e+03 steps/s, 145 spread over servers (estimated: true)
	// 0 ResNet-18 (batch size 32): [7.18 35.8 29.9 106] steps/s on [k80 p100 v100 h100]
	// 1 ResNet-50 (batch size 16): [2.3 9.05 11.4 46.6] steps/s on [k80 p100 v100 h100]
	// 2 Recommendation (batch size 1024): [20 30.7 13.3 261] steps/s on [k80 p100 v100 h100]
}

// A scheduler that allocates from profiles measured with error: each job's
// rates are told up to 27% off (the widest spread of repeated runs seen on
// one GPU, for host-bound jobs), the same for a job in every run with the
// same seed. The jobs still run at their own rates; only the scheduler's
// choices change.
func ExampleProfileNoise() {
	told, err := sim.ProfileNoise(0.27, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	j := &sim.Job{Job: alloc.Job{ID: "resnet", Gang: 1, Rates: []float64{40, 0, 10}}}
	fmt.Printf("runs at %v, scheduler told %.1f\n", j.Rates, told(j))
	// Pass it as sim.Settings{Profiled: told} to sim.Run or sim.Ideal.

	// Output:
	// runs at [40 0 10], scheduler told [32.9 0.0 8.3]
}
