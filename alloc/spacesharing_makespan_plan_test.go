package alloc_test

import (
	"context"
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
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	gpus := []string{"k80", "p100", "v100"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	cases := []struct{ n, gpus int }{{100, 36}, {400, 36}, {300, 12}, {1000, 36}}
	if testing.Short() {
		cases = cases[:3]
	}
	for _, tc := range cases {
		n, per := tc.n, float64(tc.gpus)
		wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: n}, rand.NewPCG(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		jobs := make([]alloc.Job, n)
		ids, labels := make([]string, n), make([]string, n)
		rates, steps := make([][]float64, n), make([]float64, n)
		kinds := map[string]data.JobType{}
		longest := 0.0 // the longest time any job needs alone on its fastest type
		for i, j := range wl.Jobs {
			kind := data.JobType{Model: j.Kind, Scale: j.Gang}
			ids[i], labels[i], steps[i] = string(j.ID), kind.String(), j.Steps
			kinds[labels[i]] = kind
			jobs[i] = alloc.Job{ID: j.ID, Gang: j.Gang, Weight: 1}
			rates[i] = make([]float64, len(gpus))
			best := 0.0
			for k, g := range gpus {
				rates[i][k], _ = tp.Isolated(g, kind)
				best = max(best, rates[i][k])
			}
			longest = max(longest, steps[i]/best)
		}
		var pairs []alloc.PairRate
		for a, ka := range kinds {
			for b, kb := range kinds {
				for k, g := range gpus {
					if ra, rb, ok := tp.Pair(g, ka, kb); ok && a <= b && ra > 0 && rb > 0 {
						pairs = append(pairs, alloc.PairRate{A: a, B: b, Type: types[k], RateA: ra, RateB: rb})
					}
				}
			}
		}
		m, err := speedup.New(ids, types, rates)
		if err != nil {
			t.Fatal(err)
		}
		p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: []float64{per, per, per}}, nil, jobs, m)
		if err != nil {
			t.Fatal(err)
		}
		a, err := alloc.Makespan{RemainingSteps: steps}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := alloc.SpaceSharing{Objective: alloc.SharingMinMakespan, JobTypes: labels, Pairs: pairs, RemainingSteps: steps}.Solve(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		alone, shared := finish(steps, a.Utilities(p.Valuations())), finish(steps, r.Throughput)
		if shared > alone*(1+1e-6) {
			t.Errorf("%d jobs: planned makespan %v with space sharing, later than %v without", n, shared, alone)
		}
		t.Logf("%4d jobs on %v GPUs: planned makespan %.1f h alone, %.1f h with space sharing (%.3fx); the longest job alone on its fastest type %.1f h",
			n, 3*per, alone/3600, shared/3600, alone/shared, longest/3600)
	}
}

// finish is the latest finish time of jobs of steps at throughputs thr.
func finish(steps, thr []float64) float64 {
	last := 0.0
	for i, s := range steps {
		last = max(last, s/thr[i])
	}
	return last
}
