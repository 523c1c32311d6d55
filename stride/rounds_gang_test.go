package stride_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// Targets that some schedule realises exactly: the average of K rounds, each
// giving every job of a random gang at most one type with Σ gang ≤ GPUs per
// type. How far the mechanism's received fractions stay from them after 400
// rounds, with gangs of 1 to 4 GPUs.
func TestRoundsGangsConverge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, types, count := genGangCluster(t)
		n := rapid.IntRange(1, 8).Draw(t, "jobs")
		gang := make([]int, n)
		for i := range gang {
			gang[i] = rapid.IntRange(1, 4).Draw(t, "gang")
		}
		K := rapid.IntRange(1, 4).Draw(t, "schedules")
		X := make([][]float64, n)
		for i := range X {
			X[i] = make([]float64, len(types))
		}
		for range K {
			free := append([]int(nil), count...)
			for i := range n {
				k := rapid.IntRange(-1, len(types)-1).Draw(t, "type")
				if k >= 0 && gang[i] <= free[k] {
					free[k] -= gang[i]
					X[i][k] += 1 / float64(K)
				}
			}
		}
		r, _ := stride.NewRounds(c, types)
		for i, x := range X {
			if err := r.Set(stride.Combo{ID: fmt.Sprintf("c%02d", i), Jobs: []alloc.JobID{jobID(i)}, Gang: gang[i], Target: x}); err != nil {
				t.Fatal(err)
			}
		}
		for q := 1; q <= 400; q++ {
			if _, err := r.Round(q); err != nil {
				t.Fatal(err)
			}
		}
		for i, x := range X {
			f, _ := r.Received(fmt.Sprintf("c%02d", i))
			for k := range x {
				if f[k] < x[k]-0.05 {
					t.Fatalf("c%02d (gang %d) received %v of %s, target %v; all targets %v", i, gang[i], f[k], types[k], x[k], X)
				}
			}
		}
	})
}

// A counterexample to convergence with gangs: Gavel's constraint Σ_m
// X_mk·gang_m ≤ GPUs of k holds for b (1 GPU, all the time) and e (2 GPUs,
// half the time) on one 2-GPU server, but no schedule realises it: a round
// that runs e has no GPU left for b, so f_b + f_e ≤ 1 against targets adding
// up to 1.5. The mechanism splits the shortfall in proportion to the
// targets, converging to 2/3 and 1/3.
func TestRoundsUnschedulableGangs(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "s0", Type: "v100", GPUs: 2}}}
	r, err := stride.NewRounds(c, []topology.GPUType{"v100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Set(
		stride.Combo{ID: "b", Jobs: []alloc.JobID{"b"}, Gang: 1, Target: []float64{1}},
		stride.Combo{ID: "e", Jobs: []alloc.JobID{"e"}, Gang: 2, Target: []float64{0.5}},
	); err != nil {
		t.Fatal(err)
	}
	const rounds = 300
	for q := 1; q <= rounds; q++ {
		if _, err := r.Round(q); err != nil {
			t.Fatal(err)
		}
	}
	fb, _ := r.Received("b")
	fe, _ := r.Received("e")
	if fb[0]+fe[0] > 1+1e-12 {
		t.Errorf("b and e ran together: %v + %v > 1", fb[0], fe[0])
	}
	if math.Abs(fb[0]-2./3) > 1./rounds || math.Abs(fe[0]-1./3) > 1./rounds {
		t.Errorf("received b %v, e %v; want 2/3 and 1/3 within 1/%d", fb[0], fe[0], rounds)
	}
	if d := r.Distance(); d < 1./3-1./rounds {
		t.Errorf("distance %v, want about 1/3", d)
	}
}

// SetAllocation matches an allocation's types to the mechanism's by name:
// columns in the other order give the same targets as FromAllocation in the
// mechanism's order, a type the mechanism lacks is an error only where it
// carries time, and nothing changes on error.
func TestRoundsSetAllocationMatchesTypes(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "v", Type: "v100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 1}}}
	jobs := []alloc.Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 1, Weight: 1}}
	r, _ := stride.NewRounds(c, []topology.GPUType{"v100", "k80"})
	// a: a quarter of the time on the V100, b three quarters; columns
	// K80 first, and a type the cluster lacks with no time on it.
	reversed := &alloc.Allocation{Rows: []string{"a", "b"}, Types: []topology.GPUType{"k80", "v100", "tpu"}, GPUs: [][]float64{{0.75, 0.25, 0}, {0.25, 0.75, 0}}}
	if err := r.SetAllocation(jobs, reversed); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"a": {0.25, 0.75}, "b": {0.75, 0.25}}
	for q := 1; q <= 400; q++ {
		if _, err := r.Round(q); err != nil {
			t.Fatal(err)
		}
	}
	for id, x := range want {
		f, _ := r.Received(id)
		if diff := cmp.Diff(x, f, cmpopts.EquateApprox(0, 1./400)); diff != "" {
			t.Errorf("%s received (-want +got):\n%s", id, diff)
		}
	}
	for _, tc := range []struct {
		name string
		a    *alloc.Allocation
		want error
	}{
		{"time on a type the mechanism lacks", &alloc.Allocation{Rows: []string{"a"}, Types: []topology.GPUType{"tpu"}, GPUs: [][]float64{{0.5}}}, gpufair.ErrUnknownType},
		{"type listed twice", &alloc.Allocation{Rows: []string{"a"}, Types: []topology.GPUType{"k80", "k80"}, GPUs: [][]float64{{0.5, 0}}}, gpufair.ErrDuplicate},
		{"fraction above 1", &alloc.Allocation{Rows: []string{"a"}, Types: []topology.GPUType{"k80"}, GPUs: [][]float64{{1.5}}}, gpufair.ErrValue},
	} {
		if err := r.SetAllocation(jobs, tc.a); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
	// A failed SetAllocation leaves the targets: 4 more rounds keep a at
	// a quarter of the time on the V100 (101 of 404).
	for q := 401; q <= 404; q++ {
		if _, err := r.Round(q); err != nil {
			t.Fatal(err)
		}
	}
	if f, _ := r.Received("a"); math.Abs(f[0]-0.25) > 1./404 {
		t.Errorf("after failed SetAllocation calls a received %v", f)
	}
}
