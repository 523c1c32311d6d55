package lp

import (
	"context"
	"fmt"
	"testing"
)

// gavelBenchSizes returns the (jobs, types) sizes benchmarked on a
// backend: the pure-Go simplex is dense and takes seconds at 256×3
// already, so it is benchmarked on small models only.
func gavelBenchSizes(b Backend) [][2]int {
	if b == Gonum {
		return [][2]int{{64, 3}, {256, 3}}
	}
	return [][2]int{{256, 3}, {1024, 3}, {4096, 8}}
}

// benchVariant is a backend and method benchmarked, and whether the LP
// splits t per job (barrier needs it, LP-NOTES.md).
type benchVariant struct {
	backend Backend
	method  Method
	split   bool
}

// gavelBenchVariants returns the variants compiled into this binary.
func gavelBenchVariants() []benchVariant {
	if clpAvailable {
		return []benchVariant{{CLP, DualSimplex, false}, {CLP, Barrier, true}, {Gonum, Auto, false}}
	}
	return []benchVariant{{Gonum, Auto, false}}
}

// BenchmarkGavelMaxMinBuild measures building Gavel's heterogeneity-aware
// max-min fairness LP (maximise N·t, one fairness row per job) with the lp
// API, from a seeded random instance, alone.
func BenchmarkGavelMaxMinBuild(b *testing.B) {
	for _, size := range [][2]int{{64, 3}, {256, 3}, {1024, 3}, {4096, 8}} {
		for _, split := range []bool{false, true} {
			b.Run(fmt.Sprintf("jobs=%d/types=%d/split=%v", size[0], size[1], split), func(b *testing.B) {
				in := newGavelInstance(size[0], size[1], 1)
				var rows int
				for b.Loop() {
					m, _ := in.maxMinModel(split)
					rows = m.NumRows()
				}
				b.ReportMetric(float64(rows), "rows")
			})
		}
	}
}

// BenchmarkGavelMaxMinSolve measures lp.Solve on a prebuilt Gavel max-min
// LP: loading it into the solver, solving, and checking the solution.
func BenchmarkGavelMaxMinSolve(b *testing.B) {
	ctx := context.Background()
	for _, v := range gavelBenchVariants() {
		for _, size := range gavelBenchSizes(v.backend) {
			b.Run(fmt.Sprintf("%v/%v/jobs=%d/types=%d", v.backend, v.method, size[0], size[1]), func(b *testing.B) {
				m, _ := newGavelInstance(size[0], size[1], 1).maxMinModel(v.split)
				set := &Settings{Backend: v.backend, Method: v.method}
				if _, err := Solve(ctx, m, set); err != nil {
					b.Fatal(err)
				}
				var iters int
				for b.Loop() {
					sol, err := Solve(ctx, m, set)
					if err != nil {
						b.Fatal(err)
					}
					iters += sol.Iterations
				}
				if iters > 0 { // gonum reports none
					b.ReportMetric(float64(iters)/float64(b.N), "lp-iters/op")
				}
			})
		}
	}
}
