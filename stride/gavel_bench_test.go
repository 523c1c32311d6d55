package stride_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// benchGavel returns Gavel's max-min scheduler on 1,000 GPUs (160 K80s and
// 280 each of three faster types, on 8-GPU servers) with jobs of 20 job
// types whose rates carry 2% noise, so that every row is distinct; gangs
// follow Gavel's continuous-multiple mix. It has decided one round.
func benchGavel(b *testing.B, jobs int, set *stride.GavelSettings) (*stride.Gavel, float64) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 13))
	types := []topology.GPUType{"k80", "p100", "v100", "a100"}
	counts := []int{160, 280, 280, 280}
	var c topology.Cluster
	for k, t := range types {
		for i := 0; i*8 < counts[k]; i++ {
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", t, i), Type: t, GPUs: min(8, counts[k]-8*i)})
		}
	}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, set)
	if err != nil {
		b.Fatal(err)
	}
	base := make([][]float64, 20)
	for m := range base {
		r := 1 + rng.Float64()
		base[m] = []float64{r, r * (1.5 + rng.Float64()), r * (2 + 2*rng.Float64()), r * (3 + 3*rng.Float64())}
	}
	var evs []round.Event
	for i := range jobs {
		rates := make([]float64, len(types))
		for k, r := range base[rng.IntN(len(base))] {
			rates[k] = r * (1 + 0.02*(2*rng.Float64()-1))
		}
		gang := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}[rng.IntN(10)]
		j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%05d", i)), Owner: alloc.TenantID(fmt.Sprintf("u%02d", i%50)), Gang: gang, Weight: 1, Rates: rates}
		evs = append(evs, round.Arrive(0, j, 1e6))
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
