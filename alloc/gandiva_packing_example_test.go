package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// ExampleGandivaPacking solves Gavel's Gandiva baseline three times, each
// given the pairs of the one before, as a round mechanism re-solves it:
// six one-GPU jobs on two V100s, where two jobs of type "a" keep 80% of
// their speed together, two of type "b" 70% and 60%, and "a" with "b" only
// 30% each. The first solve draws pairs at random; the second keeps the
// pair that improves performance (j3+j4) and draws the others again; both
// of its new pairs improve performance, and stay.
func ExampleGandivaPacking() {
	v100 := topology.GPUType("v100")
	ids := []string{"j0", "j1", "j2", "j3", "j4", "j5"}
	labels := []string{"a", "a", "b", "b", "b", "b"}
	rates := [][]float64{{1}, {1}, {1}, {1}, {1}, {1}}
	m, err := speedup.New(ids, []topology.GPUType{v100}, rates)
	if err != nil {
		fmt.Println(err)
		return
	}
	var jobs []alloc.Job
	for _, id := range ids {
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Gang: 1, Weight: 1})
	}
	p, err := alloc.NewProblem(alloc.Capacity{Types: []topology.GPUType{v100}, Count: []float64{2}}, nil, jobs, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := alloc.GandivaPacking{JobTypes: labels, Seed: 5, Pairs: []alloc.PairRate{
		{A: "a", B: "a", Type: v100, RateA: 0.8, RateB: 0.8},
		{A: "b", B: "b", Type: v100, RateA: 0.7, RateB: 0.6},
		{A: "a", B: "b", Type: v100, RateA: 0.3, RateB: 0.3},
	}}
	for solve := 1; solve <= 3; solve++ {
		r, err := g.Solve(context.Background(), p)
		if err != nil {
			fmt.Println(err)
			return
		}
		g.Keep, g.Draw = nil, uint64(solve)
		fmt.Printf("solve %d:", solve)
		for _, pr := range r.Pairs {
			fmt.Printf(" %s+%s for %.2f,", pr.A, pr.B, pr.Time)
			g.Keep = append(g.Keep, alloc.JobPair{A: alloc.JobID(pr.A), B: alloc.JobID(pr.B)})
		}
		fmt.Println()
	}
	// Output:
	// solve 1: j0+j5 for 0.67, j1+j2 for 0.67, j3+j4 for 0.67,
	// solve 2: j0+j1 for 0.67, j2+j5 for 0.67, j3+j4 for 0.67,
	// solve 3: j0+j1 for 0.67, j2+j5 for 0.67, j3+j4 for 0.67,
}
