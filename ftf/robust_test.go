package ftf

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// TestPhaseTimeHugeCluster: 2^40 GPUs once took 2^40 greedy steps; the
// level search answers at once, and the answer is every job on its most.
func TestPhaseTimeHugeCluster(t *testing.T) {
	jobs := []JobInfo{{ItersRemaining: 100, IterTime: 2}, {ItersRemaining: 50, IterTime: 1}}
	start := time.Now()
	got := PhaseTime(jobs, Placement{GPUs: 1 << 40, Locality: topology.SameRack}, 1<<40)
	if d := time.Since(start); d > time.Second {
		t.Errorf("PhaseTime took %v", d)
	}
	if got <= 0 || got > 200*1.1/(1<<38) {
		t.Errorf("PhaseTime = %v, want about 200·1.1/2^39", got)
	}
}

// TestLevelMakespanMatchesGreedy: the level search gives the greedy's
// optimum wherever the greedy runs, each job within its own cap
// (JobInfo.DemandMax, 0 for demandMax).
func TestLevelMakespanMatchesGreedy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "jobs")
		work := make([]float64, n)
		slow := make([]float64, n)
		for k := range work {
			work[k] = float64(rapid.IntRange(1, 1000).Draw(t, "work"))
			slow[k] = []float64{1, 1.1, 1.3, 2.5}[rapid.IntRange(0, 3).Draw(t, "slow")]
		}
		g := rapid.IntRange(n, 64).Draw(t, "gpus")
		demand := rapid.IntRange(1, 16).Draw(t, "demand")
		jobs := make([]JobInfo, n)
		caps := make([]int, n)
		for k := range jobs {
			own := rapid.IntRange(0, 20).Draw(t, "jobDemand")
			jobs[k] = JobInfo{ItersRemaining: work[k], IterTime: 1, Slowdown: topology.Slowdown{slow[k], slow[k], slow[k]}, DemandMax: own}
			caps[k] = demand
			if own > 0 {
				caps[k] = min(own, demand)
			}
		}
		want := PhaseTime(jobs, Placement{GPUs: g}, demand)
		got := levelMakespan(work, slow, g, caps)
		if math.Abs(got-want) > 1e-12*want {
			t.Fatalf("levelMakespan = %v, greedy %v", got, want)
		}
	})
}

// TestRhoBadPlacement: a locality beyond CrossRack was an index out of
// range; it is an input error.
func TestRhoBadPlacement(t *testing.T) {
	j := SingleJob{ItersLeft: 10, ItersTotal: 10, IterTime: 1, DemandMax: 4, ClusterGPUs: 8, Contention: 1}
	for _, l := range []topology.Locality{-1, 3, 9} {
		if _, err := j.Rho(Placement{GPUs: 2, Locality: l}); !errors.Is(err, gpufair.ErrValue) {
			t.Errorf("Rho(Locality %d) error = %v, want ErrValue", l, err)
		}
	}
	if got := PhaseTime([]JobInfo{{ItersRemaining: 1, IterTime: 1}}, Placement{GPUs: 2, Locality: 9}, 2); math.IsNaN(got) || got <= 0 {
		t.Errorf("PhaseTime(Locality 9) = %v, want the cross-rack time", got)
	}
}

// TestRhoOverflow: times that overflow to +Inf on both sides of the ratio
// gave NaN with a nil error.
func TestRhoOverflow(t *testing.T) {
	j := SingleJob{ItersLeft: 1e308, ItersTotal: 1e308, IterTime: 1e308, DemandMax: 1, ClusterGPUs: 1, Contention: 1}
	r, err := j.Rho(Placement{GPUs: 1})
	if err == nil && math.IsNaN(r) {
		t.Fatalf("Rho() = NaN with a nil error")
	}
	if !errors.Is(err, gpufair.ErrTooLarge) {
		t.Errorf("Rho() error = %v, want ErrTooLarge", err)
	}
}

