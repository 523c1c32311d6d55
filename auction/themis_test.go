package auction_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/ftf"
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

// TestThemisContract checks Decide's refusals, and Snapshot's and
// Restore's of what they cannot save or read.
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
	if err := s.Restore([]byte("{}")); !errors.Is(err, gpufair.ErrSnapshot) {
		t.Errorf("Restore({}) error = %v, want ErrSnapshot", err)
	}
	// A source that cannot be saved: no snapshot.
	s, err = auction.NewThemis(c, []topology.GPUType{"v100"}, nil, opaqueSource{rand.NewPCG(1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(); !errors.Is(err, gpufair.ErrSnapshot) {
		t.Errorf("Snapshot() with a source without MarshalBinary: error = %v, want ErrSnapshot", err)
	}
}

// opaqueSource is a rand.Source whose state cannot be saved.
type opaqueSource struct{ src rand.Source }

func (o opaqueSource) Uint64() uint64 { return o.src.Uint64() }

// TestThemisApps runs a hyper-parameter app of four elastic jobs (one owner)
// beside two one-job apps: the arbiter sees three apps, each elastic job is
// placed on 1 to Gang GPUs of one type, every job finishes, and the sim's
// app results group the four jobs.
func TestThemisApps(t *testing.T) {
	c := topology.Cluster{}
	for s := range 4 {
		c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprint("m", s), Rack: fmt.Sprint("r", s/2), Type: "v100", GPUs: 4})
	}
	w := &sim.Workload{Types: []topology.GPUType{"v100"}}
	for i := range 4 {
		w.Jobs = append(w.Jobs, sim.Job{Job: alloc.Job{ID: alloc.JobID(fmt.Sprint("hp-", i)), Owner: "hp", Gang: 4, Rates: []float64{4}, Elastic: true}, Steps: float64(3000 * (i + 1))})
	}
	w.Jobs = append(w.Jobs,
		sim.Job{Job: alloc.Job{ID: "solo", Gang: 2, Rates: []float64{2}}, Arrival: 600, Steps: 4000},
		sim.Job{Job: alloc.Job{ID: "late", Gang: 8, Rates: []float64{8}, Elastic: true}, Arrival: 1200, Steps: 20000})
	s, err := auction.NewThemis(c, w.Types, &auction.ThemisSettings{Round: 120, Arbiter: auction.ArbiterSettings{Filter: 0.5}}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	apps := 0
	res, err := sim.Run(context.Background(), w, c, checked{s, t, &apps}, &sim.Settings{Round: 120})
	if err != nil {
		t.Fatal(err)
	}
	if sum := res.AppSummary(); sum.Apps != 3 || sum.Finished != 3 {
		t.Fatalf("app summary %+v, want 3 apps finished", sum)
	}
	if apps != 3 {
		t.Errorf("the arbiter saw at most %d apps at once, want 3", apps)
	}
}

// checked is a Themis whose decisions are checked: elastic jobs on 1 to
// Gang GPUs, and the arbiter's apps counted.
type checked struct {
	*auction.Themis
	t    *testing.T
	most *int
}

func (c checked) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	d, err := c.Themis.Decide(ctx, now)
	if err != nil {
		return nil, err
	}
	*c.most = max(*c.most, len(c.Arbiter().Apps()))
	for _, p := range d.Placements {
		j, _ := c.Ledger().Job(p.Jobs[0])
		if len(p.GPUs) < 1 || len(p.GPUs) > j.Gang || (!j.Elastic && len(p.GPUs) != j.Gang) {
			c.t.Errorf("job %s (gang %d, elastic %v) on %d GPUs", j.ID, j.Gang, j.Elastic, len(p.GPUs))
		}
	}
	return d, nil
}

// TestThemisDemandTooLarge: an app whose demand exceeds the cluster is
// refused with a typed error, and nothing changes: the arbiter has no new
// app, and the next decision is as it would have been.
func TestThemisDemandTooLarge(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: 4}}}
	s, err := auction.NewThemis(c, []topology.GPUType{"v100"}, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	ok := round.Arrive(0, alloc.Job{ID: "small", Owner: "app", Gang: 2, Weight: 1, Rates: []float64{1}}, 100)
	big := round.Arrive(0, alloc.Job{ID: "big", Owner: "app", Gang: 8, Weight: 1, Rates: []float64{1}}, 100)
	var ie *gpufair.InputError
	if err := s.Apply(ok, big); !errors.Is(err, gpufair.ErrTooLarge) || !errors.As(err, &ie) || ie.ID != "big" {
		t.Fatalf("Apply() error = %v, want an *gpufair.InputError for big wrapping ErrTooLarge", err)
	}
	if apps := s.Arbiter().Apps(); len(apps) != 0 || len(s.Ledger().Jobs()) != 0 {
		t.Fatalf("after a refused Apply: apps %v, jobs %d", apps, len(s.Ledger().Jobs()))
	}
}

