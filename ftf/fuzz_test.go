package ftf

import (
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzRho feeds SingleJob.Rho, RhoHalving, RhoCurve and PhaseTime
// arbitrary times, counts, slowdowns and placements (Locality 9 once
// indexed out of range; 2^40 GPUs once took 2^40 steps; overflowing times
// gave NaN, or 0, with a nil error). Each rho must come with a typed error
// or be a number from 0 up, +Inf only for an app with work left and no
// GPUs; PhaseTime must return NaN exactly for the jobs and placements those
// refuse (a NaN iteration count gave 0), and otherwise a time from 0 up.
// Some jobs are gangs (JobInfo.Rigid), which may never fit the placement.
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
		rho, err := j.Rho(p)
		checkRho(t, "SingleJob.Rho", rho, err, p, j.ItersLeft > 0)
		jobs := make([]JobInfo, r.Int(5))
		gangs := false // a rigid job with work, which may never fit p
		for k := range jobs {
			jobs[k] = JobInfo{ItersRemaining: r.Number(), IterTime: r.Number()}
			if r.Int(2) == 0 {
				jobs[k].DemandMax, jobs[k].Rigid = r.Int(9), true
				gangs = gangs || jobs[k].ItersRemaining*jobs[k].IterTime > 0
			}
		}
		demand := 1 + r.Int(16)
		if r.Int(4) == 0 {
			demand = 1 << 40
		}
		bad := validateJobs("jobs", -1, jobs) != nil
		if got := PhaseTime(jobs, p, demand); math.IsNaN(got) != (bad || p.GPUs < 0) || got < 0 {
			t.Fatalf("PhaseTime(%+v, %+v, %d) = %v (jobs refused: %v)", jobs, p, demand, got, bad)
		}
		if bad {
			return
		}
		info := AppInfo{Elapsed: r.Number(), Budget: r.Number(), AppDemandMax: r.Int(9), JobDemandMax: min(demand, 64), ClusterGPUs: r.Int(65), Contention: r.Number()}
		workLeft := false
		for _, job := range jobs {
			workLeft = workLeft || job.ItersRemaining > 0
		}
		// A gang wider than the placement never runs: +Inf with GPUs.
		noGPUs := p
		if gangs {
			noGPUs.GPUs = 0
		}
		rho, err = RhoCurve(Running(jobs), info, p)
		checkRho(t, "RhoCurve", rho, err, noGPUs, workLeft)
		rho, err = RhoHalving(Phases{jobs, jobs}, info, p, HalvingModel(r.Int(2)))
		checkRho(t, "RhoHalving", rho, err, noGPUs, workLeft)
	})
}

// checkRho fails t unless err is an *gpufair.InputError or rho is a
// number from 0 up, +Inf only where work is left and p has no GPUs.
func checkRho(t *testing.T, name string, rho float64, err error, p Placement, workLeft bool) {
	t.Helper()
	if err != nil {
		var in *gpufair.InputError
		if !errors.As(err, &in) {
			t.Fatalf("%s(%+v): error %v is not an input error", name, p, err)
		}
		return
	}
	if math.IsNaN(rho) || rho < 0 || (math.IsInf(rho, 1) && (p.GPUs > 0 || !workLeft)) {
		t.Fatalf("%s(%+v) = %v with a nil error (work left: %v)", name, p, rho, workLeft)
	}
}
