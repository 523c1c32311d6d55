package ftf

import (
	"math"
	"testing"

	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// A gang runs on exactly its GPUs: spread with S(G) = 2, a rigid 4-GPU job
// takes 100·2/4 = 50 s where an elastic one stays on one GPU (100 s, a
// second GPU being no faster); gangs that do not all fit run in waves, a
// later job filling GPUs an earlier one cannot use; a gang larger than the
// placement never runs.
func TestPhaseTimeRigid(t *testing.T) {
	slow := topology.Slowdown{1, 2, 2}
	job := func(work float64, c int, rigid bool) JobInfo {
		return JobInfo{ItersRemaining: work, IterTime: 1, DemandMax: c, Slowdown: slow, Rigid: rigid}
	}
	for _, tc := range []struct {
		name string
		jobs []JobInfo
		p    Placement
		want float64
	}{
		{"spread gang", []JobInfo{job(100, 4, true)}, Placement{GPUs: 4, Locality: topology.SameRack}, 50},
		{"spread elastic", []JobInfo{job(100, 4, false)}, Placement{GPUs: 4, Locality: topology.SameRack}, 100},
		{"gang and elastic together", []JobInfo{job(100, 2, true), job(100, 2, false)}, Placement{GPUs: 3}, 100},
		{"elastic takes what the gang leaves", []JobInfo{job(100, 2, true), job(100, 2, false)}, Placement{GPUs: 4}, 50},
		// 3-GPU gang 100 s, 2-GPU gang 50 s, elastic 30 s on 4 GPUs: the
		// elastic job runs beside the 3-GPU gang, the 2-GPU gang after it.
		{"waves", []JobInfo{job(300, 3, true), job(100, 2, true), job(30, 1, false)}, Placement{GPUs: 4}, 150},
		{"two gangs in turn", []JobInfo{job(100, 4, true), job(100, 4, true)}, Placement{GPUs: 4}, 50},
		{"too large", []JobInfo{job(100, 4, true)}, Placement{GPUs: 3}, math.Inf(1)},
	} {
		if got := PhaseTime(tc.jobs, tc.p, 8); got != tc.want {
			t.Errorf("%s: PhaseTime = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// With gangs, PhaseTime lies between the longest job's time and the jobs'
// times one after another, and is no less than their GPU-seconds over the
// GPUs.
func TestPhaseTimeRigidBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := rapid.IntRange(1, 16).Draw(t, "gpus")
		s := rapid.Float64Range(1, 4).Draw(t, "slowdown")
		loc := rapid.SampledFrom([]topology.Locality{topology.SameServer, topology.SameRack}).Draw(t, "locality")
		n := rapid.IntRange(1, 8).Draw(t, "jobs")
		var jobs []JobInfo
		longest, serial, area := 0.0, 0.0, 0.0
		for range n {
			j := JobInfo{ItersRemaining: rapid.Float64Range(1, 100).Draw(t, "work"), IterTime: 1,
				DemandMax: rapid.IntRange(1, g).Draw(t, "cap"), Slowdown: topology.Slowdown{1, s, s}, Rigid: true}
			jobs = append(jobs, j)
			d := j.ItersRemaining
			if j.DemandMax > 1 {
				d *= j.Slowdown.At(loc) / float64(j.DemandMax)
			}
			longest, serial, area = max(longest, d), serial+d, area+d*float64(j.DemandMax)
		}
		got := PhaseTime(jobs, Placement{GPUs: g, Locality: loc}, g)
		const tol = 1e-9
		if got < longest*(1-tol) || got < area/float64(g)*(1-tol) || got > serial*(1+tol) {
			t.Fatalf("PhaseTime %v outside [max(%v, %v), %v]", got, longest, area/float64(g), serial)
		}
	})
}
