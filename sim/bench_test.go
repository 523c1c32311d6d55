package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
)

// BenchmarkGavelMaxMin replays 5,000 Gavel-style jobs on Gavel's simulated
// cluster (36 each of K80, P100 and V100, 4 GPUs per server) with 6-minute
// rounds under the heterogeneity-aware max-min policy realised by
// stride.Gavel, to completion.
func BenchmarkGavelMaxMin(b *testing.B) {
	tp := gavelThroughputs(b)
	c, err := NewCluster(GavelTypes(), []int{36, 36, 36}, 4)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		multi bool
		rate  float64
	}{{false, 4}, {true, 2}} {
		w, err := Generate(tp, GenerateSettings{Jobs: 5000, Rate: tc.rate, Multi: tc.multi}, rand.NewPCG(1, 1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("multi=%v/rate=%v", tc.multi, tc.rate), func(b *testing.B) {
			var rounds, solves int
			for b.Loop() {
				s, err := stride.NewGavel(counting{alloc.MaxMin{}, &solves}, c, w.Types, nil)
				if err != nil {
					b.Fatal(err)
				}
				res, err := Run(context.Background(), w, c, s, nil)
				if err != nil {
					b.Fatal(err)
				}
				if f := res.Summary().Finished; f != len(w.Jobs) {
					b.Fatalf("%d of %d jobs finished", f, len(w.Jobs))
				}
				rounds += res.Rounds
			}
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
			b.ReportMetric(float64(solves)/float64(b.N), "solves/op")
		})
	}
}
