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
	p.Tenants = make([]Tenant, n)
	for s := range p.Tenants {
		p.Tenants[s] = Tenant{ID: TenantID(fmt.Sprint("e", s)), Weight: float64(1 + s%2)}
	}
	for i := range p.Jobs {
		p.Jobs[i].Owner = p.Tenants[i%n].ID
	}
}

// waterFillWith runs single-level (h nil) or hierarchical water filling on
// p with the given round method, as the policies' Allocate does.
func waterFillWith(p *Problem, h *Hierarchical, method roundMethod) error {
	var lv *levelProblem
	var classes rowClasses
	var ew *entityWeights
	var err error
	if h == nil {
		lv, classes, err = maxMinProblem(p, false)
		if err == nil {
			ew = classEntities(lv)
		}
	} else {
		lv, classes, ew, err = h.problem(p)
	}
	if err != nil {
		return err
	}
	y, _, err := waterFill(context.Background(), lv, ew, method, nil)
	if err != nil {
		return err
	}
	classAllocation(p, classes, y)
	return nil
}

// BenchmarkWaterFilling times the water-filling policies with warm rounds
// (the default), cold rounds (each round's LP built and solved from
// scratch, the reference) and decomposed rounds.
func BenchmarkWaterFilling(b *testing.B) {
	fifo := &Hierarchical{FIFO: []TenantID{"e0", "e1"}}
	for _, sz := range [][2]int{{512, 3}, {2048, 3}} {
		p := randomMaxMinProblem(b, sz[0], sz[1], 1)
		withEntities(p, 16)
		for _, tc := range []struct {
			name   string
			h      *Hierarchical
			method roundMethod
		}{
			{"single", nil, warmRounds},
			{"single-cold", nil, coldRounds},
			{"hierarchical-fair", &Hierarchical{}, warmRounds},
			{"hierarchical-fair-cold", &Hierarchical{}, coldRounds},
			{"hierarchical-2fifo", fifo, warmRounds},
			{"hierarchical-2fifo-cold", fifo, coldRounds},
			{"hierarchical-2fifo-decomposed", fifo, decomposedRounds},
		} {
			b.Run(fmt.Sprintf("jobs=%d/types=%d/%s", sz[0], sz[1], tc.name), func(b *testing.B) {
				for b.Loop() {
					if err := waterFillWith(p, tc.h, tc.method); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