// TestThemisSpreadOfWrongLength: spread rates of the wrong length were
// indexed by type in the agents' goroutines and brought the program down;
// Decide refuses them, and nothing changes.
func TestThemisSpreadOfWrongLength(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v0", Type: "v100", GPUs: 2}, {Name: "v1", Type: "v100", GPUs: 2}}}
	short := func(alloc.JobID) []float64 { return []float64{1} }
	s, err := auction.NewThemis(c, []topology.GPUType{"k80", "v100"}, &auction.ThemisSettings{Spread: short}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	// A gang of 4 v100s spans both v100 servers: its spread rates count.
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 4, Weight: 1, Rates: []float64{0, 1}}, 100)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Decide(context.Background(), 0)
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != "ThemisSettings.Spread" || ie.ID != "x" {
		t.Fatalf("Decide() = %v, want an *InputError on ThemisSettings.Spread for x wrapping ErrShape", err)
	}
	if n := s.Ledger().Rounds(); n != 0 {
		t.Errorf("a refused Decide made %d rounds", n)
	}
}

// TestAgentsRefuseMismatchedServers: counts of held (or an offer) for
// another number of servers than the agent's cluster panicked, pricing
// their locality or indexing free by held's servers, and so did Rho and
// Bid of an agent whose Spread gave the wrong number of rates; Rho and Bid
// return typed errors and Wants nothing.
func TestAgentsRefuseMismatchedServers(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	three := topology.Cluster{Servers: append(slices.Clone(c.Servers), topology.Server{Name: "w", Type: "v100", GPUs: 2})}
	l, err := round.NewLedger(c, []topology.GPUType{"k80", "v100"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 100)); err != nil {
		t.Fatal(err)
	}
	app := agentOn(l, nil, 1, 100)
	rho := auction.RhoAgent{RhoAt: func(time.Time, ftf.Placement) (float64, error) { return 1, nil }}
	now := time.Unix(0, 0).UTC()
	// An agent built by hand, whose own Spread gives one rate for two
	// types: it was indexed by type in the agents' goroutines.
	spread := agentOn(l, nil, 1, 100)
	spread.Spread = func(alloc.JobID) []float64 { return []float64{1} }
	offer := ftf.Offer{Cluster: c, Free: []int{2, 2}}
	for name, err := range map[string]error{
		"AppAgent.Rho, Spread": func() error { _, err := spread.Rho(context.Background(), now, c, []int{1, 1}); return err }(),
		"AppAgent.Bid, Spread": func() error { _, err := spread.Bid(context.Background(), now, offer, []int{0, 0}); return err }(),
		"RhoAgent.Rho":         func() error { _, err := rho.Rho(context.Background(), now, c, []int{1}); return err }(),
		"AppAgent.Rho":         func() error { _, err := app.Rho(context.Background(), now, c, []int{1, 0, 0}); return err }(),
		"AppAgent.Bid": func() error {
			_, err := app.Bid(context.Background(), now, ftf.Offer{Cluster: three, Free: []int{2, 2, 2}}, []int{0, 0, 0})
			return err
		}(),
	} {
		var ie *gpufair.InputError
		if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) {
			t.Errorf("%s: error = %v, want an *InputError wrapping ErrShape", name, err)
		}
	}
	if b := app.Wants([]int{0, 0}, []int{1}); b != nil {
		t.Errorf("Wants() with one free count for two servers = %v, want nil", b)
	}
	if b := app.Wants([]int{0, 0}, []int{2, 2}); b == nil {
		t.Errorf("Wants() = nil with free GPUs of both types")
	}
}

