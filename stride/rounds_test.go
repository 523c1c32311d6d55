package stride_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

func oneEach() topology.Cluster {
	return topology.Cluster{Servers: []topology.Server{
		{Name: "v", Type: "v100", GPUs: 1}, {Name: "p", Type: "p100", GPUs: 1}, {Name: "k", Type: "k80", GPUs: 1},
	}}
}

// Gavel's X_example (section 3.1, realised in Figure 5): three jobs, one
// V100, one P100 and one K80. The mechanism realises it exactly every five
// rounds, and after n rounds no received fraction is more than 1/n off.
func TestGavelXExample(t *testing.T) {
	r, err := stride.NewRounds(oneEach(), []topology.GPUType{"v100", "p100", "k80"})
	if err != nil {
		t.Fatal(err)
	}
	X := [][]float64{{0.6, 0.4, 0}, {0.2, 0.6, 0.2}, {0.2, 0, 0.8}}
	for i, x := range X {
		if err := r.Set(stride.Combo{ID: fmt.Sprint(i), Jobs: []alloc.JobID{jobID(i)}, Gang: 1, Target: x}); err != nil {
			t.Fatal(err)
		}
	}
	renewals := 0
	for n := 1; n <= 1000; n++ {
		p, err := r.Round(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Assignments) != 3 {
			t.Fatalf("round %d runs %d jobs on 3 GPUs", n, len(p.Assignments))
		}
		renewals += p.Renewals()
		if d := r.Distance(); d > 1/float64(n)+1e-12 {
			t.Errorf("round %d: distance %v > 1/%d", n, d, n)
		}
		if n%5 == 0 && r.Distance() > 1e-12 {
			t.Errorf("round %d: distance %v, want 0", n, r.Distance())
		}
	}
	for i, x := range X {
		f, _ := r.Received(fmt.Sprint(i))
		if diff := cmp.Diff(x, f); diff != "" {
			t.Errorf("job %d received (-want +got):\n%s", i, diff)
		}
	}
	if renewals == 0 {
		t.Errorf("no lease renewals in 1000 rounds")
	}
}

// An allocation from alloc converts by X = GPUs/gang; a 4-GPU gang and four
// 1-GPU jobs share 4 GPUs half the time each: the mechanism alternates.
func TestRoundsGangsFromAllocation(t *testing.T) {
	c := servers(1, 4, "v100")
	jobs := []alloc.Job{{ID: "big", Gang: 4, Weight: 1}}
	rows := []string{"big"}
	for i := range 4 {
		jobs = append(jobs, alloc.Job{ID: jobID(i), Gang: 1, Weight: 1})
		rows = append(rows, string(jobID(i)))
	}
	a := alloc.NewAllocation(rows, alloc.Capacity{Types: []topology.GPUType{"v100"}, Count: []float64{4}})
	a.GPUs[0][0] = 2 // half the time on 4 GPUs
	for i := 1; i <= 4; i++ {
		a.GPUs[i][0] = 0.5
	}
	combos, err := stride.FromAllocation(jobs, a)
	if err != nil {
		t.Fatal(err)
	}
	if combos[0].Target[0] != 0.5 || combos[1].Target[0] != 0.5 {
		t.Fatalf("targets %v %v", combos[0].Target, combos[1].Target)
	}
	r, _ := stride.NewRounds(c, a.Types)
	if err := r.Set(combos...); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 100; n++ {
		p, _ := r.Round(n)
		used := 0
		for _, as := range p.Assignments {
			used += len(as.GPUs)
		}
		if used != 4 {
			t.Errorf("round %d uses %d GPUs", n, used)
		}
	}
	if d := r.Distance(); d != 0 {
		t.Errorf("distance after 100 rounds %v, want 0", d)
	}
}

