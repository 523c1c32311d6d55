package speedup_test

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// ExampleComplete estimates the V100 throughput of a job profiled only on
// K80 and P100, from jobs profiled on all three (rates in steps/s from
// Gavel's measurements). The default model reads each job's rates as a job
// factor times a GPU-type factor, fitted on the log scale.
func ExampleComplete() {
	rows := []string{"ResNet-18", "Transformer", "A3C", "CycleGAN"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	values := [][]float64{
		{4.80, 35.9, 32.4},
		{5.47, 9.54, 11.1},
		{3.44, 5.68, 7.18},
		{0.505, 2.40, math.NaN()}, // not measured on V100
	}
	c, err := speedup.Complete(rows, types, values, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("CycleGAN on v100: %.3g steps/s (estimated: %v)\n", c.Matrix.At(3, 2), c.Estimated[3][2])
	// Gavel measured 4.43: CycleGAN gains more from newer GPUs than the three
	// jobs it is compared with. Errors of this size are typical when a job is
	// measured on few types (docs/benchmarks/gpu.md).

	// Output:
	// CycleGAN on v100: 2.02 steps/s (estimated: true)
}

// A cluster that adds H100s to Gavel's K80s, P100s and V100s needs an H100
// rate for every job type, the distributed ones too, while the H100 row in
// package data was measured for single-GPU jobs only. Complete fills the
// rest from Gavel's table and that row, and says which cells it estimated.
func ExampleComplete_newGPUType() {
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	h100, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	types := []topology.GPUType{"k80", "p100", "v100", "h100"}
	var rows []string
	var values [][]float64
	for _, j := range gavel.JobTypes() {
		row := make([]float64, 0, len(types))
		for _, g := range types[:3] {
			r, _ := gavel.Isolated(string(g), j)
			row = append(row, r)
		}
		r, ok := h100.Rate(j.Model)
		if j.Scale != 1 || !ok {
			r = math.NaN() // measured for one GPU only, or not at all
		}
		rows, values = append(rows, j.String()), append(values, append(row, r))
	}
	c, err := speedup.Complete(rows, types, values, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"ResNet-50 (batch size 64) ×1", "ResNet-50 (batch size 64) ×4", "Transformer (batch size 128) ×1"} {
		i := slices.Index(rows, name)
		fmt.Printf("%s on h100: %.3g steps/s (estimated: %v)\n", name, c.Matrix.At(i, 3), c.Estimated[i][3])
	}
	// Output:
	// ResNet-50 (batch size 64) ×1 on h100: 26.6 steps/s (estimated: false)
	// ResNet-50 (batch size 64) ×4 on h100: 49.7 steps/s (estimated: true)
	// Transformer (batch size 128) ×1 on h100: 20.4 steps/s (estimated: true)
}

// An H200 added beside Gavel's three types and the H100 row: which model
// should estimate its missing rates? SelectSettings holds out each measured
// H200 cell in turn and keeps the model that predicted them best. Here that
// is a linear rank-1 fit, which follows the H100 closely, not the default
// additive log model, which gives each job one effect over all four older
// types (docs/benchmarks/gpu.md).
func ExampleSelectSettings() {
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	types := []topology.GPUType{"k80", "p100", "v100", "h100", "h200"}
	var measured []*data.MeasuredRow
	for _, f := range []string{"h100.json", "h200.json"} {
		r, err := data.LoadMeasured(data.Measured(), f)
		if err != nil {
			fmt.Println(err)
			return
		}
		measured = append(measured, r)
	}
	var rows []string
	var values [][]float64
	var h200 [][2]int // the measured H200 cells, to hold out
	for _, j := range gavel.JobTypes() {
		if j.Scale != 1 {
			continue
		}
		row := make([]float64, 0, len(types))
		for _, g := range types[:3] {
			r, _ := gavel.Isolated(string(g), j)
			row = append(row, r)
		}
		for _, m := range measured {
			r, ok := m.Rate(j.Model)
			if !ok {
				r = math.NaN()
			}
			row = append(row, r)
		}
		if row[4] > 0 {
			h200 = append(h200, [2]int{len(rows), 4})
		}
		rows, values = append(rows, j.Model), append(values, row)
	}
	sel, err := speedup.SelectSettings(context.Background(), rows, types, values, h200, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range sel.Validations[:1] {
		fmt.Printf("default (%v space, rank %d): median error %.2f\n", v.Settings.Space, v.Settings.Rank, v.Median)
	}
	for _, v := range sel.Validations {
		if v.Settings == sel.Best {
			fmt.Printf("chosen (%v space, rank %d, effects %v): median error %.2f\n", v.Settings.Space, v.Settings.Rank, !v.Settings.NoEffects, v.Median)
		}
	}
	// Output:
	// default (log space, rank 0): median error 0.23
	// chosen (linear space, rank 1, effects false): median error 0.07
}