// TestThemisRefusesBadPlansAndWork: a plan (ThemisSettings.Phases) whose
// job had one rate for two types panicked in the agents' goroutines, and
// bad gangs, rates or work and an infinite ThemisSettings.Work priced every
// holding at +Inf or NaN; Decide refuses them and takes no round, and the
// agent's Rho and Bid refuse such a plan.
func TestThemisRefusesBadPlansAndWork(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	types := []topology.GPUType{"k80", "v100"}
	planWith := func(next auction.PlannedJob) func(alloc.TenantID) [][]auction.PlannedJob {
		return func(alloc.TenantID) [][]auction.PlannedJob {
			return [][]auction.PlannedJob{{{Job: alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, Work: 100}}, {next}}
		}
	}
	next := func(gang int, work float64, rates ...float64) auction.PlannedJob {
		return auction.PlannedJob{Job: alloc.Job{ID: "y", Gang: gang, Weight: 1, Rates: rates}, Work: work}
	}
	for _, tc := range []struct {
		name  string
		set   auction.ThemisSettings
		field string
		want  error
	}{
		{"one rate for two types", auction.ThemisSettings{Phases: planWith(next(1, 100, 1))}, "ThemisSettings.Phases", gpufair.ErrShape},
		{"NaN rate", auction.ThemisSettings{Phases: planWith(next(1, 100, math.NaN(), 1))}, "ThemisSettings.Phases", gpufair.ErrValue},
		{"negative rate", auction.ThemisSettings{Phases: planWith(next(1, 100, -1, 1))}, "ThemisSettings.Phases", gpufair.ErrValue},
		{"zero gang", auction.ThemisSettings{Phases: planWith(next(0, 100, 1, 2))}, "ThemisSettings.Phases", gpufair.ErrValue},
		{"NaN work", auction.ThemisSettings{Phases: planWith(next(1, math.NaN(), 1, 2))}, "ThemisSettings.Phases", gpufair.ErrValue},
		{"infinite work", auction.ThemisSettings{Phases: planWith(next(1, math.Inf(1), 1, 2))}, "ThemisSettings.Phases", gpufair.ErrValue},
		{"infinite Work", auction.ThemisSettings{Work: func(alloc.TenantID) float64 { return math.Inf(1) }}, "ThemisSettings.Work", gpufair.ErrValue},
		// Finite but extreme: T_id = B / min(R_C, D) · N_avg so small that
		// every rho overflowed to +Inf, as if the app could never finish
		// (TestThemisRefusesOverflowingWork for one that overflows); NaN and
		// negative work were taken as unknown.
		{"Work whose 1/T_id overflows", auction.ThemisSettings{Work: func(alloc.TenantID) float64 { return 1e-320 }}, "ThemisSettings.Work", gpufair.ErrValue},
		{"NaN Work", auction.ThemisSettings{Work: func(alloc.TenantID) float64 { return math.NaN() }}, "ThemisSettings.Work", gpufair.ErrValue},
		{"negative Work", auction.ThemisSettings{Work: func(alloc.TenantID) float64 { return -1 }}, "ThemisSettings.Work", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := auction.NewThemis(c, types, &tc.set, rand.NewPCG(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 100)); err != nil {
				t.Fatal(err)
			}
			_, err = s.Decide(context.Background(), 0)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("Decide() = %v, want an *InputError on %s wrapping %v", err, tc.field, tc.want)
			}
			if n := s.Ledger().Rounds(); n != 0 {
				t.Errorf("a refused Decide made %d rounds", n)
			}
		})
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 100)); err != nil {
		t.Fatal(err)
	}
	app := agentOn(l, planWith(next(1, 100, 1))(""), 1, 100)
	now := time.Unix(0, 0).UTC()
	for name, err := range map[string]error{
		"Rho": func() error { _, err := app.Rho(context.Background(), now, c, []int{1, 1}); return err }(),
		"Bid": func() error {
			_, err := app.Bid(context.Background(), now, ftf.Offer{Cluster: c, Free: []int{2, 2}}, []int{0, 0})
			return err
		}(),
	} {
		var ie *gpufair.InputError
		if !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != "AppAgent.Phases" {
			t.Errorf("AppAgent.%s: error = %v, want an *InputError on AppAgent.Phases wrapping ErrShape", name, err)
		}
	}
}

