package alloc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// gavelSharingWorkload draws n jobs from Gavel's measured job types (seeded),
// on a cluster of n/4 GPUs of each of K80, P100 and V100, with every
// co-located pair Gavel measured. It returns the problem, each job's type
// label and the pair rates.
func gavelSharingWorkload(tb testing.TB, n int, seed uint64) (*Problem, []string, []PairRate) {
	return gavelSharingCluster(tb, n, max(8, n/4), seed)
}

// gavelSharingCluster is gavelSharingWorkload on gpus GPUs of each type.
func gavelSharingCluster(tb testing.TB, n, gpus int, seed uint64) (*Problem, []string, []PairRate) {
	tb.Helper()
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		tb.Fatal(err)
	}
	names := []string{"k80", "p100", "v100"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	kinds := tp.JobTypes()
	rng := rand.New(rand.NewPCG(seed, 1))
	jobs := make([]Job, n)
	ids := make([]string, n)
	labels := make([]string, n)
	rates := make([][]float64, n)
	for i := range jobs {
		kind := kinds[rng.IntN(len(kinds))]
		ids[i] = fmt.Sprintf("job%d", i)
		labels[i] = kind.String()
		jobs[i] = Job{ID: JobID(ids[i]), Gang: kind.Scale, Weight: 1}
		rates[i] = make([]float64, len(names))
		for k, g := range names {
			rates[i][k], _ = tp.Isolated(g, kind)
		}
	}
	var pairs []PairRate
	for a, ka := range kinds {
		for _, kb := range kinds[a:] {
			for k, g := range names {
				if ra, rb, ok := tp.Pair(g, ka, kb); ok {
					pairs = append(pairs, PairRate{A: ka.String(), B: kb.String(), Type: types[k], RateA: ra, RateB: rb})
				}
			}
		}
	}
	m, err := speedup.New(ids, types, rates)
	if err != nil {
		tb.Fatal(err)
	}
	c := float64(gpus)
	p, err := NewProblem(Capacity{Types: types, Count: []float64{c, c, c}}, nil, jobs, m)
	if err != nil {
		tb.Fatal(err)
	}
	return p, labels, pairs
}

// perJobPairs expands pairs of job types into pairs of jobs (Gavel's
// pairwise formulation).
func perJobPairs(p *Problem, labels []string, pairs []PairRate) []PairRate {
	byKey := map[[2]string][]PairRate{}
	for _, pr := range pairs {
		byKey[[2]string{pr.A, pr.B}] = append(byKey[[2]string{pr.A, pr.B}], pr)
	}
	var out []PairRate
	for i := range p.Jobs {
		for j := i + 1; j < len(p.Jobs); j++ {
			a, b := string(p.Jobs[i].ID), string(p.Jobs[j].ID)
			for _, pr := range byKey[[2]string{labels[i], labels[j]}] {
				out = append(out, PairRate{A: a, B: b, Type: pr.Type, RateA: pr.RateA, RateB: pr.RateB})
			}
			if labels[i] != labels[j] {
				for _, pr := range byKey[[2]string{labels[j], labels[i]}] {
					out = append(out, PairRate{A: a, B: b, Type: pr.Type, RateA: pr.RateB, RateB: pr.RateA})
				}
			}
		}
	}
	return out
}