// Space sharing: combinations that share a job never run in the same round.
// Jobs a and b may run alone or together on one GPU; the pair {a,b} and a
// alone both want time.
func TestRoundsSpaceSharingConflicts(t *testing.T) {
	r, _ := stride.NewRounds(servers(1, 2, "v100"), []topology.GPUType{"v100"})
	err := r.Set(
		stride.Combo{ID: "a+b", Jobs: []alloc.JobID{"a", "b"}, Gang: 1, Target: []float64{0.5}},
		stride.Combo{ID: "a", Jobs: []alloc.JobID{"a"}, Gang: 1, Target: []float64{0.5}},
		stride.Combo{ID: "b", Jobs: []alloc.JobID{"b"}, Gang: 1, Target: []float64{0.5}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 40; n++ {
		p, _ := r.Round(n)
		busy := map[alloc.JobID]bool{}
		for _, as := range p.Assignments {
			for _, j := range as.Jobs {
				if busy[j] {
					t.Fatalf("round %d runs job %s twice: %v", n, j, p.Assignments)
				}
				busy[j] = true
			}
		}
	}
	if d := r.Distance(); d > 0.05 {
		t.Errorf("distance after 40 rounds %v", d)
	}
}

func TestRoundsBadInput(t *testing.T) {
	if _, err := stride.NewRounds(oneEach(), []topology.GPUType{"tpu"}); !errors.Is(err, gpufair.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	r, _ := stride.NewRounds(oneEach(), []topology.GPUType{"v100", "k80"})
	for _, tc := range []struct {
		name string
		c    stride.Combo
		want error
	}{
		{"gang larger than the type", stride.Combo{ID: "x", Jobs: []alloc.JobID{"x"}, Gang: 2, Target: []float64{0.5, 0}}, gpufair.ErrTooLarge},
		{"fractions above 1", stride.Combo{ID: "x", Jobs: []alloc.JobID{"x"}, Gang: 1, Target: []float64{0.7, 0.7}}, gpufair.ErrValue},
		{"NaN", stride.Combo{ID: "x", Jobs: []alloc.JobID{"x"}, Gang: 1, Target: []float64{math.NaN(), 0}}, gpufair.ErrValue},
		{"shape", stride.Combo{ID: "x", Jobs: []alloc.JobID{"x"}, Gang: 1, Target: []float64{0.5}}, gpufair.ErrShape},
		{"no jobs", stride.Combo{ID: "x", Gang: 1, Target: []float64{0.5, 0}}, gpufair.ErrEmpty},
		{"zero gang", stride.Combo{ID: "x", Jobs: []alloc.JobID{"x"}, Target: []float64{0.5, 0}}, gpufair.ErrValue},
	} {
		if err := r.Set(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%s: Set() error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := r.Round(1); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Round(1); !errors.Is(err, gpufair.ErrOrder) {
		t.Errorf("repeated round: %v", err)
	}
}

// Remove drops rows and counts those it found: with rows a and b sharing
// one GPU half the time each, removing a (and unknown or repeated IDs)
// reports 1, a has no fractions any more, b runs every round after, and a
// set again starts with no history.
func TestRoundsRemove(t *testing.T) {
	r, err := stride.NewRounds(servers(1, 1, "v100"), []topology.GPUType{"v100"})
	if err != nil {
		t.Fatal(err)
	}
	half := func(id string) stride.Combo {
		return stride.Combo{ID: id, Jobs: []alloc.JobID{alloc.JobID(id)}, Gang: 1, Target: []float64{0.5}}
	}
	if err := r.Set(half("a"), half("b")); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 4; n++ {
		if _, err := r.Round(n); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Remove(); got != 0 {
		t.Errorf("Remove() = %d, want 0", got)
	}
	if got := r.Remove("a", "nope", "a"); got != 1 {
		t.Errorf("Remove(a, nope, a) = %d, want 1", got)
	}
	if f, ok := r.Received("a"); ok {
		t.Errorf("Received(a) = %v after its removal", f)
	}
	if _, ok := r.Received("b"); !ok {
		t.Fatalf("Received(b) missing: Remove(a) dropped b")
	}
	for n := 5; n <= 10; n++ {
		p, err := r.Round(n)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, as := range p.Assignments {
			rows = append(rows, as.Row)
		}
		if diff := cmp.Diff([]string{"b"}, rows); diff != "" {
			t.Errorf("round %d rows (-want +got):\n%s", n, diff)
		}
	}
	if err := r.Set(half("a")); err != nil {
		t.Fatal(err)
	}
	if f, _ := r.Received("a"); !cmp.Equal([]float64{0}, f) {
		t.Errorf("Received(a) = %v after it was set again, want [0]", f)
	}
}

// genGangCluster draws servers of two types with 1 to 4 GPUs each.
func genGangCluster(t *rapid.T) (topology.Cluster, []topology.GPUType, []int) {
	var c topology.Cluster
	for i := range rapid.IntRange(2, 6).Draw(t, "servers") {
		c.Servers = append(c.Servers, topology.Server{
			Name: fmt.Sprintf("s%d", i), Type: []topology.GPUType{"k80", "v100"}[i%2],
			GPUs: rapid.IntRange(1, 4).Draw(t, "gpus"),
		})
	}
	types, count := c.Capacity()
	return c, types, count
}

// Random feasible allocations of single-GPU jobs: Σ_m X_mk ≤ count_k and
// Σ_k X_mk ≤ 1. Every round places each running job on GPUs of its type,
// each slot once; a job renewed on the same type keeps exactly its slots;
// and no job falls behind its target: after 400 rounds each received
// fraction is at least its target less 0.05. (GPUs the targets leave idle
// go to rows by priority, so a row may get more than its target.)
func TestRoundsNeverUnderserve(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, types, count := genGangCluster(t)
		r, _ := stride.NewRounds(c, types)
		n := rapid.IntRange(1, 12).Draw(t, "jobs")
		left := make([]int, len(types)) // in tenths
		for k := range left {
			left[k] = 10 * count[k]
		}
		var combos []stride.Combo
		for i := range n {
			x := make([]float64, len(types))
			room := 10
			for k := range x {
				v := min(rapid.IntRange(0, 10).Draw(t, "x"), room, left[k])
				x[k] = float64(v) / 10
				room -= v
				left[k] -= v
			}
			combos = append(combos, stride.Combo{ID: fmt.Sprintf("c%02d", i), Jobs: []alloc.JobID{jobID(i)}, Gang: 1, Target: x})
		}
		if err := r.Set(combos...); err != nil {
			t.Fatal(err)
		}
		prev := map[string]stride.Assignment{}
		for q := 1; q <= 400; q++ {
			p, err := r.Round(q)
			if err != nil {
				t.Fatal(err)
			}
			slots := map[topology.GPU]bool{}
			cur := map[string]stride.Assignment{}
			for _, a := range p.Assignments {
				for _, g := range a.GPUs {
					if slots[g] || c.Servers[g.Server].Type != a.Type || g.Slot >= c.Servers[g.Server].GPUs {
						t.Fatalf("round %d: bad slot %v for %s on %s", q, g, a.Row, a.Type)
					}
					slots[g] = true
				}
				if old, ok := prev[a.Row]; ok && old.Type == a.Type && (!a.Renewed || !slices.Equal(old.GPUs, a.GPUs)) {
					t.Fatalf("round %d: %s stayed on %s but moved from %v to %v", q, a.Row, a.Type, old.GPUs, a.GPUs)
				}
				cur[a.Row] = a
			}
			prev = cur
		}
		for _, cb := range combos {
			f, _ := r.Received(cb.ID)
			for k, x := range cb.Target {
				if f[k] < x-0.05 {
					t.Fatalf("%s received %v of %s, target %v", cb.ID, f[k], types[k], x)
				}
			}
		}
	})
}

// Allocations that use every GPU (Σ_k X_mk = 1 and Σ_m X_mk = count_k, as
// optimal policies give): averages of random assignments of one job per
// GPU. The received fractions converge to the target: after 400 rounds the
// distance is at most 0.05.
func TestRoundsConverge(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, types, count := genGangCluster(t)
		var slotType []int
		for k, n := range count {
			for range n {
				slotType = append(slotType, k)
			}
		}
		n := len(slotType)
		K := rapid.IntRange(1, 5).Draw(t, "assignments")
		X := make([][]float64, n)
		for i := range X {
			X[i] = make([]float64, len(types))
		}
		for range K {
			perm := rapid.Permutation(slotType).Draw(t, "perm")
			for i, k := range perm {
				X[i][k] += 1 / float64(K)
			}
		}
		r, _ := stride.NewRounds(c, types)
		for i, x := range X {
			if err := r.Set(stride.Combo{ID: fmt.Sprintf("c%02d", i), Jobs: []alloc.JobID{jobID(i)}, Gang: 1, Target: x}); err != nil {
				t.Fatal(err)
			}
		}
		for q := 1; q <= 400; q++ {
			if _, err := r.Round(q); err != nil {
				t.Fatal(err)
			}
		}
		if d := r.Distance(); d > 0.05 {
			t.Fatalf("distance %v after 400 rounds", d)
		}
	})
}
