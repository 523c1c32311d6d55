package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// ExampleFIFOPacking: one V100 and one K80, three jobs in arrival order.
// The first takes the V100, where it is fastest; the second the K80, the
// only GPU left; the third waits, then shares the V100 with the first,
// since together they keep 80% of each one's speed (0.8 + 0.8 > 1.5).
func ExampleFIFOPacking() {
	types := []topology.GPUType{"v100", "k80"}
	ids := []string{"resnet", "lstm", "a3c"}
	tp, _ := speedup.New(ids, types, [][]float64{{4, 1}, {2, 1}, {1, 1}})
	var jobs []alloc.Job
	for _, id := range ids {
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Gang: 1, Weight: 1})
	}
	p, _ := alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{1, 1}}, nil, jobs, tp)
	f := alloc.FIFOPacking{Pairs: []alloc.PairRate{{A: "resnet", B: "a3c", Type: "v100", RateA: 3.2, RateB: 0.8}}}
	r, err := f.Solve(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, id := range ids {
		fmt.Printf("%s: alone %v, shared %v, %.1f steps/s\n", id, r.Alone[i], r.Partners[i], r.Throughput[i])
	}
	// Output:
	// resnet: alone [0 0], shared [{a3c v100 1}], 3.2 steps/s
	// lstm: alone [0 1], shared [], 1.0 steps/s
	// a3c: alone [0 0], shared [{resnet v100 1}], 0.8 steps/s
}
