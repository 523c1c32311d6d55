package ftf

import (
	"math"
	"testing"

	"github.com/gpufair/gpufair/topology"
)

// ratTol is the relative slack for comparing rho with an exact fraction.
const ratTol = 1e-12

// table3App is section 4.3.3's app: 4 jobs at 80, 100, 100 and 120 s per
// iteration, phases of 8, 16 and 36 iterations, budget 10,000 GPU-seconds,
// job_demand_max 8, S(G) = 1, on a 16-GPU cluster shared by 4 apps.
func table3App() (Phases, AppInfo) {
	one := topology.Slowdown{1, 1, 1}
	p := Phases{
		{
			{ItersRemaining: 8, IterTime: 80, Slowdown: one}, {ItersRemaining: 8, IterTime: 100, Slowdown: one},
			{ItersRemaining: 8, IterTime: 100, Slowdown: one}, {ItersRemaining: 8, IterTime: 120, Slowdown: one},
		},
		{{ItersRemaining: 16, IterTime: 0, Slowdown: one}, {ItersRemaining: 16, IterTime: 0, Slowdown: one}},
		{{ItersRemaining: 36, IterTime: 0, Slowdown: one}},
	}
	return p, AppInfo{Budget: 10000, AppDemandMax: 16, JobDemandMax: 8, ClusterGPUs: 16, Contention: 4}
}

func TestTable3(t *testing.T) {
	app, info := table3App()
	if got := info.Independent(); got != 2500 {
		t.Fatalf("T_id = %v, want 2500", got)
	}
	for _, tc := range []struct {
		gpus         int
		literal, med float64 // exact equation 2 (ERRATA.md), and the printed median model
		reason       string
	}{
		{1, 4, 4, "everything serial on one GPU: 3200+3200+3600"},
		{2, 2, 2, "section 4.3.3: 1600+1600+1800"},
		{4, 133.0 / 125, 1, "960+800+900; the paper prints the median model's 1"},
		{8, 133.0 / 250, 0.5, "480+400+450; printed 0.5"},
		{16, 259.0 / 750, 0.34, "(80·8/3)+200+450, jobs on 3,4,4,5 GPUs; printed 0.34"},
	} {
		p := Placement{GPUs: tc.gpus}
		got, err := RhoHalving(app, info, p, Literal)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.literal) > ratTol*tc.literal {
			t.Errorf("%d GPUs: Literal rho = %.15g, want %.15g (%s)", tc.gpus, got, tc.literal, tc.reason)
		}
		got, err = RhoHalving(app, info, p, MedianAll)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-tc.med) > ratTol*tc.med {
			t.Errorf("%d GPUs: MedianAll rho = %.15g, want %.15g", tc.gpus, got, tc.med)
		}
	}
	if got, _ := RhoHalving(app, info, Placement{}, Literal); !math.IsInf(got, 1) {
		t.Errorf("0 GPUs: rho = %v, want +Inf (rho_old of an app holding nothing)", got)
	}
}

// TestSection433Revision is the revision of section 4.3.3: when the 120 s
// and 100 s jobs survive, phase 2 takes 120·16 = 1920 s on 2 GPUs (ERRATA.md:
// the paper prints 3200) and phase 3 takes 120·36/2 = 2160 s.
func TestSection433Revision(t *testing.T) {
	one := topology.Slowdown{1, 1, 1}
	p := Placement{GPUs: 2}
	if got := PhaseTime([]JobInfo{{ItersRemaining: 16, IterTime: 120, Slowdown: one}, {ItersRemaining: 16, IterTime: 100, Slowdown: one}}, p, 8); got != 1920 {
		t.Errorf("T_sh(2) = %v, want 1920", got)
	}
	if got := PhaseTime([]JobInfo{{ItersRemaining: 36, IterTime: 120, Slowdown: one}}, p, 8); got != 2160 {
		t.Errorf("T_sh(3) = %v, want 2160", got)
	}
}

