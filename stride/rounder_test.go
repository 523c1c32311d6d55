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

// devTol is the slack on carried deviations, sums of a few hundred
// fractions.
const devTol = 1e-9

func tenants(gangs ...[]int) []stride.Tenant {
	var out []stride.Tenant
	for i, gs := range gangs {
		tn := stride.Tenant{ID: alloc.TenantID(fmt.Sprintf("u%d", i))}
		for j, g := range gs {
			tn.Jobs = append(tn.Jobs, alloc.Job{ID: alloc.JobID(fmt.Sprintf("u%d-%d", i, j)), Owner: tn.ID, Gang: g, Weight: 1})
		}
		out = append(out, tn)
	}
	return out
}

// Three users with a third of one GPU each take turns: every three rounds
// each has had the GPU once, and deviations return to zero.
func TestRounderThirds(t *testing.T) {
	r, err := stride.NewRounder(servers(1, 1, "v100"), []topology.GPUType{"v100"}, tenants([]int{1}, []int{1}, []int{1}))
	if err != nil {
		t.Fatal(err)
	}
	third := [][]float64{{1. / 3}, {1. / 3}, {1. / 3}}
	got := make([]int, 3)
	for q := 1; q <= 9; q++ {
		shares, plan, err := r.Round(q, third)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Assignments) != 1 {
			t.Fatalf("round %d runs %d jobs on one GPU", q, len(plan.Assignments))
		}
		for i := range shares {
			got[i] += shares[i][0]
		}
		if q%3 == 0 {
			if diff := cmp.Diff([]int{q / 3, q / 3, q / 3}, got); diff != "" {
				t.Errorf("after %d rounds (-want +got):\n%s", q, diff)
			}
		}
	}
}

// A user whose share is below its smallest job gets nothing until its
// deviation reaches the job: with half a GPU of four and only 2-GPU jobs, it
// runs one 2-GPU job every fourth round. Larger jobs are placed first.
func TestRounderMinDemand(t *testing.T) {
	r, _ := stride.NewRounder(servers(1, 4, "v100"), []topology.GPUType{"v100"}, tenants([]int{2, 2}, []int{1, 1, 1, 1}))
	ideal := [][]float64{{0.5}, {3.5}}
	var mine []int
	for q := 1; q <= 8; q++ {
		shares, plan, err := r.Round(q, ideal)
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, shares[0][0])
		for i := 1; i < len(plan.Assignments); i++ {
			if len(plan.Assignments[i].GPUs) > len(plan.Assignments[i-1].GPUs) {
				t.Errorf("round %d placed a smaller job before a larger one", q)
			}
		}
		if d := r.Deviation(0)[0]; d < -1-devTol || d >= 2 {
			t.Errorf("round %d: deviation %v outside (-1, 2)", q, d)
		}
	}
	if diff := cmp.Diff([]int{0, 0, 2, 0, 0, 0, 2, 0}, mine); diff != "" {
		t.Errorf("user 0's GPUs per round (-want +got):\n%s", diff)
	}
}

func TestRounderBadInput(t *testing.T) {
	c := servers(1, 4, "v100")
	if _, err := stride.NewRounder(c, []topology.GPUType{"tpu"}, tenants([]int{1})); !errors.Is(err, gpufair.ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := stride.NewRounder(c, []topology.GPUType{"v100"}, tenants([]int{8})); !errors.Is(err, gpufair.ErrTooLarge) {
		t.Errorf("job larger than the cluster: %v", err)
	}
	r, _ := stride.NewRounder(c, []topology.GPUType{"v100"}, tenants([]int{1}, []int{1}))
	for _, tc := range []struct {
		name  string
		ideal [][]float64
		want  error
	}{
		{"rows", [][]float64{{1}}, gpufair.ErrShape},
		{"columns", [][]float64{{1, 1}, {1}}, gpufair.ErrShape},
		{"negative", [][]float64{{-1}, {1}}, gpufair.ErrValue},
		{"NaN", [][]float64{{math.NaN()}, {1}}, gpufair.ErrValue},
		{"over capacity", [][]float64{{3}, {2}}, gpufair.ErrValue},
	} {
		if _, _, err := r.Round(1, tc.ideal); !errors.Is(err, tc.want) {
			t.Errorf("%s: Round() error = %v, want %v", tc.name, err, tc.want)
		}
	}
	// A tenant out of range has no deviation (it indexed past the
	// tenants and panicked).
	for _, i := range []int{-1, 2} {
		if d := r.Deviation(i); d != nil {
			t.Errorf("Deviation(%d) = %v, want nil", i, d)
		}
	}
}

// TestRounderBadCluster: an invalid cluster came back as topology's bare
// error, not the *gpufair.InputError the package promises for bad input.
func TestRounderBadCluster(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    topology.Cluster
		want error
	}{
		{"no servers", topology.Cluster{}, gpufair.ErrEmpty},
		{"server without GPUs", topology.Cluster{Servers: []topology.Server{{Name: "s0", Type: "v100"}}}, gpufair.ErrValue},
		{"server listed twice", topology.Cluster{Servers: []topology.Server{{Name: "s0", Type: "v100", GPUs: 1}, {Name: "s0", Type: "v100", GPUs: 1}}}, gpufair.ErrValue},
	} {
		_, err := stride.NewRounder(tc.c, []topology.GPUType{"v100"}, tenants([]int{1}))
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.Field != "Cluster" || !errors.Is(err, tc.want) || !errors.Is(err, topology.ErrInvalid) {
			t.Errorf("%s: NewRounder() error = %v, want an *gpufair.InputError on Cluster wrapping %v and topology.ErrInvalid", tc.name, err, tc.want)
		}
	}
}

