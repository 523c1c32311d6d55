package data_test

import (
	"fmt"

	"github.com/gpufair/gpufair/data"
)

// Gavel's measured throughput of one job type on each of its GPU types.
func ExampleLoadThroughputs() {
	t, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	j := data.JobType{Model: "ResNet-50 (batch size 64)", Scale: 1}
	for _, gpu := range []string{"k80", "p100", "v100"} {
		r, _ := t.Isolated(gpu, j)
		fmt.Printf("%s on %s: %.3f steps/s\n", j, gpu, r)
	}
	// Output:
	// ResNet-50 (batch size 64) ×1 on k80: 0.619 steps/s
	// ResNet-50 (batch size 64) ×1 on p100: 2.619 steps/s
	// ResNet-50 (batch size 64) ×1 on v100: 4.395 steps/s
}

// The H100 row beside Gavel's table: a fourth GPU type for the same job
// types, measured, with where and how. A job type it lacks is to be
// estimated (speedup.Complete), never read as a rate.
func ExampleLoadMeasured() {
	h100, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (%s, driver %s, %s)\n", h100.GPUType, h100.Product, h100.Driver, h100.Date)
	for _, model := range []string{"ResNet-50 (batch size 64)", "Transformer (batch size 128)"} {
		if r, ok := h100.Rate(model); ok {
			fmt.Printf("%s: %.2f %s\n", model, r, h100.Unit)
		} else {
			fmt.Printf("%s: not measured\n", model)
		}
	}
	// Output:
	// h100 (NVIDIA H100 80GB HBM3, driver 580.159.04, 2026-11-28)
	// ResNet-50 (batch size 64): 26.64 training steps per second
	// Transformer (batch size 128): not measured
}

// Two profiler runs on one H200, the first with one run of each job type and
// the second with two, joined into the row that Measured holds as h200.json.
func ExampleMergeMeasured() {
	var parts []*data.MeasuredRow
	for _, name := range []string{"h200-part1.json", "h200-part2.json"} {
		r, err := data.LoadMeasured(data.Measured(), name)
		if err != nil {
			fmt.Println(err)
			return
		}
		parts = append(parts, r)
	}
	h200, err := data.MergeMeasured(parts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range h200.Jobs[8:9] {
		fmt.Printf("%s on %s: runs %.2f, rate %.2f %s\n", j.JobType, h200.GPUType, j.Runs, j.Rate, h200.Unit)
	}
	// Output:
	// ResNet-50 (batch size 128) on h200: runs [16.54 16.48 16.49], rate 16.49 training steps per second
}