// TestThemisRefusesOverflowingWork: a ThemisSettings.Work of 1e308 with
// two apps in the system made T_id = B / min(R_C, D) · N_avg +Inf and
// every rho 0, which the arbiter refused round after round, so the apps
// were never priced; without Work, B is the work of the app's jobs seen
// so far, work × gang / fastest rate each, and a job of work 1e308 at
// rates near 1e-300, which the ledger takes, made it +Inf and every rho
// NaN. Decide refuses both, naming the app, and takes no round.
func TestThemisRefusesOverflowingWork(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	for _, tc := range []struct {
		name  string
		set   *auction.ThemisSettings
		work  float64
		rates []float64
		field string
	}{
		{"ThemisSettings.Work", &auction.ThemisSettings{Work: func(alloc.TenantID) float64 { return 1e308 }}, 100, []float64{1, 2}, "ThemisSettings.Work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := auction.NewThemis(c, []topology.GPUType{"k80", "v100"}, tc.set, rand.NewPCG(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(
				round.Arrive(0, alloc.Job{ID: "x", Owner: "app", Gang: 1, Weight: 1, Rates: tc.rates}, tc.work),
				round.Arrive(0, alloc.Job{ID: "y", Owner: "other", Gang: 1, Weight: 1, Rates: tc.rates}, tc.work),
			); err != nil {
				t.Fatal(err)
			}
			_, err = s.Decide(context.Background(), 0)
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != "app" {
				t.Fatalf("Decide() = %v, want an *InputError on %s[app] wrapping ErrValue", err, tc.field)
			}
			if n := s.Ledger().Rounds(); n != 0 {
				t.Errorf("a refused Decide made %d rounds", n)
			}
		})
	}
}

// An app whose jobs' work gives no T_id, unknown (0) or past float64's
// range (1e308 at rates of 1e-12: FuzzEvents' workloads have such jobs),
// with no ThemisSettings.Work, cannot be priced: its agent refuses, and the
// other apps go on. Decide refuses only a ThemisSettings.Work whose T_id
// overflows.
func TestThemisUnpriceableWorkLeavesOthers(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	for _, tc := range []struct {
		name  string
		work  float64
		rates []float64
	}{
		{"unknown", 0, []float64{1, 2}},
		{"past float64", 1e308, []float64{1e-12, 2e-12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := auction.NewThemis(c, []topology.GPUType{"k80", "v100"}, nil, rand.NewPCG(1, 1))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(
				round.Arrive(0, alloc.Job{ID: "x", Owner: "unpriced", Gang: 1, Weight: 1, Rates: tc.rates}, tc.work),
				round.Arrive(0, alloc.Job{ID: "y", Owner: "known", Gang: 1, Weight: 1, Rates: tc.rates}, 100),
			); err != nil {
				t.Fatal(err)
			}
			d, err := s.Decide(context.Background(), 0)
			if err != nil {
				t.Fatalf("Decide() = %v", err)
			}
			placed := false
			for _, p := range d.Placements {
				placed = placed || slices.Contains(p.Jobs, "y")
			}
			if !placed {
				t.Errorf("the app of known work got no GPU: %+v", d.Placements)
			}
		})
	}
}

// TestAppAgentRefusesUnpriceableRho: an AppAgent whose Work or Contention
// is not positive and finite, or whose T_id or rho overflows, priced every
// holding at +Inf, 0 or NaN (a finite finish time read as never finishing);
// its Rho and Bid now refuse them with a typed error on the input at fault.
func TestAppAgentRefusesUnpriceableRho(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	types := []topology.GPUType{"k80", "v100"}
	ledger := func(work float64, rates ...float64) *round.Ledger {
		l, err := round.NewLedger(c, types)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: rates}, work)); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		name  string
		app   *auction.AppAgent
		field string
	}{
		{"zero Work", agentOn(ledger(100, 1, 2), nil, 1, 0), "AppAgent.Work"},
		{"NaN Work", agentOn(ledger(100, 1, 2), nil, 1, math.NaN()), "AppAgent.Work"},
		{"NaN Contention", agentOn(ledger(100, 1, 2), nil, math.NaN(), 100), "AppAgent.Contention"},
		{"T_id overflows", agentOn(ledger(100, 1, 2), nil, 10, 1e308), "AppAgent.Work"},
		// T_id 1e-307 s: 50 s on a V100 is rho 5e308.
		{"rho overflows", agentOn(ledger(100, 1, 2), nil, 1, 1e-307), "AppAgent.Work"},
		// 1e308 steps at 2e-300 steps/s: 5e607 s.
		{"time overflows", agentOn(ledger(1e308, 1e-300, 2e-300), nil, 1, 100), "Job.Work"},
	} {
		now := time.Unix(0, 0).UTC()
		for name, err := range map[string]error{
			"Rho": func() error { _, err := tc.app.Rho(context.Background(), now, c, []int{0, 1}); return err }(),
			"Bid": func() error {
				_, err := tc.app.Bid(context.Background(), now, ftf.Offer{Cluster: c, Free: []int{2, 2}}, []int{0, 0})
				return err
			}(),
		} {
			var ie *gpufair.InputError
			if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != tc.field {
				t.Errorf("%s: AppAgent.%s: error = %v, want an *InputError on %s wrapping ErrValue", tc.name, name, err, tc.field)
			}
		}
	}
}

