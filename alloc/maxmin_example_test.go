package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// xhetProblem is Gavel's §4.1 example: three jobs on one V100 and one K80.
func xhetProblem() *alloc.Problem {
	types := []topology.GPUType{"V100", "K80"}
	tp, err := speedup.New([]string{"job0", "job1", "job2"}, types,
		[][]float64{{40, 10}, {12, 4}, {100, 50}})
	if err != nil {
		panic(err)
	}
	jobs := []alloc.Job{{ID: "job0", Gang: 1, Weight: 1}, {ID: "job1", Gang: 1, Weight: 1}, {ID: "job2", Gang: 1, Weight: 1}}
	p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{1, 1}}, nil, jobs, tp)
	if err != nil {
		panic(err)
	}
	return p
}

// Gavel's X_het: every job reaches 8/11 of its equal-share throughput
// normaliser, 12/11 of what a third of each GPU gives it.
func ExampleMaxMin() {
	a, err := alloc.MaxMin{}.Allocate(context.Background(), xhetProblem())
	if err != nil {
		panic(err)
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: V100 %.3g, K80 %.3g\n", r, a.GPUs[i][0], a.GPUs[i][1])
	}
	// Output:
	// job0: V100 0.455, K80 0
	// job1: V100 0.455, K80 0.0909
	// job2: V100 0.0909, K80 0.909
}

// The type-blind baseline gives every job a third of each GPU.
func ExampleMaxMinAgnostic() {
	a, err := alloc.MaxMinAgnostic{}.Allocate(context.Background(), xhetProblem())
	if err != nil {
		panic(err)
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: V100 %.3g, K80 %.3g\n", r, a.GPUs[i][0], a.GPUs[i][1])
	}
	// Output:
	// job0: V100 0.333, K80 0.333
	// job1: V100 0.333, K80 0.333
	// job2: V100 0.333, K80 0.333
}
