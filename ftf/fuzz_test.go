package ftf

import (
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzRho feeds SingleJob.Rho and PhaseTime arbitrary times, counts,
// slowdowns and placements (Locality 9 once indexed out of range; 2^40
// GPUs once took 2^40 steps; overflowing times gave NaN with a nil
// error). Rho must return a typed error or a rho that is not NaN;
// PhaseTime must return a time that is not NaN.
func FuzzRho(f *testing.F) {
	f.Add([]byte{16, 32, 32, 16, 2, 8, 16, 1, 4, 0})
	f.Add(append([]byte{0}, fuzzdata.Bytes(1e308, 1e308, 1e308, 1e308)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		j := SingleJob{
			Elapsed: r.Number(), ItersLeft: r.Number(), ItersTotal: r.Number(), IterTime: r.Number(),
			DemandMax: r.Int(9), ClusterGPUs: r.Int(65), Contention: r.Number(),
		}
		if r.Int(2) == 0 {
			j.Slowdown = topology.Slowdown{1 + r.Number(), 1 + r.Number(), 1 + r.Number()}
		}
		p := Placement{GPUs: r.Int(65) - 1, Locality: topology.Locality(r.Int(6) - 1)}
		if r.Int(8) == 0 {
			p.GPUs = 1 << 40
		}
		if rho, err := j.Rho(p); err == nil && math.IsNaN(rho) {
			t.Fatalf("Rho(%+v) = NaN with a nil error", p)
		}
		jobs := make([]JobInfo, r.Int(5))
		for k := range jobs {
			jobs[k] = JobInfo{ItersRemaining: r.Number(), IterTime: r.Number()}
		}
		if err := validateJobs("jobs", jobs); err != nil {
			return
		}
		demand := 1 + r.Int(16)
		if r.Int(4) == 0 {
			demand = 1 << 40
		}
		if got := PhaseTime(jobs, p, demand); math.IsNaN(got) {
			t.Fatalf("PhaseTime(%+v, %+v, %d) = NaN", jobs, p, demand)
		}
	})
}