// Beyond ±292 years of the Unix epoch the arbiter's clock stops at the end
// of its range (ThemisSettings.Observe); the apps' start times on the
// caller's clock did not, so every rho of an app that arrived there was
// negative and every agent failed. They now start on the arbiter's clock.
func TestThemisTimesBeyondTheClock(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k", Type: "k80", GPUs: 2}, {Name: "v", Type: "v100", GPUs: 2}}}
	for _, at := range []float64{1e10, 1e15} {
		var failed []error
		set := &auction.ThemisSettings{Observe: func(r *auction.Round) { failed = append(failed, r.Errors...) }}
		s, err := auction.NewThemis(c, []topology.GPUType{"k80", "v100"}, set, rand.NewPCG(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(
			round.Arrive(at, alloc.Job{ID: "x", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 100),
			round.Arrive(at, alloc.Job{ID: "y", Owner: "b", Gang: 2, Weight: 1, Rates: []float64{1, 2}}, 100),
		); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := s.Decide(context.Background(), at+float64(i)*360); err != nil {
				t.Fatalf("at %g, round %d: %v", at, i, err)
			}
		}
		if len(failed) > 0 {
			t.Errorf("at %g: agents failed: %v", at, failed)
		}
	}
}

// TestThemisKeepsJobsOnTheirSlots: one app runs a 2-GPU gang y and a
// 1-GPU job x on its three GPUs of a 4-GPU server, round after round. The
// app scheduler places the job with more work left first, and x overtakes
// y in the third round; each job still keeps the slots it ran on, so no
// round restarts a job from a checkpoint. (The scheduler used to give the
// job placed first the server's first slots, so that x and y swapped
// slots and both restarted.)
func TestThemisKeepsJobsOnTheirSlots(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: 4}}}
	s, err := auction.NewThemis(c, []topology.GPUType{"v100"}, nil, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	rate := map[alloc.JobID]float64{"x": 0.1, "y": 1}
	work := map[alloc.JobID]float64{"x": 1000, "y": 1500}
	for _, id := range []alloc.JobID{"x", "y"} {
		j := alloc.Job{ID: id, Owner: "app", Gang: 1, Weight: 1, Rates: []float64{rate[id]}}
		if id == "y" {
			j.Gang = 2
		}
		if err := s.Apply(round.Arrive(0, j, work[id])); err != nil {
			t.Fatal(err)
		}
	}
	done := map[alloc.JobID]float64{}
	first := map[int]alloc.JobID{} // the job with more work left, by round
	for q := range 4 {
		d, err := s.Decide(context.Background(), float64(q)*auction.DefaultRound)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Placements) != 2 {
			t.Fatalf("round %d: %d placements, want both jobs", q, len(d.Placements))
		}
		first[q] = "x"
		if work["y"]-done["y"] > work["x"]-done["x"] {
			first[q] = "y"
		}
		var ev []round.Event
		for _, p := range d.Placements {
			if p.Restart {
				t.Errorf("round %d: %v restarted on %v", q, p.Jobs, p.GPUs)
			}
			id := p.Jobs[0]
			done[id] += (d.End - d.Start) * rate[id]
			ev = append(ev, round.Progress(d.End, id, done[id]))
		}
		if err := s.Apply(ev...); err != nil {
			t.Fatal(err)
		}
	}
	if first[0] != "y" || first[3] != "x" {
		t.Fatalf("the job with more work left was %v by round: the test needs y, then x", first)
	}
}

// TestThemisGangFasterSpread: a gang measured faster spread over servers
// than on one (some of Gavel's rows are) is priced as measured, a slowdown
// below 1. ftf.PhaseTime once refused such a slowdown, and the app went
// unpriced and unserved.
func TestThemisGangFasterSpread(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "v100", GPUs: 2}, {Name: "b", Type: "v100", GPUs: 2}}}
	var errs []error
	set := &auction.ThemisSettings{
		Spread:  func(alloc.JobID) []float64 { return []float64{1.2} },
		Observe: func(r *auction.Round) { errs = append(errs, r.Errors...) },
	}
	s, err := auction.NewThemis(c, nil, set, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, alloc.Job{ID: "x", Gang: 4, Weight: 1, Rates: []float64{1}}, 1e4)); err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 || len(d.Placements) != 1 || len(d.Placements[0].GPUs) != 4 {
		t.Fatalf("decision %+v, agent errors %v: want x on all four GPUs", d.Placements, errs)
	}
}

