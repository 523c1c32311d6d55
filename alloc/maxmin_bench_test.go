package alloc

import (
	"context"
	"flag"
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

// bigFullLP enables the full-LP reference at 16,384 jobs (tens of seconds
// per solve): go test -bench . -maxmin.bigfull.
var bigFullLP = flag.Bool("maxmin.bigfull", false, "also time the full max-min LP at 16,384 jobs")

// benchFullLP times the one-LP reference over every job.
func benchFullLP(b *testing.B, p *Problem) {
	if len(p.Jobs) >= 16384 && !*bigFullLP {
		b.Skip("the full LP at this size takes tens of seconds; run with -maxmin.bigfull")
	}
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

// withEntities gives p's jobs to users "e0".."e{n-1}" (weights 1 or 2),
// round robin.
func withEntities(p *Problem, n int) {
	p.Users = make([]User, n)
	for s := range p.Users {
		p.Users[s] = User{ID: UserID(fmt.Sprint("e", s)), Weight: float64(1 + s%2)}
	}
	for i := range p.Jobs {
		p.Jobs[i].Owner = p.Users[i%n].ID
	}
}

func BenchmarkWaterFilling(b *testing.B) {
	for _, sz := range [][2]int{{512, 3}, {2048, 3}} {
		p := randomMaxMinProblem(b, sz[0], sz[1], 1)
		withEntities(p, 16)
		for _, tc := range []struct {
			name string
			pol  Policy
		}{
			{"single", WaterFilling{}},
			{"hierarchical-fair", Hierarchical{}},
			{"hierarchical-2fifo", Hierarchical{FIFO: []UserID{"e0", "e1"}}},
			{"hierarchical-2fifo-decomposed", Hierarchical{FIFO: []UserID{"e0", "e1"}, Decomposed: true}},
		} {
			b.Run(fmt.Sprintf("jobs=%d/types=%d/%s", sz[0], sz[1], tc.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := tc.pol.Allocate(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
