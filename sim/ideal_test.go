package sim

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// TestIdealByHand follows the fluid baseline by hand: two jobs of 100 and
// 200 steps at rate 1 share one GPU by max-min, half each, until the first
// finishes at 200 s; the second then runs alone and finishes at 300 s. A
// third job arriving at 250 s takes half again: 50 steps left at 1/2 per
// second push the second's finish to 350 s, and the third (40 steps) runs
// alone after that.
func TestIdealByHand(t *testing.T) {
	one := []topology.GPUType{"v100"}
	job := func(id string, arrival, steps float64) Job {
		return Job{Job: alloc.Job{ID: alloc.JobID(id), Gang: 1, Rates: []float64{1}}, Arrival: arrival, Steps: steps}
	}
	w := &Workload{Types: one, Jobs: []Job{job("a", 0, 100), job("b", 0, 200), job("c", 250, 40)}}
	c, err := NewCluster(one, []int{1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Ideal(context.Background(), w, c, alloc.MaxMin{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// b: 0–200 at 1/2 (100 done), 200–250 alone (50 more), 250–350 at 1/2.
	// c: 250–350 at 1/2 (50 > 40 needed): it finishes first, at 330 s; then
	// b has 200−100−50−40 = 10 left, alone: done at 340 s.
	want := map[alloc.JobID]float64{"a": 200, "b": 340, "c": 330}
	for _, j := range res.Jobs {
		if math.Abs(j.Finish-want[j.ID]) > 1e-6 {
			t.Errorf("job %s finished at %v, want %v", j.ID, j.Finish, want[j.ID])
		}
	}
	if res.Jobs[0].GPUSeconds != 100 {
		t.Errorf("job a held %v GPU-seconds, want 100 (half a GPU for 200 s)", res.Jobs[0].GPUSeconds)
	}
	if res.Scheduler != "max-min" || res.Round != 0 {
		t.Errorf("result names %q, round %v", res.Scheduler, res.Round)
	}
}

// TestIdealBoundsMechanism compares the round mechanism with the fluid
// baseline on a Gavel-style workload: with short rounds the mechanism's
// average JCT comes close to the ideal (Gavel's Figure 15(b)), and the
// ideal is never far worse than what slots achieve.
func TestIdealBoundsMechanism(t *testing.T) {
	w, c := smallGavel(t, 60, 2)
	ideal, err := Ideal(context.Background(), w, c, alloc.MaxMin{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := stride.NewGavel(alloc.MaxMin{}, c, w.Types, &stride.GavelSettings{Round: 360})
	if err != nil {
		t.Fatal(err)
	}
	mech, err := Run(context.Background(), w, c, g, &Settings{Round: 360})
	if err != nil {
		t.Fatal(err)
	}
	a, b := ideal.Summary().AvgJCT, mech.Summary().AvgJCT
	if ideal.Summary().Finished != len(w.Jobs) {
		t.Fatalf("ideal finished %d of %d jobs", ideal.Summary().Finished, len(w.Jobs))
	}
	if r := b / a; r < 0.7 || r > 1.5 {
		t.Errorf("mechanism avg JCT %.0f s vs ideal %.0f s: ratio %.2f, want within [0.7, 1.5]", b, a, r)
	}
}

// TestIdealInput checks the ideal baseline's refusals.
func TestIdealInput(t *testing.T) {
	w, c := smallGavel(t, 5, 2)
	var in *gpufair.InputError
	if _, err := Ideal(context.Background(), w, c, nil, nil); !errors.As(err, &in) {
		t.Errorf("nil policy: %v", err)
	}
	if _, err := Ideal(context.Background(), nil, c, alloc.MaxMin{}, nil); !errors.As(err, &in) {
		t.Errorf("nil workload: %v", err)
	}
	fail := &Settings{Failures: []Failure{{GPU: topology.GPU{}, At: 1}}}
	if _, err := Ideal(context.Background(), w, c, alloc.MaxMin{}, fail); !errors.As(err, &in) {
		t.Errorf("failures: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Ideal(ctx, w, c, alloc.MaxMin{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestColocatedRates runs two jobs on one GPU as one placement: with a
// measured pair they progress at their co-located rates (0.6 and 0.3 of a
// step a second) for the whole lease, without one they split the time (0.5
// each).
func TestColocatedRates(t *testing.T) {
	one := []topology.GPUType{"v100"}
	w := &Workload{Types: one, Jobs: []Job{
		{Job: alloc.Job{ID: "a", Gang: 1, Rates: []float64{1}}, Kind: "A", Steps: 60},
		{Job: alloc.Job{ID: "b", Gang: 1, Rates: []float64{1}}, Kind: "B", Steps: 60},
	}}
	c, err := NewCluster(one, []int{1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(_ topology.GPUType, a, b *Job) (float64, float64, bool) {
		if a.Kind == "A" && b.Kind == "B" {
			return 0.6, 0.3, true
		}
		return 0, 0, false
	}
	for _, tc := range []struct {
		colocated func(topology.GPUType, *Job, *Job) (float64, float64, bool)
		a, b      float64 // finish times
	}{{pair, 100, 200}, {nil, 120, 120}} {
		s := newPairs(c, one)
		res, err := Run(context.Background(), w, c, s, &Settings{Round: 1000, Colocated: tc.colocated})
		if err != nil {
			t.Fatal(err)
		}
		// A placement's rates hold for its lease: b keeps its co-located
		// rate after a finishes, as time slicing keeps its half.
		want := map[alloc.JobID]float64{"a": tc.a, "b": tc.b}
		for _, j := range res.Jobs {
			if math.Abs(j.Finish-want[j.ID]) > 1e-9 {
				t.Errorf("colocated %v: job %s finished at %v, want %v", tc.colocated != nil, j.ID, j.Finish, want[j.ID])
			}
		}
	}
}

// pairs places every job in the system on the first GPU together: a
// scheduler that co-locates.
type pairs struct{ l *round.Ledger }

func newPairs(c topology.Cluster, types []topology.GPUType) *pairs {
	l, err := round.NewLedger(c, types)
	if err != nil {
		panic(err)
	}
	return &pairs{l}
}

func (*pairs) Name() string                    { return "pairs" }
func (p *pairs) Apply(ev ...round.Event) error { return p.l.Apply(ev...) }
func (*pairs) Snapshot() ([]byte, error)       { return nil, gpufair.ErrSnapshot }
func (*pairs) Restore([]byte) error            { return gpufair.ErrSnapshot }

func (p *pairs) Decide(_ context.Context, now float64) (*round.Decision, error) {
	if err := p.l.Begin(now); err != nil {
		return nil, err
	}
	d := &round.Decision{Start: now, End: now + 1000}
	var ids []alloc.JobID
	for _, j := range p.l.Jobs() {
		ids = append(ids, j.ID)
	}
	if len(ids) > 0 {
		d.Placements = []round.Placement{{Jobs: ids, Type: p.l.Types()[0], GPUs: []topology.GPU{{}}}}
	}
	if err := p.l.Commit(d); err != nil {
		return nil, err
	}
	return d, nil
}

// oneRowPolicy is a policy of a caller's own that returns one row, however
// many jobs there are.
type oneRowPolicy struct{}

func (oneRowPolicy) Name() string { return "one-row" }

func (oneRowPolicy) Allocate(_ context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	return alloc.NewAllocation([]string{string(p.Jobs[0].ID)}, p.Capacity), nil
}

// TestIdealRefusesMalformedAllocations: Ideal read a policy's rows by the
// active jobs, and panicked on a policy that returned fewer.
func TestIdealRefusesMalformedAllocations(t *testing.T) {
	one := []topology.GPUType{"v100"}
	w := &Workload{Types: one, Jobs: []Job{
		{Job: alloc.Job{ID: "a", Gang: 1, Rates: []float64{1}}, Steps: 10},
		{Job: alloc.Job{ID: "b", Gang: 1, Rates: []float64{1}}, Steps: 10},
	}}
	c, err := NewCluster(one, []int{1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Ideal(context.Background(), w, c, oneRowPolicy{}, nil)
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != "Allocation.GPUs" {
		t.Errorf("Ideal() = %v, want an *InputError on Allocation.GPUs wrapping ErrShape", err)
	}
}
