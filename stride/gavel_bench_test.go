package stride_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
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

// BenchmarkGavelSpaceSharing times a steady round of Gavel's space-sharing
// max-min, job by job (the default) and with a priority for each pair
// (PairPriorities), over jobs of 20 job types (one row each, 1 to 8 GPUs)
// on 128 GPUs of four types, every two job types of a gang co-locatable on
// every type at 0.5 to 0.9 of their rates. With pair priorities every pair
// of jobs of two paired job types is a candidate.
func BenchmarkGavelSpaceSharing(b *testing.B) {
	for _, jobs := range []int{200, 800} {
		for _, pairs := range []bool{false, true} {
			b.Run(fmt.Sprintf("jobs=%d/pair-priorities=%v", jobs, pairs), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(2, 7))
				types := []topology.GPUType{"k80", "p100", "v100", "a100"}
				var c topology.Cluster
				for _, t := range types {
					for i := range 4 {
						c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", t, i), Type: t, GPUs: 8})
					}
				}
				rows := make([][]float64, 20)
				gangs := make([]int, 20)
				for m := range rows {
					r := 1 + rng.Float64()
					rows[m] = []float64{r, r * (1.5 + rng.Float64()), r * (2 + 2*rng.Float64()), r * (3 + 3*rng.Float64())}
					gangs[m] = []int{1, 1, 1, 2, 4, 8}[rng.IntN(6)]
				}
				var ps []alloc.PairRate
				for a := range rows {
					for bb := a; bb < len(rows); bb++ {
						if gangs[a] != gangs[bb] {
							continue
						}
						for k, t := range types {
							ps = append(ps, alloc.PairRate{A: fmt.Sprint(a), B: fmt.Sprint(bb), Type: t,
								RateA: rows[a][k] * (0.5 + 0.4*rng.Float64()), RateB: rows[bb][k] * (0.5 + 0.4*rng.Float64())})
						}
					}
				}
				label := map[alloc.JobID]string{}
				var evs []round.Event
				for i := range jobs {
					m := rng.IntN(len(rows))
					id := alloc.JobID(fmt.Sprintf("j%05d", i))
					label[id] = fmt.Sprint(m)
					evs = append(evs, round.Arrive(0, alloc.Job{ID: id, Gang: gangs[m], Weight: 1, Rates: rows[m]}, 1e6))
				}
				set := &stride.GavelSettings{PairPriorities: pairs, Inputs: func(_ float64, p *alloc.Problem, js []*round.Job) alloc.Policy {
					labels := make([]string, len(js))
					for i, j := range js {
						labels[i] = label[j.ID]
					}
					return alloc.SpaceSharing{Objective: alloc.SharingMaxMin, JobTypes: labels, Pairs: ps}
				}}
				s, err := stride.NewGavel(alloc.SpaceSharing{Objective: alloc.SharingMaxMin}, c, types, set)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Apply(evs...); err != nil {
					b.Fatal(err)
				}
				ctx, now := context.Background(), 0.0
				if _, err := s.Decide(ctx, now); err != nil {
					b.Fatal(err)
				}
				paired, gangsRun := 0, 0
				for b.Loop() {
					now += stride.DefaultRound
					d, err := s.Decide(ctx, now)
					if err != nil {
						b.Fatal(err)
					}
					for _, p := range d.Placements {
						gangsRun++
						if len(p.Jobs) == 2 {
							paired++
						}
					}
				}
				b.ReportMetric(float64(paired)/float64(gangsRun), "paired-gangs")
			})
		}
	}
}
