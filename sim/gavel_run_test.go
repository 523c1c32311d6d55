package sim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
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

// counting is a policy that counts its solves.
type counting struct {
	alloc.Policy
	n *int
}

func (c counting) Allocate(ctx context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	*c.n++
	return c.Policy.Allocate(ctx, p)
}

// TestGavelRuns replays a small Gavel workload under a policy realised by
// Gavel's mechanism (stride.Gavel): every job finishes, the policy is
// solved only when jobs come or go, and a second run gives the same
// results.
func TestGavelRuns(t *testing.T) {
	w, c := smallGavel(t, 40, 2)
	run := func() (*Result, int) {
		var solves int
		s, err := stride.NewGavel(counting{equalShare{}, &solves}, c, w.Types, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, c, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res, solves
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
	if s := res.Summary(); s.Utilisation <= 0 || s.Utilisation > 1 || s.RestartShare < 0 || s.MaxRestartShare > 1 {
		t.Errorf("utilisation %v outside (0, 1], or restart shares %v, %v outside [0, 1]", s.Utilisation, s.RestartShare, s.MaxRestartShare)
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

// TestGavelTypesTooSmall checks that a gang larger than a type's GPUs
// never runs there: Gavel gives it no rate on that type, and the run, which
// would refuse the placement (ErrPlacement), ends with every job done.
func TestGavelTypesTooSmall(t *testing.T) {
	c := servers(topology.Server{Name: "a", Type: "a", GPUs: 2}, topology.Server{Name: "b", Type: "b", GPUs: 8})
	w := &Workload{Types: []topology.GPUType{"a", "b"}, Jobs: []Job{
		{Job: alloc.Job{ID: "big", Gang: 4, Rates: []float64{30, 5}}, Steps: 1e4},
		{Job: alloc.Job{ID: "small", Gang: 1, Rates: []float64{3, 5}}, Steps: 1e4},
	}}
	s, err := stride.NewGavel(alloc.MaxMin{}, c, w.Types, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), w, c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Summary().Finished; f != 2 {
		t.Errorf("%d of 2 jobs finished", f)
	}
}

// TestGavelInputs runs Gavel's policies whose inputs follow the jobs'
// progress (FIFO's arrivals, SJF's and FTF's remaining steps) on a small
// workload: every job finishes, and FTF, re-solved every round, is solved
// at least once per round with jobs.
func TestGavelInputs(t *testing.T) {
	w, c := smallGavel(t, 12, 3)
	for _, tc := range []struct {
		pol alloc.Policy
		set stride.GavelSettings
	}{
		{alloc.FIFO{}, stride.GavelSettings{Inputs: stride.FIFOInputs}},
		{alloc.ShortestJobFirst{}, stride.GavelSettings{Inputs: stride.ShortestJobFirstInputs}},
		{alloc.FinishTimeFairness{}, stride.GavelSettings{Inputs: stride.FinishTimeFairnessInputs, Every: 1}},
		{alloc.Makespan{}, stride.GavelSettings{Inputs: stride.MakespanInputs, Every: 5}},
	} {
		t.Run(tc.pol.Name(), func(t *testing.T) {
			var solves int
			set := tc.set
			inputs := set.Inputs
			set.Inputs = func(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
				solves++
				return inputs(now, p, jobs)
			}
			s, err := stride.NewGavel(tc.pol, c, w.Types, &set)
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
			if tc.set.Every == 1 && solves < res.Rounds {
				t.Errorf("%d solves in %d rounds, want one per round", solves, res.Rounds)
			}
		})
	}
}

// TestGavelFailures runs max-min through GPU failures and repairs: every
// job finishes, no gang lands on a failed GPU (Run checks), and leases cut
// by a failure restart elsewhere.
func TestGavelFailures(t *testing.T) {
	w, c := smallGavel(t, 30, 3)
	var fails []Failure
	for sv := range 6 {
		fails = append(fails, Failure{GPU: topology.GPU{Server: sv, Slot: sv % 4}, At: 1000 + 700*float64(sv), Repair: 30000 + 1000*float64(sv)})
	}
	run := func(fs []Failure) *Result {
		s, err := stride.NewGavel(alloc.MaxMin{}, c, w.Types, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, c, s, &Settings{Failures: fs, Restart: 30})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	healthy, failing := run(nil).Summary(), run(fails).Summary()
	if failing.Finished != len(w.Jobs) || healthy.Finished != len(w.Jobs) {
		t.Fatalf("%d and %d of %d jobs finished", healthy.Finished, failing.Finished, len(w.Jobs))
	}
	if failing.Restarts == 0 {
		t.Errorf("no restarts with %d failures", len(fails))
	}
}
