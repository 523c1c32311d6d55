package testcases

import (
	"fmt"
	"math/rand/v2"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// RoundBench is the fixture of the round-contract benchmarks: 1,000 GPUs
// (160 K80s and 280 each of three faster types, on 8-GPU servers) and n
// jobs arriving at time 0, each of 10^6 steps, of 20 job types whose rates
// carry 2% noise so that every row is distinct, owned by 50 tenants, with
// gangs from Gavel's continuous-multiple mix (70% of one GPU, 10% each of
// 2, 4 and 8). The same n gives the same fixture.
func RoundBench(n int) (topology.Cluster, []topology.GPUType, []round.Event) {
	rng := rand.New(rand.NewPCG(1, 13))
	types := []topology.GPUType{"k80", "p100", "v100", "a100"}
	counts := []int{160, 280, 280, 280}
	var c topology.Cluster
	for k, t := range types {
		for i := 0; i*8 < counts[k]; i++ {
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", t, i), Type: t, GPUs: min(8, counts[k]-8*i)})
		}
	}
	base := make([][]float64, 20)
	for m := range base {
		r := 1 + rng.Float64()
		base[m] = []float64{r, r * (1.5 + rng.Float64()), r * (2 + 2*rng.Float64()), r * (3 + 3*rng.Float64())}
	}
	evs := make([]round.Event, 0, n)
	for i := range n {
		rates := make([]float64, len(types))
		for k, r := range base[rng.IntN(len(base))] {
			rates[k] = r * (1 + 0.02*(2*rng.Float64()-1))
		}
		gang := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}[rng.IntN(10)]
		j := alloc.Job{ID: alloc.JobID(fmt.Sprintf("j%05d", i)), Owner: alloc.TenantID(fmt.Sprintf("u%02d", i%50)), Gang: gang, Weight: 1, Rates: rates}
		evs = append(evs, round.Arrive(0, j, 1e6))
	}
	return c, types, evs
}