// Random tenants and random ideal shares that fit each type, changing every
// round: shares never exceed a type's GPUs, a positive share is never below
// the tenant's smallest job, every placed job is the tenant's, on its type,
// and within its share, jobs are placed largest first, and the carried
// deviation stays within (−1, GPUs of the type + 1 + the largest
// smallest-job size) over 200 rounds of one allocation.
func TestRounderBoundedDeviation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c, types, count := genGangCluster(t)
		n := rapid.IntRange(1, 5).Draw(t, "tenants")
		var gangs [][]int
		minGang := make([]int, n)
		bound := 1.0
		for i := range n {
			gs := rapid.SliceOfN(rapid.IntRange(1, slices.Min(count)), 1, 4).Draw(t, "gangs")
			gangs = append(gangs, gs)
			minGang[i] = slices.Min(gs)
			bound = math.Max(bound, float64(minGang[i])+1)
		}
		tn := tenants(gangs...)
		r, err := stride.NewRounder(c, types, tn)
		if err != nil {
			t.Fatal(err)
		}
		owner := map[alloc.JobID]int{}
		for i, x := range tn {
			for _, j := range x.Jobs {
				owner[j.ID] = i
			}
		}
		// OEF's allocation holds between recomputations: one ideal for
		// the whole run.
		ideal := make([][]float64, n)
		for i := range ideal {
			ideal[i] = make([]float64, len(types))
		}
		for k := range types {
			// Split the type among tenants by random weights.
			w := rapid.SliceOfN(rapid.IntRange(0, 4), n, n).Draw(t, "weights")
			var sum int
			for _, x := range w {
				sum += x
			}
			for i := range n {
				if sum > 0 {
					ideal[i][k] = float64(count[k]) * float64(w[i]) / float64(sum)
				}
			}
		}
		for q := 1; q <= 200; q++ {
			shares, plan, err := r.Round(q, ideal)
			if err != nil {
				t.Fatal(err)
			}
			for k := range types {
				tot := 0
				for i := range n {
					s := shares[i][k]
					if s < 0 || (s > 0 && s < minGang[i]) {
						t.Fatalf("round %d: tenant %d share %d of %s, smallest job %d", q, i, s, types[k], minGang[i])
					}
					tot += s
					d := r.Deviation(i)[k]
					if d <= -1-devTol || d >= bound+float64(count[k])+devTol {
						t.Fatalf("round %d: tenant %d deviation %v on %s", q, i, d, types[k])
					}
				}
				if tot > count[k] {
					t.Fatalf("round %d: %d shares of %d %s", q, tot, count[k], types[k])
				}
			}
			used := make([][]int, n)
			for i := range used {
				used[i] = make([]int, len(types))
			}
			for i, a := range plan.Assignments {
				if i > 0 && len(a.GPUs) > len(plan.Assignments[i-1].GPUs) {
					t.Fatalf("round %d: smaller job placed first", q)
				}
				o := owner[a.Jobs[0]]
				k := slices.Index(types, a.Type)
				used[o][k] += len(a.GPUs)
				if string(tn[o].ID) != a.Row {
					t.Fatalf("round %d: %s listed under %s", q, a.Jobs[0], a.Row)
				}
			}
			for i := range n {
				for k := range types {
					if used[i][k] > shares[i][k] {
						t.Fatalf("round %d: tenant %d uses %d of %d on %s", q, i, used[i][k], shares[i][k], types[k])
					}
				}
			}
		}
	})
}
