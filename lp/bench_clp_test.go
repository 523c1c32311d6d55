//go:build cgo && clp

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
					c, err := newCLPModel(m)
					if err != nil {
						b.Fatal(err)
					}
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
