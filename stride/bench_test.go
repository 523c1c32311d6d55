package stride_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// philly draws a gang size with the Philly trace's mix quoted by
// Gandiva_fair section 3.3: 86.6% 1 GPU, 2.3% 2, 4.9% 4, 6.2% more (8).
func philly(rng *rand.Rand) int {
	switch x := rng.Float64(); {
	case x < 0.866:
		return 1
	case x < 0.889:
		return 2
	case x < 0.938:
		return 4
	}
	return 8
}

// benchFair places jobs of 100 users on servers 4-GPU servers through
// Algorithm 2.
func benchFair(b *testing.B, servers, jobs int, seed uint64) *stride.Fair {
	b.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	var c topology.Cluster
	for i := range servers {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("s%04d", i), Type: "v100", GPUs: 4})
	}
	f, err := stride.NewFair(c, nil)
	if err != nil {
		b.Fatal(err)
	}
	const users = 100
	for u := range users {
		if err := f.AddTenant(alloc.Tenant{ID: alloc.TenantID(fmt.Sprintf("u%03d", u)), Weight: float64(1 + rng.IntN(10))}); err != nil {
			b.Fatal(err)
		}
	}
	for j := range jobs {
		s := stride.Submission{ID: alloc.JobID(fmt.Sprintf("j%05d", j)), Owner: alloc.TenantID(fmt.Sprintf("u%03d", rng.IntN(users))), Gang: philly(rng)}
		if _, err := f.Submit(s); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// BenchmarkSplitQuantum times one quantum of split stride with 10 jobs per
// 4-GPU server on average.
func BenchmarkSplitQuantum(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("servers=%d/jobs=%d", n, 10*n), func(b *testing.B) {
			f := benchFair(b, n, 10*n, 1)
			q := 0
			var gpus int
			for b.Loop() {
				q++
				p, err := f.Quantum(q)
				if err != nil {
					b.Fatal(err)
				}
				gpus += p.GPUs()
			}
			b.ReportMetric(float64(gpus)/float64(b.N)/float64(4*n), "busy-fraction")
		})
	}
}

// benchRounds builds Gavel's mechanism for jobs gangs of the Philly mix on
// gpus GPUs in 4-GPU servers of three types, with the allocation that
// gives every job the same time fraction on each type in proportion to the
// type's GPUs (it uses every GPU when gangs add up to more than the GPUs).
func benchRounds(b *testing.B, gpus, jobs int, seed uint64) *stride.Rounds {
	b.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	types := []topology.GPUType{"k80", "p100", "v100"}
	var c topology.Cluster
	for i := range gpus / 4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("s%04d", i), Type: types[i%3], GPUs: 4})
	}
	_, count := c.Capacity()
	r, err := stride.NewRounds(c, types)
	if err != nil {
		b.Fatal(err)
	}
	gang := make([]int, jobs)
	sum := 0
	for i := range gang {
		gang[i] = min(philly(rng), 4)
		sum += gang[i]
	}
	combos := make([]stride.Combo, jobs)
	for i := range combos {
		x := make([]float64, len(types))
		for k := range x {
			x[k] = float64(count[k]) / float64(sum)
		}
		combos[i] = stride.Combo{ID: fmt.Sprintf("j%05d", i), Jobs: []alloc.JobID{alloc.JobID(fmt.Sprintf("j%05d", i))}, Gang: gang[i], Target: x}
	}
	if err := r.Set(combos...); err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkGavelRound times one round of Gavel's mechanism, after 20 rounds
// of warm-up so that priorities are finite.
func BenchmarkGavelRound(b *testing.B) {
	for _, tc := range []struct{ gpus, jobs int }{{256, 1024}, {1024, 4096}} {
		b.Run(fmt.Sprintf("gpus=%d/jobs=%d", tc.gpus, tc.jobs), func(b *testing.B) {
			r := benchRounds(b, tc.gpus, tc.jobs, 1)
			q := 0
			for range 20 {
				q++
				if _, err := r.Round(q); err != nil {
					b.Fatal(err)
				}
			}
			var renewed, placed int
			for b.Loop() {
				q++
				p, _ := r.Round(q)
				renewed += p.Renewals()
				placed += len(p.Assignments)
			}
			b.ReportMetric(float64(placed)/float64(b.N), "jobs/op")
			b.ReportMetric(float64(renewed)/float64(placed), "renewed-fraction")
		})
	}
}

// BenchmarkRounder times one round of OEF's rounding placer for 100 users
// with 40 jobs each on 1,024 GPUs of three types.
func BenchmarkRounder(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 4))
	types := []topology.GPUType{"k80", "p100", "v100"}
	var c topology.Cluster
	for i := range 256 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("s%04d", i), Type: types[i%3], GPUs: 4})
	}
	_, count := c.Capacity()
	const users = 100
	var tn []stride.Tenant
	for u := range users {
		t := stride.Tenant{ID: alloc.TenantID(fmt.Sprintf("u%03d", u))}
		for j := range 40 {
			t.Jobs = append(t.Jobs, alloc.Job{ID: alloc.JobID(fmt.Sprintf("u%03d-%02d", u, j)), Gang: min(philly(rng), 4), Weight: 1})
		}
		tn = append(tn, t)
	}
	r, err := stride.NewRounder(c, types, tn)
	if err != nil {
		b.Fatal(err)
	}
	ideal := make([][]float64, users)
	for i := range ideal {
		ideal[i] = make([]float64, len(types))
		for k := range types {
			ideal[i][k] = float64(count[k]) / users
		}
	}
	q := 0
	for b.Loop() {
		q++
		if _, _, err := r.Round(q, ideal); err != nil {
			b.Fatal(err)
		}
	}
}
