package alloc

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzOEFWarm seeds cooperative OEF with arbitrary warm rows and an
// arbitrary basis: rows and shares naming jobs present, departed or never
// seen, GPU types unknown or repeated, speedups of any length and value
// (NaN, ±Inf, negative, huge), ghosts that are still in the problem. A
// warm start is only a hint: the solve must neither panic nor fail, and
// must return the cold solve's throughput, certified.
func FuzzOEFWarm(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3, 1, 0, 4, 2, 2, 1, 3, 1, 5, 0, 2, 4, 4, 1})
	f.Add(append([]byte{2, 1, 6, 2, 0, 0, 1, 1, 3, 6, 4}, fuzzdata.Bytes(math.Inf(1), -1, 1e308, 0)...))
	types := []topology.GPUType{"k80", "p100", "v100"}
	c, err := NewCapacity(types, []float64{3, 2, 2})
	if err != nil {
		f.Fatal(err)
	}
	var jobs []Job
	for i, r := range [][]float64{{1, 2, 4}, {1, 3, 3}, {1, 1.5, 5}, {2, 3, 4}, {1, 4, 4.5}} {
		jobs = append(jobs, Job{ID: JobID(fmt.Sprint("j", i)), Owner: TenantID(fmt.Sprint("u", i%3)), Gang: 1, Weight: 1, Rates: r})
	}
	p, err := NewJobProblem(c, []Tenant{{ID: "u0", Weight: 1}, {ID: "u1", Weight: 2}, {ID: "u2", Weight: 1}}, jobs)
	if err != nil {
		f.Fatal(err)
	}
	coop := OEF{Mode: Cooperative}
	_, cold, err := coop.AllocateCertified(context.Background(), p)
	if err != nil {
		f.Fatal(err)
	}
	names := []JobID{"j0", "j1", "j2", "j3", "j4", "gone", "other"}
	typeNames := append(types, "tpu")
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		name := func() JobID { return names[r.Int(len(names))] }
		typ := func() topology.GPUType { return typeNames[r.Int(len(typeNames))] }
		set := &OEFSettings{}
		for range r.Int(6) {
			set.WarmRows = append(set.WarmRows, OEFEnvyRow{Envier: name(), Envied: name()})
		}
		if r.Int(4) > 0 {
			b := &OEFBasis{Speedups: map[JobID][]float64{}}
			for range r.Int(8) {
				b.Shares = append(b.Shares, OEFShare{Job: name(), Type: typ()})
			}
			for range r.Int(8) {
				b.Tight = append(b.Tight, OEFEnvyRow{Envier: name(), Envied: name()})
			}
			for range r.Int(3) {
				b.Full = append(b.Full, typ())
			}
			for range r.Int(5) {
				b.Types = append(b.Types, typ())
			}
			for range r.Int(5) {
				b.Speedups[name()] = r.Floats(r.Int(5))
			}
			for range r.Int(3) {
				b.Ghosts = append(b.Ghosts, name())
			}
			set.WarmBasis = *b
		}
		a, got, err := OEF{Mode: Cooperative, Settings: set}.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatalf("with warm rows %v and basis %+v: %v", set.WarmRows, set.WarmBasis, err)
		}
		if err := a.Validate(p.Capacity); err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Throughput-cold.Throughput) > 1e-6*max(1, cold.Throughput) || got.Envy > certEnvyTol || got.Gap() > certGapTol {
			t.Fatalf("throughput %v (cold %v), envy %v, gap %v", got.Throughput, cold.Throughput, got.Envy, got.Gap())
		}
	})
}
