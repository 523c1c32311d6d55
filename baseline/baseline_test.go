package baseline_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// oneGPU is a cluster of one K80.
var oneGPU = topology.Cluster{Servers: []topology.Server{{Name: "k80-0", Type: "k80", GPUs: 1}}}

func job(id string, gang int, rates ...float64) alloc.Job {
	return alloc.Job{ID: alloc.JobID(id), Gang: gang, Weight: 1, Rates: rates}
}

// runs drives s for n rounds of 360 s from 0, applying arrivals[r] before
// round r, and returns the jobs each round ran.
func runs(t *testing.T, s round.Scheduler, n int, arrivals map[int][]round.Event) [][]alloc.JobID {
	t.Helper()
	var out [][]alloc.JobID
	for r := range n {
		if err := s.Apply(arrivals[r]...); err != nil {
			t.Fatal(err)
		}
		d, err := s.Decide(context.Background(), float64(r)*360)
		if err != nil {
			t.Fatal(err)
		}
		var ids []alloc.JobID
		for _, p := range d.Placements {
			ids = append(ids, p.Jobs...)
		}
		out = append(out, ids)
	}
	return out
}

// Two jobs on one GPU, one threshold of one round's service: without
// promotion, the job that reaches the last queue first keeps the GPU (FIFO
// within a queue) and the other starves; with PromoteKnob 1, a job that has
// waited as long as it ran goes back to the first queue, and they
// alternate.
func TestTiresiasPromotion(t *testing.T) {
	both := map[int][]round.Event{0: {round.Arrive(0, job("a", 1, 1), 0), round.Arrive(0, job("b", 1, 1), 0)}}
	for _, tc := range []struct {
		knob      float64
		want      [][]alloc.JobID
		wantQueue map[alloc.JobID]int
	}{
		{0, [][]alloc.JobID{{"a"}, {"b"}, {"a"}, {"a"}, {"a"}}, map[alloc.JobID]int{"a": 1, "b": 1}},
		{1, [][]alloc.JobID{{"a"}, {"b"}, {"a"}, {"b"}, {"a"}}, map[alloc.JobID]int{"a": 0, "b": 1}},
	} {
		s, err := baseline.NewTiresias(oneGPU, []topology.GPUType{"k80"}, &baseline.TiresiasSettings{Thresholds: []float64{360}, PromoteKnob: tc.knob})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, runs(t, s, 5, both)); diff != "" {
			t.Errorf("knob %v: jobs run per round (-want +got):\n%s", tc.knob, diff)
		}
		for id, q := range tc.wantQueue {
			if got, _ := s.Queue(id); got != q {
				t.Errorf("knob %v: job %s in queue %d, want %d", tc.knob, id, got, q)
			}
		}
	}
}

// DefaultThresholds are 3,250 and 7,200 GPU-seconds, a fresh copy each
// call, and a Tiresias without thresholds uses them: a 1-GPU job running
// every 360 s round has 3,240 GPU-seconds after 9 rounds (queue 0), 3,600
// after 10 (queue 1), 6,840 after 19 (still 1) and 7,200 after 20 (2).
func TestTiresiasDefaultThresholds(t *testing.T) {
	th := baseline.DefaultThresholds()
	if diff := cmp.Diff([]float64{3250, 7200}, th); diff != "" {
		t.Fatalf("DefaultThresholds() (-want +got):\n%s", diff)
	}
	th[0] = 1
	if got := baseline.DefaultThresholds(); got[0] != 3250 {
		t.Errorf("DefaultThresholds() = %v after a caller changed its copy", got)
	}
	s, err := baseline.NewTiresias(oneGPU, []topology.GPUType{"k80"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, job("a", 1, 1), 0)); err != nil {
		t.Fatal(err)
	}
	want := map[int]int{9: 0, 10: 1, 19: 1, 20: 2, 21: 2}
	for r := range 22 {
		d, err := s.Decide(context.Background(), float64(r)*baseline.DefaultRound)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Placements) != 1 {
			t.Fatalf("round %d: %d placements for one job on one GPU", r, len(d.Placements))
		}
		if w, ok := want[r]; ok {
			if q, _ := s.Queue("a"); q != w {
				t.Errorf("round %d (%v GPU-seconds): queue %d, want %d", r, float64(r)*baseline.DefaultRound, q, w)
			}
		}
	}
}

