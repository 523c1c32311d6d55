//go:build cgo && !purego

package lp

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkGavelMaxMinPhases splits one end-to-end CLP solve of Gavel's
// max-min LP into its phases, timed separately in each iteration: build
// (the lp model in Go), load (copying it into CLP, column-major), clp
// (CLP's own solve, including copying the solution out) and check (the
// solution checked against every bound and row in Go). overhead-% is
// (build+load+check)/clp: what building in Go and handing the model to CLP
// adds to CLP's solve time.
func BenchmarkGavelMaxMinPhases(b *testing.B) {
	ctx := context.Background()
	for _, v := range gavelBenchVariants() {
		if v.backend != CLP {
			continue
		}
		for _, size := range gavelBenchSizes(CLP) {
			b.Run(fmt.Sprintf("%v/jobs=%d/types=%d", v.method, size[0], size[1]), func(b *testing.B) {
				in := newGavelInstance(size[0], size[1], 1)
				set, err := resolveSettings(&Settings{Backend: CLP, Method: v.method})
				if err != nil {
					b.Fatal(err)
				}
				var build, load, clp, check time.Duration
				for b.Loop() {
					t0 := time.Now()
					m, _ := in.maxMinModel(v.split)
					t1 := time.Now()
					c := newCLPModel(m)
					t2 := time.Now()
					sol, err := c.run(ctx, set, false)
					t3 := time.Now()
					if err == nil {
						_, err = finish(m, sol, set)
					}
					t4 := time.Now()
					c.close()
					if err != nil {
						b.Fatal(err)
					}
					build, load, clp, check = build+t1.Sub(t0), load+t2.Sub(t1), clp+t3.Sub(t2), check+t4.Sub(t3)
				}
				ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
				b.ReportMetric(ms(build), "build-ms/op")
				b.ReportMetric(ms(load), "load-ms/op")
				b.ReportMetric(ms(clp), "clp-ms/op")
				b.ReportMetric(ms(check), "check-ms/op")
				b.ReportMetric(100*float64(build+load+check)/float64(clp), "overhead-%")
			})
		}
	}
}

// BenchmarkCLPPaths compares the two ways the CLP backend reaches CLP on
// Gavel's max-min LP, end to end (load, solve, copy out): github.com/lanl/clp,
// the default for one-shot solves, which copies the matrix a column and an
// element at a time through cgo, and CLP's C interface, which loads it in one
// call and is used for presolve and warm row generation.
func BenchmarkCLPPaths(b *testing.B) {
	ctx := context.Background()
	set, err := resolveSettings(&Settings{Backend: CLP})
	if err != nil {
		b.Fatal(err)
	}
	paths := []struct {
		name  string
		solve func(*Model) (*Solution, error)
	}{
		{"lanl", func(m *Model) (*Solution, error) { return solveLANL(ctx, m, set) }},
		{"c-interface", func(m *Model) (*Solution, error) {
			c := newCLPModel(m)
			defer c.close()
			return c.run(ctx, set, false)
		}},
	}
	for _, size := range [][2]int{{256, 3}, {1024, 3}} {
		m, _ := newGavelInstance(size[0], size[1], 1).maxMinModel(false)
		for _, p := range paths {
			b.Run(fmt.Sprintf("%s/jobs=%d/types=%d", p.name, size[0], size[1]), func(b *testing.B) {
				if _, err := p.solve(m); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := p.solve(m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
