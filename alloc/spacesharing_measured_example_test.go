package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// ExampleSpaceSharing_measured feeds Gavel's heterogeneity-aware LAS
// co-located rates measured on a real device: seven of Gavel's job types
// on an NVIDIA H200, alone and in every pair (data.Measured's
// h200-pairs.json, from gpu-probe -pairs), one job of each sharing three
// H200s. Each job's rate is printed as a fraction of its rate alone on one
// GPU: time sharing alone gives each 3/7; pairs that keep more than half of
// each job's speed raise every job to 0.64.
func ExampleSpaceSharing_measured() {
	row, err := data.LoadMeasured(data.Measured(), "h200-pairs.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	h200 := topology.GPUType(row.GPUType)
	var ids, labels []string
	var jobs []alloc.Job
	var rates [][]float64
	for _, j := range row.Jobs {
		ids, labels = append(ids, j.Job), append(labels, j.JobType)
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(j.Job), Gang: 1, Weight: 1})
		rates = append(rates, []float64{j.Rate})
	}
	var pairs []alloc.PairRate
	for _, pr := range row.Pairs {
		if a, b, ok := row.Pair(pr.A, pr.B); ok {
			pairs = append(pairs, alloc.PairRate{A: pr.A, B: pr.B, Type: h200, RateA: a, RateB: b})
		}
	}
	c, _ := alloc.NewCapacity([]topology.GPUType{h200}, []float64{3})
	tp, _ := speedup.New(ids, []topology.GPUType{h200}, rates)
	p, err := alloc.NewProblem(c, nil, jobs, tp)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range []alloc.SpaceSharing{
		{Objective: alloc.SharingMaxMin, JobTypes: labels},
		{Objective: alloc.SharingMaxMin, JobTypes: labels, Pairs: pairs},
	} {
		r, err := s.Solve(context.Background(), p)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d measured pairs offered:", len(s.Pairs))
		for i, x := range r.Throughput {
			fmt.Printf(" %s %.2f", ids[i], x/rates[i][0])
		}
		fmt.Println()
	}
	// Output:
	// 0 measured pairs offered: resnet18 0.43 resnet50 0.43 transformer 0.43 lm 0.43 recommendation 0.43 a3c 0.43 cyclegan 0.43
	// 28 measured pairs offered: resnet18 0.64 resnet50 0.64 transformer 0.64 lm 0.64 recommendation 0.64 a3c 0.64 cyclegan 0.64
}
