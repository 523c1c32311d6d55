package stride_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

func twoTypeCluster() (topology.Cluster, []topology.GPUType) {
	return topology.Cluster{Servers: []topology.Server{
		{Name: "k80-0", Type: "k80", GPUs: 2},
		{Name: "v100-0", Type: "v100", GPUs: 2},
	}}, []topology.GPUType{"k80", "v100"}
}

// TestGavelBudget: a solve cut short by the time budget leaves the
// allocation of the previous solve in force and marks the decision Partial;
// work conservation still places the jobs.
func TestGavelBudget(t *testing.T) {
	c, types := twoTypeCluster()
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 3}}, 0)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Partial {
		t.Errorf("a 1 ns budget: Partial = false, want true")
	}
	if len(d.Placements) != 1 || d.Placements[0].Type != "v100" {
		t.Errorf("placements %+v, want job a on its fastest type", d.Placements)
	}
	if _, ok := s.Target("a"); ok {
		t.Errorf("a target for a job no solve finished for")
	}
	// A ctx already done is refused before anything changes.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Decide(ctx, 360); !errors.Is(err, context.Canceled) {
		t.Errorf("Decide with a cancelled ctx = %v, want context.Canceled", err)
	}
	if s.Ledger().Rounds() != 1 {
		t.Errorf("a refused Decide counted a round")
	}
}

func TestNewGavelRefusesBadSettings(t *testing.T) {
	c, types := twoTypeCluster()
	for _, tc := range []struct {
		name  string
		pol   alloc.Policy
		set   stride.GavelSettings
		c     topology.Cluster
		want  error
		field string // of the *gpufair.InputError, if checked
	}{
		{"no policy", nil, stride.GavelSettings{}, c, gpufair.ErrEmpty, "Policy"},
		{"negative round", alloc.MaxMin{}, stride.GavelSettings{Round: -1}, c, gpufair.ErrValue, "GavelSettings.Round"},
		{"negative budget", alloc.MaxMin{}, stride.GavelSettings{Budget: -1}, c, gpufair.ErrValue, "GavelSettings.Budget"},
		{"negative min lease", alloc.MaxMin{}, stride.GavelSettings{MinLease: -1}, c, gpufair.ErrValue, "GavelSettings.MinLease"},
		{"negative reset interval", alloc.MaxMin{}, stride.GavelSettings{ResetInterval: -1}, c, gpufair.ErrValue, "GavelSettings.ResetInterval"},
		{"NaN reset interval", alloc.MaxMin{}, stride.GavelSettings{ResetInterval: math.NaN()}, c, gpufair.ErrValue, "GavelSettings.ResetInterval"},
		{"infinite reset interval", alloc.MaxMin{}, stride.GavelSettings{ResetInterval: math.Inf(1)}, c, gpufair.ErrValue, "GavelSettings.ResetInterval"},
		{"type the cluster lacks", alloc.MaxMin{}, stride.GavelSettings{}, topology.Cluster{Servers: c.Servers[:1]}, gpufair.ErrUnknownType, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := stride.NewGavel(tc.pol, tc.c, types, &tc.set)
			if !errors.Is(err, tc.want) {
				t.Errorf("NewGavel() = %v, want %v", err, tc.want)
			}
			var ie *gpufair.InputError
			if tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field) {
				t.Errorf("NewGavel() = %v, want an *InputError on %s", err, tc.field)
			}
		})
	}
}

// TestGavelPriorityUsesTimeReceived: a job whose lease a failure cut short
// received less time than the round, and its priority says so.
func TestGavelPriorityUsesTimeReceived(t *testing.T) {
	c, types := twoTypeCluster()
	s, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Round: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 0)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	gpu := d.Placements[0].GPUs[0]
	if err := s.Apply(round.Fail(25, gpu)); err != nil {
		t.Fatal(err)
	}
	d, err = s.Decide(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := s.Ledger().Job("a")
	k := 1 // v100
	if got := j.Fraction(k, 100); got != 0.25 {
		t.Errorf("f on v100 after a failure 25 s into the round = %v, want 0.25", got)
	}
	for _, p := range d.Placements {
		for _, g := range p.GPUs {
			if g == gpu {
				t.Errorf("placement %+v on the failed GPU", p)
			}
		}
	}
}

// TestGavelTenantWeights: tenants' weights reach the policy. Under
// hierarchical max-min on identical jobs (four each, on four GPUs), with
// space sharing or without, a tenant of weight 3 gets three times the GPU
// time of one of weight 1, and a listed tenant with no jobs yet does not
// stop the solve.
func TestGavelTenantWeights(t *testing.T) {
	c, types := twoTypeCluster()
	tenants := []alloc.Tenant{{ID: "light", Weight: 1}, {ID: "heavy", Weight: 3}, {ID: "later", Weight: 2}}
	later := []alloc.TenantID{"later"}
	for _, pol := range []alloc.Policy{alloc.Hierarchical{FIFO: later}, alloc.SpaceSharing{Objective: alloc.SharingHierarchical, FIFO: later}} {
		s, err := stride.NewGavel(pol, c, types, &stride.GavelSettings{Tenants: tenants})
		if err != nil {
			t.Fatal(err)
		}
		var ev []round.Event
		for i := range 4 {
			for _, owner := range []alloc.TenantID{"light", "heavy"} {
				j := alloc.Job{ID: alloc.JobID(owner) + alloc.JobID(rune('0'+i)), Owner: owner, Gang: 1, Weight: 1, Rates: []float64{1, 1}}
				ev = append(ev, round.Arrive(0, j, 100))
			}
		}
		if err := s.Apply(ev...); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(context.Background(), 0); err != nil {
			t.Fatalf("%s: %v", pol.Name(), err)
		}
		time := func(id alloc.JobID) float64 {
			x, _ := s.Target(id)
			return x[0] + x[1]
		}
		var l, h float64
		for i := range 4 {
			l += time(alloc.JobID("light") + alloc.JobID(rune('0'+i)))
			h += time(alloc.JobID("heavy") + alloc.JobID(rune('0'+i)))
		}
		if h < 3*l-1e-6 || h > 3*l+1e-6 {
			t.Errorf("%s: heavy gets %v of GPU time, light %v: want 3 to 1", pol.Name(), h, l)
		}
	}
	if _, err := stride.NewGavel(alloc.MaxMin{}, c, types, &stride.GavelSettings{Tenants: []alloc.Tenant{{ID: "x", Weight: -1}}}); err == nil {
		t.Errorf("a negative tenant weight was accepted")
	}
}