// rhoTol is the relative slack for comparing a bid's rho with an exact
// fraction.
const rhoTol = 1e-12

// TestThemisDemandOutlivesJobs: without a plan, app_demand_max was the sum
// of the gangs of the app's jobs in the system, so when one of its two
// 1-GPU jobs finished, D fell from 2 to 1, T_id doubled and the app's rho
// halved (1.99 to 0.99) though its finish had not moved. D is the most its
// jobs have asked for at once, and survives a snapshot.
func TestThemisDemandOutlivesJobs(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m", Rack: "r", Type: "v100", GPUs: 4}}}
	th, err := auction.NewThemis(c, nil, nil, rand.NewPCG(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	job := func(id alloc.JobID) alloc.Job {
		return alloc.Job{ID: id, Owner: "x", Gang: 1, Weight: 1, Rates: []float64{1}, Elastic: true}
	}
	if err := th.Apply(round.Arrive(0, job("j1"), 100), round.Arrive(0, job("j2"), 10000)); err != nil {
		t.Fatal(err)
	}
	rho := func(th *auction.Themis, at float64) float64 {
		t.Helper()
		if _, err := th.Decide(context.Background(), at); err != nil {
			t.Fatal(err)
		}
		r, _ := th.Arbiter().Rho("x")
		return r
	}
	rho(th, 0)
	before := rho(th, 60)
	if err := th.Apply(round.Progress(100, "j1", 100), round.Progress(100, "j2", 100), round.Depart(100, "j1")); err != nil {
		t.Fatal(err)
	}
	snap, err := th.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := auction.NewThemis(c, nil, nil, rand.NewPCG(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*auction.Themis{"running": th, "restored": restored} {
		if after := rho(s, 120); !(after > 0.9*before) {
			t.Errorf("%s: rho %v after a job left, %v before: T_id grew as the app's jobs left", name, after, before)
		}
	}
}

// TestThemisPricesEachJobsGang: equation 2's job_demand_max is each job's
// (iter_time(G) = iter_time_serial·S(G) / min(‖G‖₁, job_demand_max)), and
// the app scheduler gives a job no more GPUs than its gang. The AppAgent
// passed the phase's largest gang to ftf.PhaseTime as every job's cap, so
// for J1 (gang 1, 1000 s) and J2 (gang 2, 100 s) it priced J1 on 2 GPUs:
// rho 15/11 (T_sh 500 s) for 3 and 4 GPUs, where J1 takes 1000 s (30/11).
func TestThemisPricesEachJobsGang(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "m0", Rack: "r", Type: "v100", GPUs: 4}}}
	var rounds []*auction.Round
	set := &auction.ThemisSettings{Round: 360, Observe: func(r *auction.Round) { rounds = append(rounds, r) }}
	s, err := auction.NewThemis(c, nil, set, rand.NewPCG(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Apply(
		round.Arrive(0, alloc.Job{ID: "J1", Owner: "X", Gang: 1, Weight: 1, Rates: []float64{1}, Elastic: true}, 1000),
		round.Arrive(0, alloc.Job{ID: "J2", Owner: "X", Gang: 2, Weight: 1, Rates: []float64{2}, Elastic: true}, 100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 1 || len(rounds[0].Errors) > 0 || len(rounds[0].Bids) != 1 {
		t.Fatalf("rounds %+v: want one round with X's bid and no agent errors", rounds)
	}
	// B = 1000 + 100 GPU-seconds over min(R_C, D) = min(4, 1 + 2) GPUs, N_avg 1.
	const iso = 1100.0 / 3
	rows := rounds[0].Bids[0].Table.Rows
	if len(rows) == 0 {
		t.Fatal("X bid no rows")
	}
	for _, r := range rows {
		g := 0
		for _, n := range r.Counts {
			g += n
		}
		want := 1000 / iso // J1 alone on one GPU; J2 on 1 or 2 others
		if g == 1 {
			want = 1100 / iso // both serially on the one GPU
		}
		if math.Abs(r.Rho-want) > rhoTol*want {
			t.Errorf("row %v: rho = %.15g, want %.15g (T_sh %.6g s, want %.6g s)", r.Counts, r.Rho, want, r.Rho*iso, want*iso)
		}
	}
}