// TestPhaseTimePerJobDemand: equation 2's job_demand_max is each job's
// (iter_time(G) = iter_time_serial·S(G) / min(‖G‖₁, job_demand_max)), so
// a job with its own JobInfo.DemandMax gets no more GPUs than that, however
// many the phase's largest job could use; 0 means demandMax. Times are
// worked by hand from the greedy (one GPU each, then each further GPU to the
// job finishing last).
func TestPhaseTimePerJobDemand(t *testing.T) {
	one := topology.Slowdown{1, 1, 1}
	wide := topology.Slowdown{1.5, 1.5, 1.5}
	// Work 600 (S 1.5), 800 and 90 s on 8 GPUs, demandMax 4.
	mixed := func(caps ...int) []JobInfo {
		return []JobInfo{
			{ItersRemaining: 600, IterTime: 1, Slowdown: wide, DemandMax: caps[0]},
			{ItersRemaining: 800, IterTime: 1, Slowdown: one, DemandMax: caps[1]},
			{ItersRemaining: 90, IterTime: 1, Slowdown: one, DemandMax: caps[2]},
		}
	}
	for _, tc := range []struct {
		name   string
		jobs   []JobInfo
		p      Placement
		demand int
		want   float64
		reason string
	}{
		{"mixed caps", mixed(2, 0, 1), Placement{GPUs: 8}, 4, 450,
			"800 → 400 on 2; 600 → 600·1.5/2 = 450 on 2, its cap, and it finishes last"},
		{"no caps", mixed(0, 0, 0), Placement{GPUs: 8}, 4, 800.0 / 3,
			"600 on 4 (225), 800 on 3 (800/3), 90 on 1: as before per-job caps"},
		{"caps above demandMax", mixed(10, 4, 9), Placement{GPUs: 8}, 4, 800.0 / 3,
			"a cap above demandMax counts as demandMax: as with no caps"},
		{"a 1-GPU job beside a 2-GPU job", []JobInfo{
			{ItersRemaining: 1000, IterTime: 1, Slowdown: one, DemandMax: 1},
			{ItersRemaining: 100, IterTime: 1, Slowdown: one, DemandMax: 2},
		}, Placement{GPUs: 3}, 2, 1000,
			"the 1-GPU job runs serially (1000 s), not on 2 GPUs (500 s)"},
		{"level search", []JobInfo{
			{ItersRemaining: 1000, IterTime: 1, Slowdown: one, DemandMax: 1},
			{ItersRemaining: 300, IterTime: 1, Slowdown: one},
		}, Placement{GPUs: 1 << 20}, 1 << 20, 1000,
			"past greedyGPUs the level search keeps the 1-GPU job on one GPU"},
		{"fewer GPUs than jobs", mixed(2, 0, 1), Placement{GPUs: 2}, 4, 800,
			"jobs run serially on single GPUs, caps or not: {800}, {600, 90}"},
	} {
		got := PhaseTime(tc.jobs, tc.p, tc.demand)
		if math.Abs(got-tc.want) > ratTol*tc.want {
			t.Errorf("%s: PhaseTime() = %.15g, want %.15g (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}

func TestSerialMakespanBruteForce(t *testing.T) {
	work := []float64{7, 5, 5, 4, 4, 3, 3, 3, 2}
	for g := 2; g < len(work); g++ {
		best := math.Inf(1)
		var rec2 func(i int, load []float64)
		rec2 = func(i int, load []float64) {
			if i == len(work) {
				m := 0.0
				for _, l := range load {
					m = max(m, l)
				}
				best = min(best, m)
				return
			}
			for k := 0; k < g; k++ {
				load[k] += work[i]
				rec2(i+1, load)
				load[k] -= work[i]
			}
		}
		if g <= 4 {
			rec2(0, make([]float64, g))
			if got := serialMakespan(work, g); got != best {
				t.Errorf("g=%d: serialMakespan = %v, brute force %v", g, got, best)
			}
		}
	}
}

func TestSingleJobEquation1(t *testing.T) {
	j := SingleJob{Elapsed: 100, ItersLeft: 50, ItersTotal: 100, IterTime: 4, DemandMax: 4, ClusterGPUs: 16, Contention: 2}
	// T_id = 100·4/min(16,4)·2 = 200; T_sh(2 GPUs across racks) = 100 + 50·4·1.3/2 = 230.
	got, err := j.Rho(Placement{GPUs: 2, Locality: topology.CrossRack})
	if err != nil {
		t.Fatal(err)
	}
	if want := 230.0 / 200; math.Abs(got-want) > ratTol {
		t.Errorf("rho = %v, want %v", got, want)
	}
	// More GPUs than the demand do not help.
	a, _ := j.Rho(Placement{GPUs: 4})
	b, _ := j.Rho(Placement{GPUs: 64})
	if a != b {
		t.Errorf("rho(4) = %v, rho(64) = %v, want equal beyond DemandMax", a, b)
	}
}
