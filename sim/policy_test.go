package sim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

func smallGavel(t testing.TB, jobs int, rate float64) (*Workload, topology.Cluster) {
	t.Helper()
	w, err := Generate(gavelThroughputs(t), GenerateSettings{Jobs: jobs, Rate: rate, Multi: true}, rand.NewPCG(7, 7))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCluster(GavelTypes(), []int{8, 8, 8}, 4)
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

// TestPolicySchedulerRuns replays a small Gavel workload under a policy
// realised by Gavel's rounds: every job finishes, the policy is solved only
// when jobs come or go, and a second run gives the same results.
func TestPolicySchedulerRuns(t *testing.T) {
	w, c := smallGavel(t, 40, 2)
	run := func() (*Result, int) {
		s, err := NewPolicyScheduler(equalShare{}, c, w.Types, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res, s.Solves()
	}
	res, solves := run()
	for _, j := range res.Jobs {
		if !j.Finished() {
			t.Fatalf("job %s did not finish", j.ID)
		}
		if best := j.Steps / maxOf(j.Rates(w)); j.JCT < best-tol {
			t.Errorf("job %s took %v s, less than %v s at its best rate", j.ID, j.JCT, best)
		}
	}
	if solves < 2 || solves > 2*len(w.Jobs) {
		t.Errorf("%d solves for %d jobs, want at most one per arrival and departure", solves, len(w.Jobs))
	}
	if res.Summary().Utilisation <= 0 || res.Summary().Utilisation > 1 {
		t.Errorf("utilisation %v outside (0, 1]", res.Summary().Utilisation)
	}
	again, _ := run()
	if diff := cmp.Diff(res, again, cmp.Comparer(sameFloat)); diff != "" {
		t.Errorf("second run differs (-first +second):\n%s", diff)
	}
}

// sameFloat is bit equality, with NaN equal to NaN.
func sameFloat(a, b float64) bool { return a == b || (a != a && b != b) }

func maxOf(x []float64) float64 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// Rates returns the job's rates from the workload, for tests.
func (j JobResult) Rates(w *Workload) []float64 {
	for _, x := range w.Jobs {
		if x.ID == j.ID {
			return x.Rates
		}
	}
	return nil
}

// TestProblemZeroesTypesTooSmall checks that a gang larger than a type's
// GPUs gets no rate there, so no policy gives it time it cannot use.
func TestProblemZeroesTypesTooSmall(t *testing.T) {
	c, _ := alloc.NewCapacity([]topology.GPUType{"a", "b"}, []float64{2, 8})
	j := &Job{Job: alloc.Job{ID: "big", Gang: 4, Rates: []float64{3, 5}}, Steps: 1}
	p, err := Problem(c, []Active{{Job: j}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Throughputs.Row(0); got[0] != 0 || got[1] != 5 || j.Rates[0] != 3 {
		t.Errorf("rates %v (job's own %v), want [0 5] and the job's untouched", got, j.Rates)
	}
}

// TestPolicySchedulerInputs runs Gavel's policies whose inputs follow the
// jobs' progress (FIFO's arrivals, SJF's and FTF's remaining steps) on a
// small workload: every job finishes, and FTF, re-solved every round, is
// solved at least once per round with jobs.
func TestPolicySchedulerInputs(t *testing.T) {
	w, c := smallGavel(t, 12, 3)
	for _, tc := range []struct {
		pol alloc.Policy
		set PolicySettings
	}{
		{alloc.FIFO{}, PolicySettings{Inputs: FIFOInputs}},
		{alloc.ShortestJobFirst{}, PolicySettings{Inputs: ShortestJobFirstInputs}},
		{alloc.FinishTimeFairness{}, PolicySettings{Inputs: FinishTimeFairnessInputs, Every: 1}},
		{alloc.Makespan{}, PolicySettings{Inputs: MakespanInputs, Every: 5}},
	} {
		t.Run(tc.pol.Name(), func(t *testing.T) {
			s, err := NewPolicyScheduler(tc.pol, c, w.Types, &tc.set)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), w, c, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if s := res.Summary(); s.Finished != len(w.Jobs) {
				t.Errorf("%d of %d jobs finished", s.Finished, len(w.Jobs))
			}
			if tc.set.Every == 1 && s.Solves() < res.Rounds {
				t.Errorf("%d solves in %d rounds, want one per round", s.Solves(), res.Rounds)
			}
		})
	}
}