// TestNewTableNilRho: a nil rho function was called, and panicked.
func TestNewTableNilRho(t *testing.T) {
	o := Offer{Cluster: topology.Cluster{Servers: []topology.Server{{Name: "m", Type: "k80", GPUs: 2}}}, Free: []int{2}}
	if _, err := NewTable(o, nil, nil, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("NewTable(nil rho) error = %v, want ErrEmpty", err)
	}
}

// TestRhoAppInputs: RhoHalving and RhoCurve took a nil app (and panicked),
// a negative GPU count or an unknown locality (where SingleJob.Rho refuses
// both), and times that overflow float64 (NaN or 0 with a nil error).
func TestRhoAppInputs(t *testing.T) {
	info := AppInfo{Budget: 100, AppDemandMax: 1, JobDemandMax: 1, ClusterGPUs: 1, Contention: 1}
	huge := info
	huge.Budget, huge.Contention = 1e308, 4
	small := Running{{ItersRemaining: 10, IterTime: 1}}
	long := Running{{ItersRemaining: 1e308, IterTime: 1e308}}
	one := Placement{GPUs: 1}
	for _, tc := range []struct {
		name    string
		app     Running
		isNil   bool
		info    AppInfo
		p       Placement
		field   string // "" for the app itself: HalvingApp or CurveApp
		wantErr error
	}{
		{"nil app", nil, true, info, one, "", gpufair.ErrEmpty},
		{"negative GPUs", small, false, info, Placement{GPUs: -1}, "Placement.GPUs", gpufair.ErrValue},
		{"unknown locality", small, false, info, Placement{GPUs: 1, Locality: 9}, "Placement.Locality", gpufair.ErrValue},
		{"T_independent overflows", small, false, huge, one, "", gpufair.ErrTooLarge},
		{"T_shared overflows", long, false, info, one, "", gpufair.ErrTooLarge},
	} {
		var halving HalvingApp = Phases{tc.app}
		var curve CurveApp = tc.app
		if tc.isNil {
			halving, curve = nil, nil
		}
		for _, call := range []struct {
			app string
			rho func() (float64, error)
		}{
			{"HalvingApp", func() (float64, error) { return RhoHalving(halving, tc.info, tc.p, Literal) }},
			{"CurveApp", func() (float64, error) { return RhoCurve(curve, tc.info, tc.p) }},
		} {
			r, err := call.rho()
			var in *gpufair.InputError
			field := tc.field
			if field == "" {
				field = call.app
			}
			if !errors.As(err, &in) || !errors.Is(err, tc.wantErr) || in.Field != field {
				t.Errorf("%s, %s: rho %v, error %v, want %v on %s", tc.name, call.app, r, err, tc.wantErr, field)
			}
		}
	}
	// Without GPUs an app with work left never finishes: +Inf, no error.
	for _, rho := range []func() (float64, error){
		func() (float64, error) { return RhoHalving(Phases{small}, info, Placement{}, Literal) },
		func() (float64, error) { return RhoCurve(small, info, Placement{}) },
	} {
		if r, err := rho(); err != nil || !math.IsInf(r, 1) {
			t.Errorf("no GPUs: rho %v, error %v, want +Inf", r, err)
		}
	}
}