func BenchmarkSpaceSharing(b *testing.B) {
	for _, obj := range []SharingObjective{SharingMaxMin, SharingMaxMinThenTotal, SharingMaxTotal, SharingWaterFilling} {
		for _, n := range []int{64, 1024, 4096} {
			b.Run(fmt.Sprintf("%s/aggregated/jobs=%d", SpaceSharing{Objective: obj}.Name(), n), func(b *testing.B) {
				p, labels, pairs := gavelSharingWorkload(b, n, 1)
				s := SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs}
				if _, err := s.Solve(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := s.Solve(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		for _, n := range []int{64, 256} { // 512: 9.1 s (max-min), docs/benchmarks/gavel.md
			if obj == SharingMaxMinThenTotal || obj == SharingWaterFilling {
				break // two LPs or more of the same size as max-min's
			}
			b.Run(fmt.Sprintf("%s/pairwise/jobs=%d", SpaceSharing{Objective: obj}.Name(), n), func(b *testing.B) {
				p, labels, pairs := gavelSharingWorkload(b, n, 1)
				s := SpaceSharing{Objective: obj, Pairs: perJobPairs(p, labels, pairs)}
				if _, err := s.Solve(context.Background(), p); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := s.Solve(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkSpaceSharingWaterFilling: SharingWaterFilling and
// SharingHierarchical (4 tenants of weights 1 to 4, the first FIFO)
// against SharingMaxMin, on n/4 GPUs of each type (crowded: every job can use every
// type, so one round usually stops them all) and on n/2 (where jobs reach
// their best rate and later rounds raise the others). levels/op is the
// number of distinct normalised throughputs, a lower bound on the rounds.
func BenchmarkSpaceSharingWaterFilling(b *testing.B) {
	for _, n := range []int{64, 1024} {
		for _, load := range []struct {
			name string
			gpus int
		}{{"crowded", max(8, n/4)}, {"light", n / 2}} {
			for _, obj := range []SharingObjective{SharingMaxMin, SharingWaterFilling, SharingHierarchical} {
				b.Run(fmt.Sprintf("jobs=%d/%s/%s", n, load.name, SpaceSharing{Objective: obj}.Name()), func(b *testing.B) {
					p, labels, pairs := gavelSharingCluster(b, n, load.gpus, 1)
					s := SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs}
					if obj == SharingHierarchical {
						s.FIFO = benchEntities(p, 4)
					}
					r, err := s.Solve(context.Background(), p)
					if err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := s.Solve(context.Background(), p); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(distinctLevels(sortedLevels(p, r.Throughput))), "levels/op")
				})
			}
		}
	}
}

// benchEntities spreads p's jobs over n tenants of weights 1 to n, in
// job order, and returns the first as FIFO.
func benchEntities(p *Problem, n int) []TenantID {
	p.Tenants = nil
	for u := range n {
		p.Tenants = append(p.Tenants, Tenant{ID: TenantID(fmt.Sprint("u", u)), Weight: float64(u + 1)})
	}
	for i := range p.Jobs {
		p.Jobs[i].Owner = p.Tenants[i%n].ID
	}
	return []TenantID{p.Tenants[0].ID}
}

// distinctLevels counts the values of a sorted vector that differ from the
// previous one by more than 1e-6 relative.
func distinctLevels(v []float64) int {
	n := 0
	for i, x := range v {
		if i == 0 || !relClose(x, v[i-1], 1e-6) {
			n++
		}
	}
	return n
}

// BenchmarkSpaceSharingJobClasses: SharingMinMakespan and SharingFIFO,
// each job with its own work left or rank, so each job is a class; the
// partner formulation (Solve's choice from 256 jobs here) against the
// class formulation's pairs of jobs.
func BenchmarkSpaceSharingJobClasses(b *testing.B) {
	for _, obj := range []SharingObjective{SharingMinMakespan, SharingFIFO} {
		for _, f := range []sharingFormulation{partnerFormulation, classFormulation} {
			for _, n := range []int{64, 256, 1024} {
				name := map[sharingFormulation]string{partnerFormulation: "partner", classFormulation: "class"}[f]
				b.Run(fmt.Sprintf("%s/%s/jobs=%d", SpaceSharing{Objective: obj}.Name(), name, n), func(b *testing.B) {
					p, labels, pairs := gavelSharingWorkload(b, n, 1)
					rng := rand.New(rand.NewPCG(2, 1))
					steps, arrival := make([]float64, n), make([]float64, n)
					for i := range steps {
						steps[i] = 1e3 + rng.Float64()*1e6
						arrival[i] = rng.Float64() * 1e5
					}
					s := SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs, RemainingSteps: steps, Arrival: arrival, formulation: f}
					for b.Loop() {
						if _, err := s.Solve(context.Background(), p); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