// Gandiva time-slices two jobs on one GPU; as Themis implemented it,
// without time slicing, the first keeps the GPU.
func TestGandivaTimeSlicing(t *testing.T) {
	both := map[int][]round.Event{0: {round.Arrive(0, job("a", 1, 1), 0), round.Arrive(0, job("b", 1, 1), 0)}}
	for _, tc := range []struct {
		noSlicing bool
		want      [][]alloc.JobID
	}{
		{false, [][]alloc.JobID{{"a"}, {"b"}, {"a"}, {"b"}}},
		{true, [][]alloc.JobID{{"a"}, {"a"}, {"a"}, {"a"}}},
	} {
		s, err := baseline.NewGandiva(oneGPU, []topology.GPUType{"k80"}, &baseline.GandivaSettings{NoTimeSlicing: tc.noSlicing})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, runs(t, s, 4, both)); diff != "" {
			t.Errorf("NoTimeSlicing %v: jobs run per round (-want +got):\n%s", tc.noSlicing, diff)
		}
	}
}

// Gandiva packs by preference: the gang that loses most when spread gets
// the one server it fits on whole, whatever the arrival order; when that
// server comes free, a gang left spread migrates onto it.
func TestGandivaPacking(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "s0", Type: "v100", GPUs: 2}, {Name: "s1", Type: "v100", GPUs: 2}, {Name: "s2", Type: "v100", GPUs: 4},
	}}
	spread := map[alloc.JobID][]float64{"h": {1}, "g": {1.5}} // rates 3: preferences 3 and 2
	s, err := baseline.NewGandiva(c, []topology.GPUType{"v100"}, &baseline.GandivaSettings{Spread: func(id alloc.JobID) []float64 { return spread[id] }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(round.Arrive(0, job("g", 4, 3), 0), round.Arrive(0, job("h", 4, 3), 0)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := s.Decide(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	servers := func(d *round.Decision) map[alloc.JobID]int {
		out := map[alloc.JobID]int{}
		for _, p := range d.Placements {
			out[p.Jobs[0]] = topology.ServersUsed(p.GPUs)
		}
		return out
	}
	if diff := cmp.Diff(map[alloc.JobID]int{"h": 1, "g": 2}, servers(d)); diff != "" {
		t.Errorf("round 0: servers per gang (-want +got):\n%s", diff)
	}
	if err := s.Apply(round.Depart(100, "h")); err != nil {
		t.Fatal(err)
	}
	if d, err = s.Decide(ctx, 360); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[alloc.JobID]int{"g": 1}, servers(d)); diff != "" {
		t.Errorf("round 1: servers per gang (-want +got):\n%s", diff)
	}
	if p := d.Placements[0]; p.Renewed || !p.Restart {
		t.Errorf("the migrated gang: renewed %v, restart %v; want false, true", p.Renewed, p.Restart)
	}
}

// SRTF is not starvation-free: a long job waits as long as shorter jobs
// keep arriving.
func TestSRTFStarves(t *testing.T) {
	s, err := baseline.NewSRTF(oneGPU, []topology.GPUType{"k80"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	arrivals := map[int][]round.Event{0: {round.Arrive(0, job("long", 1, 1), 1e6)}}
	for r := range 5 {
		id := alloc.JobID(rune('a' + r))
		arrivals[r] = append(arrivals[r], round.Arrive(float64(r)*360, job(string(id), 1, 1), 300))
		if r > 0 {
			arrivals[r] = append([]round.Event{round.Depart(float64(r-1)*360+300, alloc.JobID(rune('a'+r-1)))}, arrivals[r]...)
		}
	}
	want := [][]alloc.JobID{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}
	if diff := cmp.Diff(want, runs(t, s, 5, arrivals)); diff != "" {
		t.Errorf("jobs run per round (-want +got):\n%s", diff)
	}
}

func TestOptimusMarginalGain(t *testing.T) {
	j := func(work, done float64, received ...float64) *round.Job {
		return &round.Job{Job: alloc.Job{ID: "x", Gang: 2, Weight: 1, Rates: []float64{1, 4, 0}}, Work: work, Done: done, Received: received}
	}
	for _, tc := range []struct {
		name string
		j    *round.Job
		k    int
		want float64
	}{
		// 200 s on K80 over 400 s: speed 0.5; 800 steps left.
		{"to V100", j(1000, 200, 200, 0, 0), 1, (800/0.5 - 800.0/4) / 2},
		{"to K80", j(1000, 200, 200, 0, 0), 0, (800/0.5 - 800.0/1) / 2},
		{"unknown work: as much again as done", j(0, 200, 200, 0, 0), 1, (200/0.5 - 200.0/4) / 2},
		{"never ran", j(1000, 0, 0, 0, 0), 1, math.Inf(1)},
		{"no rate", j(1000, 200, 200, 0, 0), 2, math.Inf(-1)},
		// A type out of range indexed past the rates and panicked.
		{"type out of range", j(1000, 200, 200, 0, 0), 3, math.Inf(-1)},
		{"negative type", j(1000, 200, 200, 0, 0), -1, math.Inf(-1)},
	} {
		if got := baseline.MarginalGain(tc.j, tc.k, 400); got != tc.want {
			t.Errorf("%s: MarginalGain = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Remaining times beyond float64's range (work near the largest float64,
// rates near the smallest, both finite and accepted by the ledger) made
// MarginalGain NaN (+Inf − +Inf), and a speed that overflowed read as an
// instant finish, a gain of the wrong sign; the gain is now worked out in
// extended range. So did a gang of 0 (0/0), and a Received longer than the
// rates panicked.
func TestOptimusMarginalGainExtreme(t *testing.T) {
	j := func(work float64, rates []float64, received ...float64) *round.Job {
		return &round.Job{Job: alloc.Job{ID: "x", Gang: 1, Weight: 1, Rates: rates}, Work: work, Received: received}
	}
	for _, tc := range []struct {
		name string
		j    *round.Job
		k    int
		want float64
	}{
		// Speed 1e-300 all along, 1e608 s left: nothing to gain on k80,
		// 5e607 s (beyond float64) on the type twice as fast.
		{"same speed, time beyond range", j(1e308, []float64{1e-300, 2e-300}, 720, 0), 0, 0},
		{"faster, gain beyond range", j(1e308, []float64{1e-300, 2e-300}, 720, 0), 1, math.Inf(1)},
		// Half the time at 1e308: speed 5e307, 2 s left at it.
		{"speed overflows, to the same type", j(1e308, []float64{1e308, 1e307}, 360, 0), 0, 2 - 1},
		{"speed overflows, to a slower type", j(1e308, []float64{1e308, 1e307}, 360, 0), 1, 2 - 10},
		{"received past the rates", j(1000, []float64{1, 4}, 360, 0, 360), 1, (1000/0.5 - 1000.0/4)},
		{"gang 0", &round.Job{Job: alloc.Job{ID: "x", Gang: 0, Weight: 1, Rates: []float64{1, 1}}, Work: 1000, Done: 1000, Received: []float64{360, 0}}, 0, math.Inf(-1)},
	} {
		got := baseline.MarginalGain(tc.j, tc.k, 720)
		if !(got == tc.want || math.Abs(got-tc.want) <= 1e-12*math.Abs(tc.want)) {
			t.Errorf("%s: MarginalGain = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A measured loss curve replaces SLAQ's default: with a curve on which the
// long job's loss falls fastest, it runs first.
func TestSLAQLossCurve(t *testing.T) {
	evs := map[int][]round.Event{0: {round.Arrive(0, job("short", 1, 1), 1000), round.Arrive(0, job("long", 1, 1), 1e5)}}
	def, err := baseline.NewSLAQ(oneGPU, []topology.GPUType{"k80"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]alloc.JobID{{"short"}}, runs(t, def, 1, evs)); diff != "" {
		t.Errorf("default curve (-want +got):\n%s", diff)
	}
	measured, err := baseline.NewSLAQ(oneGPU, []topology.GPUType{"k80"}, &baseline.SLAQSettings{Loss: func(j *round.Job, done float64) float64 {
		if j.ID == "long" {
			return 1 / (1 + done)
		}
		return 1 / (1 + done/1e4)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]alloc.JobID{{"long"}}, runs(t, measured, 1, evs)); diff != "" {
		t.Errorf("measured curve (-want +got):\n%s", diff)
	}
}

// SRTF ranks by remaining time, SRSF by remaining service: a 2-GPU gang
// with 100 s left beats a 1-GPU job with 150 s left under SRTF, and loses
// to it under SRSF (200 GPU-seconds against 150).
func TestSRTFAgainstSRSF(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k80-0", Type: "k80", GPUs: 2}}}
	evs := map[int][]round.Event{0: {round.Arrive(0, job("wide", 2, 1), 100), round.Arrive(0, job("narrow", 1, 1), 150)}}
	for _, tc := range []struct {
		service bool
		want    [][]alloc.JobID
	}{
		{false, [][]alloc.JobID{{"wide"}}},
		{true, [][]alloc.JobID{{"narrow"}}},
	} {
		s, err := baseline.NewSRTF(c, []topology.GPUType{"k80"}, &baseline.SRTFSettings{Service: tc.service})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, runs(t, s, 1, evs)); diff != "" {
			t.Errorf("%s: jobs run (-want +got):\n%s", s.Name(), diff)
		}
	}
}

// A job of known work whose remaining time (or, under SRSF, remaining
// service) overflowed float64 got the key +Inf, tied with the jobs of
// unknown work, and one of those that arrived first ran before it; two
// known jobs beyond the range tied on arrival order too. Known work now
// always ranks first, and remaining times beyond the range in order.
// Every gang takes both GPUs, so one job runs.
func TestSRTFRemainingBeyondRange(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "k80-0", Type: "k80", GPUs: 2}}}
	for _, tc := range []struct {
		name       string
		a, b       float64 // total work of jobs a (arriving first) and b; 0 is unknown
		rateA      float64
		rateB      float64
		srtf, srsf alloc.JobID
	}{
		{"time beyond range against unknown work", 0, 1e300, 1e-10, 1e-10, "b", "b"},
		{"times beyond range", 1e301, 1e300, 1e-10, 1e-10, "b", "b"},
		{"service beyond range against unknown work", 0, 1e308, 1, 1, "b", "b"},
		{"services beyond range", 1.7e308, 1.6e308, 1, 1, "b", "b"},
		{"in range against beyond", 1e300, 8e307, 1e-10, 1, "b", "b"},
		{"in range", 1e10, 2e10, 1, 1, "a", "a"},
	} {
		evs := map[int][]round.Event{0: {round.Arrive(0, job("a", 2, tc.rateA), tc.a), round.Arrive(0, job("b", 2, tc.rateB), tc.b)}}
		for _, service := range []bool{false, true} {
			s, err := baseline.NewSRTF(c, []topology.GPUType{"k80"}, &baseline.SRTFSettings{Service: service})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.srtf
			if service {
				want = tc.srsf
			}
			if diff := cmp.Diff([][]alloc.JobID{{want}}, runs(t, s, 1, evs)); diff != "" {
				t.Errorf("%s: %s: jobs run (-want +got):\n%s", s.Name(), tc.name, diff)
			}
		}
	}
}

// A job of unknown work whose assumed work (a round's work on its fastest
// type) overflowed float64 got β = 0 and a predicted loss drop of 0 where
// it is 1 − Converged; it lost the GPU to a known job whose loss falls by
// 0.98. With Converged one ulp below 1 and total work near the largest
// float64, β underflowed to 0 too, and a job that finishes in the round
// (a drop of about 2.2e-16) tied with one that barely moves.
func TestSLAQWorkBeyondRange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		converged float64
		a, b      float64 // total work of jobs a (arriving first) and b; 0 is unknown
		rateA     float64
		rateB     float64
		want      alloc.JobID
	}{
		// a: half done in a round, a drop of 1 − 1/(1 + 99/2) ≈ 0.98; b:
		// 1 − 0.01 = 0.99.
		{"assumed work beyond range", 0, 2 * 1e300 * baseline.DefaultRound, 0, 1e300, 1e306, "b"},
		{"β underflows", 1 - 0x1p-52, 1.5e308, 1e308, 1e296, 1e306, "b"},
		{"in range", 0, 2 * baseline.DefaultRound, 0, 1, 2, "b"},
	} {
		s, err := baseline.NewSLAQ(oneGPU, []topology.GPUType{"k80"}, &baseline.SLAQSettings{Converged: tc.converged})
		if err != nil {
			t.Fatal(err)
		}
		evs := map[int][]round.Event{0: {round.Arrive(0, job("a", 1, tc.rateA), tc.a), round.Arrive(0, job("b", 1, tc.rateB), tc.b)}}
		if diff := cmp.Diff([][]alloc.JobID{{tc.want}}, runs(t, s, 1, evs)); diff != "" {
			t.Errorf("%s: jobs run (-want +got):\n%s", tc.name, diff)
		}
	}
}

// A job of unknown work measured at rate 0 on every type cannot run; its
// assumed work, twice what it did or a round at its best rate, is 0, which
// the loss curve cannot price, and SLAQ refused every decision while the job
// stayed (FuzzEvents). It is left out, and the others run.
func TestSLAQJobThatCannotRun(t *testing.T) {
	s, err := baseline.NewSLAQ(oneGPU, []topology.GPUType{"k80"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	evs := map[int][]round.Event{0: {
		round.Arrive(0, job("a", 1, 3), 0), round.Measure(0, "a", []float64{0}),
		round.Arrive(0, job("b", 1, 1), 0),
	}}
	if diff := cmp.Diff([][]alloc.JobID{{"b"}, {"b"}}, runs(t, s, 2, evs)); diff != "" {
		t.Errorf("jobs run (-want +got):\n%s", diff)
	}
}

// Gandiva refuses a Spread result of the wrong length or with a NaN,
// negative or infinite rate, naming the setting and the job, and its next
// decision is as if it had not been asked: such results were taken as no
// preference.
func TestGandivaRefusesBadSpread(t *testing.T) {
	c := topology.Cluster{Servers: []topology.Server{{Name: "s0", Type: "k80", GPUs: 2}, {Name: "s1", Type: "v100", GPUs: 2}}}
	types := []topology.GPUType{"k80", "v100"}
	for _, tc := range []struct {
		name   string
		spread []float64
		want   error
	}{
		{"short", []float64{1}, gpufair.ErrShape},
		{"long", []float64{1, 1, 1}, gpufair.ErrShape},
		{"NaN", []float64{math.NaN(), 1}, gpufair.ErrValue},
		{"negative", []float64{-1, 1}, gpufair.ErrValue},
		{"infinite", []float64{1, math.Inf(1)}, gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := true
			s, err := baseline.NewGandiva(c, types, &baseline.GandivaSettings{Spread: func(id alloc.JobID) []float64 {
				if id == "b" && bad {
					return tc.spread
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Apply(round.Arrive(0, job("a", 2, 1, 2), 0), round.Arrive(0, job("b", 2, 1, 3), 0)); err != nil {
				t.Fatal(err)
			}
			_, err = s.Decide(context.Background(), 0)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != "GandivaSettings.Spread" || ie.ID != "b" {
				t.Fatalf("Decide() error = %v, want an *InputError on GandivaSettings.Spread[b] wrapping %v", err, tc.want)
			}
			bad = false
			if _, err := s.Decide(context.Background(), 0); err != nil {
				t.Errorf("Decide() after a refused round: %v", err)
			}
		})
	}
}

// MarginalGain of a nil job is -Inf, as for a job that cannot gain (it
// panicked).
func TestMarginalGainNil(t *testing.T) {
	if g := baseline.MarginalGain(nil, 0, 0); !math.IsInf(g, -1) {
		t.Errorf("MarginalGain(nil, 0, 0) = %v, want -Inf", g)
	}
}
