package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// Gavel §4.3's example: 4 identical jobs of weights 3, 1, 1, 1 on 4
// identical GPUs. The first round gives job 1 a whole GPU (its cap) and the
// others a third each; water filling then raises jobs 2-4 to whole GPUs,
// where a single max-min LP would leave them at a third.
func ExampleWaterFilling() {
	types := []topology.GPUType{"V100"}
	ids := []string{"job1", "job2", "job3", "job4"}
	tp, err := speedup.New(ids, types, [][]float64{{1}, {1}, {1}, {1}})
	if err != nil {
		panic(err)
	}
	var jobs []alloc.Job
	for i, id := range ids {
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Gang: 1, Weight: []float64{3, 1, 1, 1}[i]})
	}
	p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{4}}, nil, jobs, tp)
	if err != nil {
		panic(err)
	}
	for _, pol := range []alloc.Policy{alloc.MaxMin{}, alloc.WaterFilling{}} {
		a, err := pol.Allocate(context.Background(), p)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s:", pol.Name())
		for i := range a.Rows {
			fmt.Printf(" %.3g", a.GPUs[i][0])
		}
		fmt.Println()
	}
	// Output:
	// max-min: 1 0.333 0.333 0.333
	// water-filling: 1 1 1 1
}

// Two teams of equal weight on 4 GPUs: "product" shares fairly between its
// two jobs, "research" runs its three jobs first in, first out. The FIFO
// head is capped at one GPU, its weight passes to the next job, and the
// third finds nothing left.
func ExampleHierarchical() {
	types := []topology.GPUType{"V100"}
	ids := []string{"p1", "p2", "r1", "r2", "r3"}
	tp, err := speedup.New(ids, types, [][]float64{{2}, {2}, {5}, {5}, {5}})
	if err != nil {
		panic(err)
	}
	users := []alloc.Tenant{{ID: "product", Weight: 1}, {ID: "research", Weight: 1}}
	var jobs []alloc.Job
	for _, id := range ids {
		owner := alloc.TenantID("product")
		if id[0] == 'r' {
			owner = "research"
		}
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Owner: owner, Gang: 1, Weight: 1})
	}
	p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{3}}, users, jobs, tp)
	if err != nil {
		panic(err)
	}
	a, err := alloc.Hierarchical{FIFO: []alloc.TenantID{"research"}}.Allocate(context.Background(), p)
	if err != nil {
		panic(err)
	}
	for i, r := range a.Rows {
		fmt.Printf("%s %.3g\n", r, a.GPUs[i][0])
	}
	// Output:
	// p1 0.75
	// p2 0.75
	// r1 1
	// r2 0.5
	// r3 0
}