// TestGavelColocates: under space sharing, two jobs that each run at 0.8
// of their own rate when paired share the one GPU every round (1.6 times
// the work of running alone), as one placement of both jobs, and the
// ledger counts that time as shared.
func TestGavelColocates(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "v", Type: "v100", GPUs: 1}}}
	types := []topology.GPUType{"v100"}
	ss := alloc.SpaceSharing{Objective: alloc.SharingMaxMin, JobTypes: []string{"a", "b"},
		Pairs: []alloc.PairRate{{A: "a", B: "b", Type: "v100", RateA: 0.8, RateB: 0.8}}}
	s, err := stride.NewGavel(ss, c, types, &stride.GavelSettings{Round: 100})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(round.Arrive(0, alloc.Job{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1}}, 1000),
		round.Arrive(0, alloc.Job{ID: "b", Gang: 1, Weight: 1, Rates: []float64{1}}, 1000))
	if err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		d, err := s.Decide(context.Background(), float64(100*r))
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Placements) != 1 || len(d.Placements[0].Jobs) != 2 {
			t.Fatalf("round %d: placements %+v, want a and b together", r, d.Placements)
		}
		if r > 0 && !d.Placements[0].Renewed {
			t.Errorf("round %d: the pair was not renewed on its GPU", r)
		}
	}
	j, _ := s.Ledger().Job("a")
	if j.Shared == nil || j.Shared[0] != 200 || j.Received[0] != 200 {
		t.Errorf("job a received %v, shared %v; want 200 s, all shared", j.Received, j.Shared)
	}
}

// The policy inputs for a problem whose jobs are not aligned with jobs
// give the policy no inputs, which it refuses as of the wrong length: they
// indexed p.Jobs past its end and panicked.
func TestGavelInputsMisaligned(t *testing.T) {
	c, types := twoTypeCluster()
	capa, err := alloc.CapacityOf(c, types)
	if err != nil {
		t.Fatal(err)
	}
	p, err := alloc.NewJobProblem(capa, nil, []alloc.Job{{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []*round.Job{{Job: p.Jobs[0], Work: 10, Received: make([]float64, 2)}, {Job: alloc.Job{ID: "b", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, Received: make([]float64, 2)}}
	if got := stride.RemainingSteps(p, jobs); got != nil {
		t.Errorf("RemainingSteps() of 1 problem job for 2 jobs = %v, want nil", got)
	}
	if got := stride.RemainingSteps(nil, jobs); got != nil {
		t.Errorf("RemainingSteps(nil) = %v, want nil", got)
	}
	for name, inputs := range map[string]func(float64, *alloc.Problem, []*round.Job) alloc.Policy{
		"ShortestJobFirst":   stride.ShortestJobFirstInputs,
		"Makespan":           stride.MakespanInputs,
		"FinishTimeFairness": stride.FinishTimeFairnessInputs,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := inputs(0, p, jobs).Allocate(context.Background(), p)
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != name+".RemainingSteps" {
				t.Errorf("Allocate() = %v, want an *InputError on %s.RemainingSteps wrapping ErrShape", err, name)
			}
		})
	}
}

// malformed is a policy of a caller's own that returns an allocation of
// the wrong shape: rows for the problem's first rows jobs, cols columns.
type malformed struct{ rows, cols int }

func (malformed) Name() string { return "malformed" }

func (m malformed) Allocate(_ context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	a := &alloc.Allocation{Types: p.Capacity.Types}
	for i := range m.rows {
		a.Rows = append(a.Rows, string(p.Jobs[i].ID))
		a.GPUs = append(a.GPUs, make([]float64, m.cols))
	}
	return a, nil
}

// TestGavelRefusesMalformedAllocations: the round read a policy's rows by
// the problem's jobs and its columns by the problem's types, and panicked
// on a policy that returned fewer of either. Decide now says which is
// wrong.
func TestGavelRefusesMalformedAllocations(t *testing.T) {
	c, types := twoTypeCluster()
	for _, pol := range []malformed{{rows: 1, cols: 2}, {rows: 2, cols: 1}} {
		s, err := stride.NewGavel(pol, c, types, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []alloc.JobID{"a", "b"} {
			if err := s.Apply(round.Arrive(0, alloc.Job{ID: id, Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 10)); err != nil {
				t.Fatal(err)
			}
		}
		_, err = s.Decide(context.Background(), 0)
		var ie *gpufair.InputError
		if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != "Allocation.GPUs" {
			t.Errorf("%+v: Decide() = %v, want an *InputError on Allocation.GPUs wrapping ErrShape", pol, err)
		}
	}
}
