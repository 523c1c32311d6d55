package alloc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// TestMakespanSharingPlan solves the makespan LP with and without space
// sharing at time 0 of the static traces of docs/reproduction.md (Gavel's
// generator, seed 1, on 36 GPUs of each of K80, P100 and V100, and 300 jobs
// on 12 of each; Gavel's measured pair rates): the planned makespan with
// pairs is never later, and it is shorter only where the cluster is
// oversubscribed enough that the longest job alone does not set it. -v
// prints the plans:
//
//	go test ./alloc -run MakespanSharingPlan -v
func TestMakespanSharingPlan(t *testing.T) {
	cases := []struct{ n, gpus int }{{100, 36}, {400, 36}, {300, 12}, {1000, 36}}
	if testing.Short() {
		cases = cases[:3]
	}
	for _, tc := range cases {
		in := newMakespanPlan(t, tc.n, float64(tc.gpus))
		a, err := alloc.Makespan{RemainingSteps: in.steps}.Allocate(context.Background(), in.p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := in.sharing(alloc.SharingMinMakespan).Solve(context.Background(), in.p)
		if err != nil {
			t.Fatal(err)
		}
		alone, shared := finish(in.steps, a.Utilities(in.p.Valuations())), finish(in.steps, r.Throughput)
		if shared > alone*(1+1e-6) {
			t.Errorf("%d jobs: planned makespan %v with space sharing, later than %v without", tc.n, shared, alone)
		}
		t.Logf("%4d jobs on %v GPUs: planned makespan %.1f h alone, %.1f h with space sharing (%.3fx); the longest job alone on its fastest type %.1f h",
			tc.n, 3*tc.gpus, alone/3600, shared/3600, alone/shared, in.longest/3600)
	}
}

// BenchmarkSpaceSharingMakespanPlan times the makespan objectives with
// space sharing on TestMakespanSharingPlan's static traces of 300 jobs (12
// GPUs of each type) and 1,000 (36 of each):
//
//	go test [-tags clp] ./alloc -run '^$' -bench SpaceSharingMakespanPlan -benchtime 1x
func BenchmarkSpaceSharingMakespanPlan(b *testing.B) {
	for _, tc := range []struct{ n, gpus int }{{300, 12}, {1000, 36}} {
		in := newMakespanPlan(b, tc.n, float64(tc.gpus))
		for _, obj := range []alloc.SharingObjective{alloc.SharingMinMakespan, alloc.SharingMinMakespanThenTotal} {
			s := in.sharing(obj)
			b.Run(fmt.Sprintf("jobs=%d/%s", tc.n, s.Name()), func(b *testing.B) {
				for b.Loop() {
					if _, err := s.Solve(context.Background(), in.p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// makespanPlan is one of TestMakespanSharingPlan's instances.
type makespanPlan struct {
	p       *alloc.Problem
	labels  []string
	pairs   []alloc.PairRate
	steps   []float64
	longest float64 // the longest time any job needs alone on its fastest type
}

// sharing returns the space-sharing policy of objective obj on in.
func (in makespanPlan) sharing(obj alloc.SharingObjective) alloc.SpaceSharing {
	return alloc.SpaceSharing{Objective: obj, JobTypes: in.labels, Pairs: in.pairs, RemainingSteps: in.steps}
}

// newMakespanPlan draws n jobs of Gavel's generator (seed 1) on per GPUs
// of each of K80, P100 and V100, with Gavel's measured pair rates.
func newMakespanPlan(t testing.TB, n int, per float64) makespanPlan {
	t.Helper()
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	gpus := []string{"k80", "p100", "v100"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: n}, rand.NewPCG(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	in := makespanPlan{labels: make([]string, n), steps: make([]float64, n)}
	jobs := make([]alloc.Job, n)
	ids := make([]string, n)
	rates := make([][]float64, n)
	kinds := map[string]data.JobType{}
	for i, j := range wl.Jobs {
		kind := data.JobType{Model: j.Kind, Scale: j.Gang}
		ids[i], in.labels[i], in.steps[i] = string(j.ID), kind.String(), j.Steps
		kinds[in.labels[i]] = kind
		jobs[i] = alloc.Job{ID: j.ID, Gang: j.Gang, Weight: 1}
		rates[i] = make([]float64, len(gpus))
		best := 0.0
		for k, g := range gpus {
			rates[i][k], _ = tp.Isolated(g, kind)
			best = max(best, rates[i][k])
		}
		in.longest = max(in.longest, in.steps[i]/best)
	}
	for a, ka := range kinds {
		for b, kb := range kinds {
			for k, g := range gpus {
				if ra, rb, ok := tp.Pair(g, ka, kb); ok && a <= b && ra > 0 && rb > 0 {
					in.pairs = append(in.pairs, alloc.PairRate{A: a, B: b, Type: types[k], RateA: ra, RateB: rb})
				}
			}
		}
	}
	m, err := speedup.New(ids, types, rates)
	if err != nil {
		t.Fatal(err)
	}
	in.p, err = alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{per, per, per}}, nil, jobs, m)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// finish is the latest finish time of jobs of steps at throughputs thr.
func finish(steps, thr []float64) float64 {
	last := 0.0
	for i, s := range steps {
		last = max(last, s/thr[i])
	}
	return last
}