// TestPhaseTimeRefusesBadInput: PhaseTime returns no error, and a NaN
// iteration count gave 0, a phase that took no time; so did a negative
// count, and an infinite one with an unknown iteration time, while two
// negatives gave a positive time. Such input is NaN; a job without work,
// or no jobs, still takes 0.
func TestPhaseTimeRefusesBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	two := Placement{GPUs: 2}
	for _, tc := range []struct {
		name   string
		jobs   []JobInfo
		p      Placement
		demand int
		want   float64 // NaN for refused input
	}{
		{"NaN iterations", []JobInfo{{ItersRemaining: nan, IterTime: 1}}, two, 2, nan},
		{"NaN iteration time", []JobInfo{{ItersRemaining: 1, IterTime: nan}}, two, 2, nan},
		{"negative iterations", []JobInfo{{ItersRemaining: -2, IterTime: 3}}, two, 2, nan},
		{"two negatives", []JobInfo{{ItersRemaining: -2, IterTime: -3}}, two, 2, nan},
		{"+Inf iterations, unknown time", []JobInfo{{ItersRemaining: inf, IterTime: 0}}, two, 2, nan},
		{"-Inf iteration time", []JobInfo{{ItersRemaining: 1, IterTime: math.Inf(-1)}}, two, 2, nan},
		// Taken as measured: Themis' agents meet gangs faster spread.
		{"slowdown below 1", []JobInfo{{ItersRemaining: 1, IterTime: 1, Slowdown: topology.Slowdown{0.5, 0.5, 0.5}}}, two, 2, 0.25},
		{"NaN slowdown", []JobInfo{{ItersRemaining: 1, IterTime: 1, Slowdown: topology.Slowdown{1, nan, nan}}}, two, 2, nan},
		{"negative slowdown", []JobInfo{{ItersRemaining: 1, IterTime: 1, Slowdown: topology.Slowdown{-1, -1, -1}}}, two, 2, nan},
		{"negative GPUs", []JobInfo{{ItersRemaining: 1, IterTime: 1}}, Placement{GPUs: -1}, 2, nan},
		{"negative GPUs, no work", nil, Placement{GPUs: -1}, 2, nan},
		{"demand 0", []JobInfo{{ItersRemaining: 1, IterTime: 1}}, two, 0, nan},
		{"negative job demand", []JobInfo{{ItersRemaining: 1, IterTime: 1, DemandMax: -1}}, two, 2, nan},
		{"negative job demand, no work", []JobInfo{{ItersRemaining: 0, IterTime: 1, DemandMax: -1}}, two, 2, nan},
		{"no jobs", nil, two, 2, 0},
		{"no work", []JobInfo{{ItersRemaining: 0, IterTime: 5}}, two, 2, 0},
		{"no GPUs", []JobInfo{{ItersRemaining: 1, IterTime: 1}}, Placement{}, 2, inf},
		{"overflowing work", []JobInfo{{ItersRemaining: 1e308, IterTime: 1e308}}, two, 2, inf},
		{"one job on two GPUs", []JobInfo{{ItersRemaining: 4, IterTime: 1}}, two, 2, 2},
	} {
		got := PhaseTime(tc.jobs, tc.p, tc.demand)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: PhaseTime() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRhoRefusesNegativeJobDemand: a negative JobInfo.DemandMax, which
// PhaseTime takes as NaN, is an input error on the app's jobs naming the
// job (and its phase) at fault.
func TestRhoRefusesNegativeJobDemand(t *testing.T) {
	info := AppInfo{Budget: 10, AppDemandMax: 2, JobDemandMax: 2, ClusterGPUs: 2, Contention: 1}
	jobs := []JobInfo{{ItersRemaining: 1, IterTime: 1}, {ItersRemaining: 1, IterTime: 1, DemandMax: -3}}
	p := Placement{GPUs: 2}
	for _, tc := range []struct {
		name, field, msg string
		rho              func() (float64, error)
	}{
		{"RhoHalving", "HalvingApp.JobsInPhase", "phase 1, job 1: DemandMax -3 is negative",
			func() (float64, error) { return RhoHalving(Phases{jobs[:1], jobs}, info, p, Literal) }},
		{"RhoCurve", "CurveApp.JobsRemaining", "job 1: DemandMax -3 is negative",
			func() (float64, error) { return RhoCurve(Running(jobs), info, p) }},
	} {
		r, err := tc.rho()
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.Field != tc.field || !errors.Is(err, gpufair.ErrValue) || !strings.HasSuffix(err.Error(), tc.msg) {
			t.Errorf("%s: rho %v, error %v; want an input error on %s wrapping %v ending %q", tc.name, r, err, tc.field, gpufair.ErrValue, tc.msg)
		}
	}
}

// TestPhaseTimeHugeDemand: len(jobs)·(demandMax − 1) overflowed for a
// demandMax near math.MaxInt, which sent 2^40 GPUs to the one-at-a-time
// greedy (it ran for ever), and the level search summed GPU counts past
// math.MaxInt, which took a finish time below what the GPUs can give.
func TestPhaseTimeHugeDemand(t *testing.T) {
	jobs := []JobInfo{{ItersRemaining: 100, IterTime: 2}, {ItersRemaining: 50, IterTime: 1}}
	p := Placement{GPUs: 1 << 40, Locality: topology.SameRack}
	done := make(chan float64, 1)
	go func() { done <- PhaseTime(jobs, p, math.MaxInt) }()
	select {
	case got := <-done:
		if want := PhaseTime(jobs, p, 1<<40); got != want {
			t.Errorf("PhaseTime(demand MaxInt) = %v, want %v as with a demand of every GPU", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("PhaseTime(demand MaxInt) did not return")
	}
	// No finish is below the lower bound Σ work·S / g.
	for _, tc := range []struct {
		work, slow []float64
	}{
		{[]float64{100, 50}, []float64{1.1, 1.1}},
		{[]float64{1e300, 1e300}, []float64{1, 1}},
	} {
		var bound float64
		for k := range tc.work {
			bound += tc.work[k] * tc.slow[k] / math.MaxInt
		}
		if got := levelMakespan(tc.work, tc.slow, math.MaxInt, []int{math.MaxInt, math.MaxInt}); !(got >= bound*(1-1e-12)) {
			t.Errorf("levelMakespan(%v, %v, MaxInt, MaxInt) = %v, below the bound %v", tc.work, tc.slow, got, bound)
		}
	}
}

// TestFormulasRefuseBadInput: SingleJob.Shared and Independent and
// AppInfo.Independent return no error, and gave +Inf for a NaN iteration
// count on no GPUs, a time before now for a negative one, and +Inf or a
// negative time for a cluster of 0 or fewer GPUs. They are NaN for what
// Validate refuses, and keep their values otherwise.
func TestFormulasRefuseBadInput(t *testing.T) {
	ok := SingleJob{Elapsed: 1, ItersLeft: 5, ItersTotal: 10, IterTime: 2, DemandMax: 2, ClusterGPUs: 4, Contention: 2}
	if got := ok.Shared(Placement{GPUs: 1}); got != 11 {
		t.Errorf("Shared() = %v, want 11", got)
	}
	if got := ok.Independent(); got != 20 {
		t.Errorf("Independent() = %v, want 20", got)
	}
	nanLeft, negLeft, noCluster := ok, ok, ok
	nanLeft.ItersLeft, negLeft.ItersLeft, noCluster.ClusterGPUs = math.NaN(), -5, 0
	for _, tc := range []struct {
		name string
		got  float64
	}{
		{"Shared, NaN iterations, no GPUs", nanLeft.Shared(Placement{})},
		{"Shared, negative iterations", negLeft.Shared(Placement{GPUs: 1})},
		{"Shared, negative GPUs", ok.Shared(Placement{GPUs: -1})},
		{"Independent, no cluster", noCluster.Independent()},
		{"AppInfo.Independent, no cluster", AppInfo{Budget: 5, AppDemandMax: 1, JobDemandMax: 1, Contention: 1}.Independent()},
		{"AppInfo.Independent, negative budget", AppInfo{Budget: -5, AppDemandMax: 1, JobDemandMax: 1, ClusterGPUs: 1, Contention: 1}.Independent()},
	} {
		if !math.IsNaN(tc.got) {
			t.Errorf("%s = %v, want NaN", tc.name, tc.got)
		}
	}
}

// TestRhoHalvingUnknownModel: a HalvingModel other than Literal and
// MedianAll was priced as Literal.
func TestRhoHalvingUnknownModel(t *testing.T) {
	info := AppInfo{Budget: 10, AppDemandMax: 1, JobDemandMax: 1, ClusterGPUs: 1, Contention: 1}
	app := Phases{{{ItersRemaining: 10, IterTime: 1}, {ItersRemaining: 10, IterTime: 3}}}
	for _, m := range []HalvingModel{-1, 2, 7} {
		_, err := RhoHalving(app, info, Placement{GPUs: 2}, m)
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.Field != "HalvingModel" || !errors.Is(err, gpufair.ErrValue) {
			t.Errorf("RhoHalving(model %d) error = %v, want an input error on HalvingModel wrapping ErrValue", m, err)
		}
	}
}

// TestBidsBadInput: Bids called a nil price (and panicked), took a
// negative Demand as no limit, and, like NewTable, took a rho so small
// that its reciprocal overflows, making a table BidTable.Validate refuses.
// BidTable.Validate indexed past the servers of an offer whose Free was
// longer, and Offer.Validate dropped the cluster's error (errors.Is
// topology.ErrInvalid failed).
func TestBidsBadInput(t *testing.T) {
	ctx := context.Background()
	c := topology.Cluster{Servers: []topology.Server{{Name: "a", Type: "k80", GPUs: 2}}}
	o := Offer{Cluster: c, Free: []int{2}}
	price := func(counts []int) (float64, error) { return 10 / float64(1+counts[0]), nil }
	tiny := func([]int) (float64, error) { return 5e-324, nil }
	rhoTiny := func(Placement) (float64, error) { return 5e-324, nil }
	for _, tc := range []struct {
		name    string
		call    func() error
		field   string
		wantErr error
	}{
		{"nil price", func() error { _, err := Bids(ctx, o, nil, nil, nil); return err }, "price", gpufair.ErrEmpty},
		{"negative Demand", func() error { _, err := Bids(ctx, o, nil, price, &BidSettings{Demand: -3}); return err }, "BidSettings.Demand", gpufair.ErrValue},
		{"negative Alternatives", func() error { _, err := Bids(ctx, o, nil, price, &BidSettings{Alternatives: -1}); return err }, "BidSettings.Alternatives", gpufair.ErrValue},
		{"negative MaxRows", func() error { _, err := Bids(ctx, o, nil, price, &BidSettings{MaxRows: -1}); return err }, "BidSettings.MaxRows", gpufair.ErrValue},
		{"Bids, tiny rho", func() error { _, err := Bids(ctx, o, nil, tiny, nil); return err }, "CountsFunc", gpufair.ErrValue},
		{"NewTable, tiny rho", func() error { _, err := NewTable(o, nil, rhoTiny, nil); return err }, "RhoFunc", gpufair.ErrValue},
		{"negative MaxGPUs", func() error {
			_, err := NewTable(o, nil, func(Placement) (float64, error) { return 1, nil }, &TableSettings{MaxGPUs: -1})
			return err
		}, "TableSettings.MaxGPUs", gpufair.ErrValue},
		{"Validate, Free longer than servers", func() error {
			return BidTable{RhoNone: 1, Rows: []Row{{Counts: []int{0, 3}, Rho: 0.5}}}.Validate(Offer{Cluster: c, Free: []int{2, 2}}, "x")
		}, "Offer.Free", gpufair.ErrShape},
		{"Validate, bad cluster", func() error { return BidTable{RhoNone: 1}.Validate(Offer{}, "x") }, "Offer.Cluster", topology.ErrInvalid},
	} {
		err := tc.call()
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.Field != tc.field || !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: error = %v, want an input error on %s wrapping %v", tc.name, err, tc.field, tc.wantErr)
		}
	}
	// A rho whose reciprocal is finite, however small, is taken.
	least := 1e-308
	tab, err := NewTable(o, nil, func(Placement) (float64, error) { return least, nil }, nil)
	if err != nil || tab.Validate(o, "x") != nil {
		t.Errorf("NewTable(rho %v) = %+v, %v; want a valid table", least, tab, err)
	}
}

// TestSortRowsNaN: with a NaN rho, which compares neither below nor
// above another, the order SortRows gave depended on the order before.
func TestSortRowsNaN(t *testing.T) {
	rows := []Row{{Counts: []int{1}, Rho: math.NaN()}, {Counts: []int{2}, Rho: 1}, {Counts: []int{3}, Rho: 0.5}}
	var want []Row
	for _, perm := range [][]int{{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}} {
		in := make([]Row, len(rows))
		for i, k := range perm {
			in[i] = rows[k]
		}
		SortRows(in)
		if want == nil {
			want = in
			continue
		}
		for i := range in {
			if in[i].Counts[0] != want[i].Counts[0] {
				t.Fatalf("SortRows(order %v) = %v, want %v", perm, in, want)
			}
		}
	}
}
