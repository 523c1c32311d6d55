package auction_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
)

// smallGavel draws 1- to 8-GPU Gavel-style jobs for 8 GPUs of each type on
// servers of 4.
func smallGavel(t testing.TB, jobs int, rate float64) (*sim.Workload, topology.Cluster) {
	t.Helper()
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := sim.Generate(tp, sim.GenerateSettings{Jobs: jobs, Rate: rate, Multi: true}, rand.NewPCG(7, 7))
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.NewCluster(sim.GavelTypes(), []int{8, 8, 8}, 4)
	if err != nil {
		t.Fatal(err)
	}
	return w, c
}

// spreadOf returns a ThemisSettings.Spread that reads w.
func spreadOf(w *sim.Workload) func(alloc.JobID) []float64 {
	m := map[alloc.JobID][]float64{}
	for _, j := range w.Jobs {
		m[j.ID] = j.Spread
	}
	return func(id alloc.JobID) []float64 { return m[id] }
}

// sameFloat is bit equality, with NaN equal to NaN.
func sameFloat(a, b float64) bool { return a == b || (a != a && b != b) }

// TestThemisRuns replays a small Gavel workload under Themis' arbiter with
// 10-minute leases and f = 0.8 in 2-minute rounds: every job finishes, and
// the same seed gives the same results.
func TestThemisRuns(t *testing.T) {
	w, c := smallGavel(t, 30, 3)
	run := func() *sim.Result {
		s, err := auction.NewThemis(c, w.Types, &auction.ThemisSettings{Round: 120, Arbiter: auction.ArbiterSettings{Filter: 0.8}, Spread: spreadOf(w)}, rand.NewPCG(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(context.Background(), w, c, s, &sim.Settings{Round: 120})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run()
	if s := res.Summary(); s.Finished != len(w.Jobs) {
		t.Fatalf("%d of %d jobs finished", s.Finished, len(w.Jobs))
	}
	if diff := cmp.Diff(res, run(), cmp.Comparer(sameFloat)); diff != "" {
		t.Errorf("second run differs (-first +second):\n%s", diff)
	}
}

// TestThemisFailures runs Themis through GPU failures: no gang is placed on
// a failed GPU (sim.Run checks), and every job still finishes.
func TestThemisFailures(t *testing.T) {
	w, c := smallGavel(t, 20, 3)
	s, err := auction.NewThemis(c, w.Types, &auction.ThemisSettings{Round: 120}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	var fails []sim.Failure
	for sv := range 3 {
		fails = append(fails, sim.Failure{GPU: topology.GPU{Server: 2 * sv, Slot: 1}, At: 500 + 1000*float64(sv), Repair: 20000})
	}
	res, err := sim.Run(context.Background(), w, c, s, &sim.Settings{Round: 120, Failures: fails})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary(); s.Finished != len(w.Jobs) {
		t.Fatalf("%d of %d jobs finished", s.Finished, len(w.Jobs))
	}
}

// TestThemisContract checks Decide's refusals and that snapshots are
// refused with gpufair.ErrSnapshot.
func TestThemisContract(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: 2}}}
	s, err := auction.NewThemis(c, []topology.GPUType{"v100"}, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "j", Gang: 2, Weight: 1, Rates: []float64{1}}, 100)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Placements) != 1 || len(d.Placements[0].GPUs) != 2 || d.End != auction.DefaultRound {
		t.Errorf("decision %+v, want j on both GPUs until %v", d, auction.DefaultRound)
	}
	if _, err := s.Decide(ctx, 0); !errors.Is(err, gpufair.ErrOrder) {
		t.Errorf("Decide at the same time: error = %v, want ErrOrder", err)
	}
	if _, err := s.Snapshot(); !errors.Is(err, gpufair.ErrSnapshot) {
		t.Errorf("Snapshot() error = %v, want ErrSnapshot", err)
	}
	if err := s.Restore([]byte("{}")); !errors.Is(err, gpufair.ErrSnapshot) {
		t.Errorf("Restore() error = %v, want ErrSnapshot", err)
	}
}
