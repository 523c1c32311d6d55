package stride_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
)

// benchGavel returns Gavel's max-min scheduler on the round-contract
// fixture (testcases.RoundBench: 1,000 GPUs, jobs of 20 types with distinct
// rows). It has decided one round.
func benchGavel(b *testing.B, jobs int, set *stride.GavelSettings) (*stride.Gavel, float64) {
	b.Helper()
	c, types, evs := testcases.RoundBench(jobs)
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, set)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Apply(evs...); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), 0); err != nil {
		b.Fatal(err)
	}
	return s, 0
}

// BenchmarkGavelDecide times one round of Gavel's mechanism under max-min at
// 1,000 GPUs and 2,000 jobs: "steady", a round with no event, which keeps
// the allocation, and "arrival", a round after one job arrived and one
// departed, which solves max-min again.
func BenchmarkGavelDecide(b *testing.B) {
	ctx := context.Background()
	b.Run("steady/gpus=1000/jobs=2000", func(b *testing.B) {
		s, now := benchGavel(b, 2000, nil)
		placed := 0
		for b.Loop() {
			now += stride.DefaultRound
			d, err := s.Decide(ctx, now)
			if err != nil {
				b.Fatal(err)
			}
			placed += d.GPUs()
		}
		b.ReportMetric(float64(placed)/float64(b.N), "gpus-used/op")
	})
	b.Run("arrival/gpus=1000/jobs=2000", func(b *testing.B) {
		s, now := benchGavel(b, 2000, nil)
		n := 0
		for b.Loop() {
			now += stride.DefaultRound
			old := s.Ledger().Jobs()[0].ID
			j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("new%05d", n)), Gang: 1, Weight: 1, Rates: []float64{1, 2, 3, 4.5}}
			n++
			if err := s.Apply(round.Depart(now, old), round.Arrive(now, j, 1e6)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Decide(ctx, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}
