package ftf

import (
	"errors"
	"math"
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
// optimum wherever the greedy runs.
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
		for k := range jobs {
			jobs[k] = JobInfo{ItersRemaining: work[k], IterTime: 1, Slowdown: topology.Slowdown{slow[k], slow[k], slow[k]}}
		}
		want := PhaseTime(jobs, Placement{GPUs: g}, demand)
		got := levelMakespan(work, slow, g, demand)
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
