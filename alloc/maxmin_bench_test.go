package alloc

import (
	"context"
	"fmt"
	"testing"
)

// jobLevelProblem is the max-min level problem of p with every job its own
// class: the full LP that class grouping and decomposition are measured
// against.
func jobLevelProblem(b *testing.B, p *Problem) *levelProblem {
	rates, err := normalisedRates(p, false)
	if err != nil {
		b.Fatal(err)
	}
	weight, index := make([]float64, len(p.Jobs)), make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		weight[i], index[i] = j.Weight, float64(i)
	}
	lv, _ := newLevelProblem(p, rates, weight, index)
	return lv
}

// benchMaxMin times MaxMin.Allocate end to end on p and reports the
// decomposition's points and explicit classes.
func benchMaxMin(b *testing.B, p *Problem) {
	lv, _, err := maxMinProblem(p, false)
	if err != nil {
		b.Fatal(err)
	}
	sol, err := solveLevel(context.Background(), lv, nil, Decomposed, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := (MaxMin{}).Allocate(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lv.numClasses()), "classes")
	b.ReportMetric(float64(sol.cuts), "points")
}

// benchFullLP times the one-LP reference over every job.
func benchFullLP(b *testing.B, p *Problem) {
	lv := jobLevelProblem(b, p)
	for b.Loop() {
		if _, err := solveLevelFull(context.Background(), lv, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMaxMinGavelWorkload(b *testing.B) {
	for _, n := range []int{1024, 16384} {
		p := gavelWorkload(b, n, 1)
		b.Run(fmt.Sprintf("jobs=%d/decomposed", n), func(b *testing.B) { benchMaxMin(b, p) })
		b.Run(fmt.Sprintf("jobs=%d/fullLP", n), func(b *testing.B) { benchFullLP(b, p) })
	}
}

func BenchmarkMaxMinDistinct(b *testing.B) {
	for _, sz := range [][2]int{{1024, 8}, {4096, 8}, {16384, 8}, {16384, 3}} {
		p := randomMaxMinProblem(b, sz[0], sz[1], 1)
		b.Run(fmt.Sprintf("jobs=%d/types=%d/decomposed", sz[0], sz[1]), func(b *testing.B) { benchMaxMin(b, p) })
		b.Run(fmt.Sprintf("jobs=%d/types=%d/fullLP", sz[0], sz[1]), func(b *testing.B) { benchFullLP(b, p) })
	}
}
