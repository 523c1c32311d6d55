package alloc

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

func TestFIFOPackingHand(t *testing.T) {
	// Two GPUs of t0 and one of t1. j0 is fastest on t1 and takes it; j1
	// and j2 take t0; j3 packs with j1 (0.8 + 0.8 > 1.5); j4 would pack
	// with j2 at 0.7 + 0.7 only, so it waits, and j5 behind it too,
	// though it would pack with j2.
	p := gavelProblem(t, []float64{2, 1}, nil, [][]float64{{1, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}})
	f := FIFOPacking{Pairs: []PairRate{
		{A: "j1", B: "j3", Type: "t0", RateA: 0.8, RateB: 0.8},
		{A: "j2", B: "j4", Type: "t0", RateA: 0.7, RateB: 0.7},
		{A: "j2", B: "j5", Type: "t0", RateA: 0.9, RateB: 0.9},
	}}
	r, err := f.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []PairShare{{A: "j1", B: "j3", Type: "t0", Time: 1}}
	if diff := cmp.Diff(want, r.Pairs); diff != "" {
		t.Errorf("pairs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{3, 0.8, 1, 0.8, 0, 0}, r.Throughput); diff != "" {
		t.Errorf("throughput (-want +got):\n%s", diff)
	}
	// With arrival times, j5 comes first and takes t0, where it is as
	// fast as on t1 (ties go to the first type); j0 takes t1 and j1 the
	// other t0; j2 waits and packs with j5 (0.9 + 0.9), j3 with j1 as
	// before.
	f.Arrival = []float64{1, 1, 1, 1, 1, 0}
	if r, err = f.Solve(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want = []PairShare{{A: "j1", B: "j3", Type: "t0", Time: 1}, {A: "j2", B: "j5", Type: "t0", Time: 1}}
	if diff := cmp.Diff(want, r.Pairs); diff != "" {
		t.Errorf("j5 first: pairs (-want +got):\n%s", diff)
	}
}

func TestFIFOPackingBadInput(t *testing.T) {
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{1}, {1}})
	for _, tc := range []struct {
		name  string
		f     FIFOPacking
		field string
		want  error
	}{
		{"threshold", FIFOPacking{Threshold: -1}, "FIFOPacking.Threshold", gpufair.ErrValue},
		{"threshold NaN", FIFOPacking{Threshold: math.NaN()}, "FIFOPacking.Threshold", gpufair.ErrValue},
		{"arrival", FIFOPacking{Arrival: []float64{0}}, "FIFOPacking.Arrival", gpufair.ErrShape},
		{"labels", FIFOPacking{JobTypes: []string{"a"}}, "FIFOPacking.JobTypes", gpufair.ErrShape},
		{"pair rate", FIFOPacking{Pairs: []PairRate{{A: "j0", B: "j1", Type: "t0", RateA: -1, RateB: 1}}}, "FIFOPacking.Pairs", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.f.Allocate(context.Background(), p)
			wantRefusal(t, err, tc.field, tc.want)
		})
	}
}

// TestFIFOPackingProperties: on random problems the allocation fits; the
// jobs that get time are a prefix of the arrival order (no job jumps the
// queue); each job runs all of its time on one type, alone or in a pair of
// one gang whose co-located rates over the rates alone add up to more than
// the threshold; and a second solve gives the same result.
func TestFIFOPackingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(8, false).Draw(t, "problem")
		n := len(p.Jobs)
		labels, pairs := drawLabelledPairs(t, p)
		arrival := make([]float64, n)
		for i := range arrival {
			arrival[i] = float64(rapid.IntRange(0, 3).Draw(t, "arrival"))
		}
		f := FIFOPacking{Arrival: arrival, JobTypes: labels, Pairs: pairs, Threshold: rapid.SampledFrom([]float64{0, 1, 1.2, math.Inf(1)}).Draw(t, "threshold")}
		r := solveTwice(t, p, f.Solve)
		threshold := f.Threshold
		if threshold == 0 {
			threshold = DefaultPackingThreshold
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return int(arrival[a] - arrival[b]) })
		waited := false
		for _, i := range order {
			time, types := 0.0, map[topology.GPUType]bool{}
			for k, x := range r.Alone[i] {
				time += x
				if x > 0 {
					types[p.Capacity.Types[k]] = true
				}
			}
			for _, ps := range r.Partners[i] {
				time += ps.Time
				types[ps.Type] = true
			}
			switch {
			case time == 0:
				waited = true
			case waited:
				t.Fatalf("job %d runs, after a job that arrived before it waits", i)
			case math.Abs(time-1) > 1e-12 || len(types) != 1:
				t.Fatalf("job %d: time %v on types %v, want all of it on one", i, time, types)
			}
		}
		for _, ps := range r.Pairs {
			a, b := slices.Index(p.JobIDs(), ps.A), slices.Index(p.JobIDs(), ps.B)
			k := slices.Index(p.Capacity.Types, ps.Type)
			if p.Jobs[a].Gang != p.Jobs[b].Gang {
				t.Fatalf("pair %v of gangs %d and %d", ps, p.Jobs[a].Gang, p.Jobs[b].Gang)
			}
			ra, rb, _ := measuredRates(p, pairs, labels, a, b, k)
			sum := 0.0
			if ra > 0 {
				sum += ra / p.Throughputs.At(a, k)
			}
			if rb > 0 {
				sum += rb / p.Throughputs.At(b, k)
			}
			if !(sum > threshold) {
				t.Fatalf("pair %v: co-located rates over rates alone add up to %v, not above %v", ps, sum, threshold)
			}
		}
	})
}
