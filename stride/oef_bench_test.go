package stride_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
)

// BenchmarkOEFDecide times a round of cooperative OEF's scheduler on the
// round-contract fixture (testcases.RoundBench: 1,000 GPUs of 4 types,
// 2,000 jobs of 20 types with 2% noise on every rate, so every row is
// distinct) after one job departed and one arrived, which solves OEF
// again: cold, and with OEFSettings.WarmStart, seeded by the binding rows
// and the basis of the solve before, the oldest job departing or one drawn
// at random (the oldest job anchors its pool's envy rows, so that the
// basis left when it departs is singular and dropped); and with a 1 s Budget and a FallbackEnvyTolerance of 0.05, where
// each round's exact solve is cut short and the tolerant shares stand
// (the fraction of rounds marked Partial is reported).
func BenchmarkOEFDecide(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		set    stride.OEFSettings
		random bool // the departing job is drawn at random, not the oldest
	}{
		{"cold", stride.OEFSettings{}, false},
		{"warm", stride.OEFSettings{WarmStart: true}, false},
		{"warm/departing=random", stride.OEFSettings{WarmStart: true}, true},
		{"budget=1s/fallback-envy-tolerance=0.05", stride.OEFSettings{Budget: time.Second, FallbackEnvyTolerance: 0.05}, false},
		{"budget=1s/fallback-envy-tolerance=0.05/warm/departing=random", stride.OEFSettings{Budget: time.Second, FallbackEnvyTolerance: 0.05, WarmStart: true}, true},
	} {
		b.Run(fmt.Sprintf("arrival/gpus=1000/jobs=2000/%s", tc.name), func(b *testing.B) {
			c, types, evs := testcases.RoundBench(2000)
			s, err := stride.NewOEF(alloc.OEF{Mode: alloc.Cooperative}, c, types, &tc.set)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Apply(evs...); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Decide(ctx, 0); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 5))
			now, partial := 0.0, 0.0
			for n := 0; b.Loop(); n++ {
				now += stride.DefaultRound
				jobs := s.Ledger().Jobs()
				old := jobs[0]
				if tc.random {
					old = jobs[rng.IntN(len(jobs))]
				}
				rates := make([]float64, len(old.Rates))
				for k, r := range old.Rates {
					rates[k] = r * (1 + 0.02*(2*rng.Float64()-1))
				}
				j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("new%05d", n)), Owner: old.Owner, Gang: old.Gang, Weight: 1, Rates: rates}
				if err := s.Apply(round.Depart(now, old.ID), round.Arrive(now, j, 1e6)); err != nil {
					b.Fatal(err)
				}
				d, err := s.Decide(ctx, now)
				if err != nil {
					b.Fatal(err)
				}
				if d.Partial {
					partial++
				}
			}
			b.ReportMetric(partial/float64(b.N), "partial")
		})
	}
}
