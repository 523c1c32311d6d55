package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// tol is the absolute slack of hand-computed times and ratios.
const tol = 1e-9

// TestRunByHand follows two jobs under FIFO on one server of 2 GPUs with
// 10-second rounds. A (1 GPU, 15 steps at 1/s) runs in rounds 0 and 1 and
// finishes at 15; B (2 GPUs, 10 steps at 2/s) arrives at 3, finds one GPU
// free in round 1, runs in round 2 and finishes at 25.
func TestRunByHand(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "B", Gang: 2, Rates: []float64{2}}, Arrival: 3, Steps: 10},
		{Job: alloc.Job{ID: "A", Gang: 1, Rates: []float64{1}}, Arrival: 0, Steps: 15},
	}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2})
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10})
	if err != nil {
		t.Fatal(err)
	}
	// n(t) is 1 on [0,3), 2 on [3,15), 1 on [15,25).
	nA, nB := (3+2*12)/15.0, (2*12+10)/22.0
	isoA := 15.0                      // x = 2/(1.8·1) > 1, capped: all the time at 1 step/s
	isoB := 10 / (2 / (nB * 2) * 2.0) // x = 2/(N̄·2) of the time at 2 steps/s
	want := []JobResult{
		{ID: "A", Owner: "A", Gang: 1, Arrival: 0, Start: 0, Finish: 15, Steps: 15, Done: 15, Rounds: 2, GPUSeconds: 15, Contention: nA, Isolated: isoA, JCT: 15, Rho: 15 / isoA},
		{ID: "B", Owner: "B", Gang: 2, Arrival: 3, Start: 20, Finish: 25, Steps: 10, Done: 10, Rounds: 1, GPUSeconds: 10, Contention: nB, Isolated: isoB, JCT: 22, Rho: 22 / isoB},
	}
	if diff := cmp.Diff(want, res.Jobs, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("Run() jobs mismatch (-want +got):\n%s", diff)
	}
	s := res.Summary()
	if s.Makespan != 25 || s.GPUSeconds != 25 || math.Abs(s.Utilisation-0.5) > tol || res.Rounds != 3 {
		t.Errorf("makespan %v, GPU time %v, utilisation %v, rounds %d; want 25, 25, 0.5, 3", s.Makespan, s.GPUSeconds, s.Utilisation, res.Rounds)
	}
	if s.AvgJCT != 18.5 || s.MaxJCT != 22 || math.Abs(s.MaxRho-22/isoB) > tol || s.SharingIncentive != 0.5 {
		t.Errorf("summary %+v", s)
	}
}

// TestRunSpread checks that a gang whose GPUs span servers runs at its
// Spread rate, and that a job resuming on other slots pays Restart.
func TestRunSpread(t *testing.T) {
	c := servers(topology.Server{Name: "s0", Type: "a", GPUs: 1}, topology.Server{Name: "s1", Type: "a", GPUs: 1})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "j", Gang: 2, Rates: []float64{4}}, Steps: 30, Spread: []float64{2}},
	}}
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Jobs[0].Finish; math.Abs(got-15) > tol {
		t.Errorf("spread job finished at %v, want 15 (30 steps at 2/s)", got)
	}
	// A job moved to the other server every round pays Restart each time.
	w = &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "j", Gang: 1, Rates: []float64{1}}, Steps: 25}}}
	res, err = Run(context.Background(), w, c, &alternate{newFIFO(c, w.Types, 10)}, &Settings{Round: 10, Restart: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Round 0 on s0: 10 steps. Rounds 1 and 2: 3 s lost, 7 steps each.
	// Round 3: 3 s lost, the last step, finished at 30 + 3 + 1 = 34.
	if got := res.Jobs[0]; math.Abs(got.Finish-34) > tol || math.Abs(got.GPUSeconds-34) > tol || got.Restarts != 3 {
		t.Errorf("restarting job finished at %v with %v GPU-seconds and %d restarts, want 34, 34 and 3", got.Finish, got.GPUSeconds, got.Restarts)
	}
	if s := res.Summary(); s.Restarts != 3 || math.Abs(s.RestartShare-0.75) > tol || s.MaxRestartShare != 1 {
		t.Errorf("summary: %d restarts, mean share %v, max %v; want 3, 0.75, 1", s.Restarts, s.RestartShare, s.MaxRestartShare)
	}
}

// alternate runs the first job in the system on server (round mod 2),
// slot 0.
type alternate struct{ *fifo }

func (a *alternate) Decide(_ context.Context, now float64) (*round.Decision, error) {
	if err := a.l.Begin(now); err != nil {
		return nil, err
	}
	j := a.l.Jobs()[0]
	d := &round.Decision{Start: now, End: now + a.L, Placements: []round.Placement{
		{Jobs: []alloc.JobID{j.ID}, Type: "a", GPUs: []topology.GPU{{Server: a.l.Rounds() % 2}}},
	}}
	return d, a.l.Commit(d)
}

// TestRunSkipsIdleTime checks that rounds without jobs cost nothing: a job
// arriving after a million seconds of an empty cluster is simulated in one
// round, starting at the first round boundary after its arrival.
func TestRunSkipsIdleTime(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 1},
		{Job: alloc.Job{ID: "y", Gang: 1, Rates: []float64{1}}, Arrival: 1e6 + 1, Steps: 1},
	}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rounds != 2 || res.Jobs[1].Start != 1e6+10 || res.Jobs[1].Finish != 1e6+11 {
		t.Errorf("rounds %d, y ran [%v, %v]; want 2 rounds, y on [1000010, 1000011]", res.Rounds, res.Jobs[1].Start, res.Jobs[1].Finish)
	}
}

func TestRunPlacementErrors(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2}, topology.Server{Name: "t", Type: "b", GPUs: 2})
	w := &Workload{Types: []topology.GPUType{"a", "b"}, Jobs: []Job{
		{Job: alloc.Job{ID: "one", Gang: 1, Rates: []float64{1, 1}}, Steps: 100},
		{Job: alloc.Job{ID: "two", Gang: 2, Rates: []float64{1, 1}}, Steps: 100},
		{Job: alloc.Job{ID: "late", Gang: 1, Rates: []float64{1, 1}}, Arrival: 1000, Steps: 100},
		{Job: alloc.Job{ID: "slow", Gang: 1, Rates: []float64{1, 0}}, Steps: 100},
	}}
	for _, tc := range []struct {
		name string
		p    fixed
	}{
		{"unknown job", fixed{place("a", []alloc.JobID{"nope"}, topology.GPU{})}},
		{"no jobs", fixed{place("a", nil, topology.GPU{})}},
		{"job not arrived", fixed{place("a", []alloc.JobID{"late"}, topology.GPU{})}},
		{"placed twice", fixed{place("a", []alloc.JobID{"one"}, topology.GPU{Slot: 0}), place("a", []alloc.JobID{"one"}, topology.GPU{Slot: 1})}},
		{"wrong gang", fixed{place("a", []alloc.JobID{"two"}, topology.GPU{})}},
		{"slot used twice", fixed{place("a", []alloc.JobID{"one"}, topology.GPU{}), place("a", []alloc.JobID{"two"}, topology.GPU{}, topology.GPU{Slot: 1})}},
		{"slot outside", fixed{place("a", []alloc.JobID{"one"}, topology.GPU{Server: 2})}},
		{"two types", fixed{place("a", []alloc.JobID{"two"}, topology.GPU{Server: 0}, topology.GPU{Server: 1})}},
		{"unknown type", fixed{place("z", []alloc.JobID{"one"}, topology.GPU{})}},
		{"no rate", fixed{place("b", []alloc.JobID{"slow"}, topology.GPU{Server: 1})}},
		{"renewed at once", fixed{{Jobs: []alloc.JobID{"one"}, Type: "a", GPUs: []topology.GPU{{}}, Renewed: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), w, c, tc.p, nil)
			if !errors.Is(err, ErrPlacement) {
				t.Errorf("Run() error = %v, want ErrPlacement", err)
			}
		})
	}
}

// place returns a placement of jobs on gpus of type t.
func place(t topology.GPUType, jobs []alloc.JobID, gpus ...topology.GPU) round.Placement {
	return round.Placement{Jobs: jobs, Type: t, GPUs: gpus}
}

// TestRunOffGrid runs rounds whose length is not a binary fraction, so
// that the start of round r+1, (r+1)·L, is below r·L + L in the last bit:
// a lease must end at the next round, not after it (found by rapid,
// TestRunInvariants: "round at 18.000000000000096, after an event at
// 18.0000000000001").
func TestRunOffGrid(t *testing.T) {
	const L = 1.0000000000000053
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1}, topology.Server{Name: "t", Type: "b", GPUs: 1})
	w := &Workload{Types: []topology.GPUType{"a", "b"}, Jobs: []Job{
		{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{0.1, 0}}, Steps: 3},
		{Job: alloc.Job{ID: "y", Gang: 1, Rates: []float64{0, 0.1}}, Steps: 3},
	}}
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, L), &Settings{Round: L})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary(); s.Finished != 2 || res.Rounds != 30 {
		t.Errorf("%d jobs finished in %d rounds, want 2 in 30", s.Finished, res.Rounds)
	}
}

// TestRunColocated checks that jobs placed together on the same GPUs share
// their time and GPU time: a and b (10 steps at 1/s each) run together on
// one GPU at 1/2 step/s each and finish at 20, holding 10 GPU-seconds each;
// the round counts the placement as shared.
func TestRunColocated(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "a", Gang: 1, Rates: []float64{1}}, Steps: 10},
		{Job: alloc.Job{ID: "b", Gang: 1, Rates: []float64{1}}, Steps: 10},
	}}
	res, err := Run(context.Background(), w, c, fixed{place("a", []alloc.JobID{"a", "b"}, topology.GPU{})}, &Settings{Round: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if math.Abs(j.Finish-20) > tol || math.Abs(j.GPUSeconds-10) > tol {
			t.Errorf("job %s finished at %v with %v GPU-seconds, want 20 and 10", j.ID, j.Finish, j.GPUSeconds)
		}
	}
	if len(res.History) != 1 || res.History[0].Shared != 1 || res.Summary().SharedShare != 1 {
		t.Errorf("history %+v, shared share %v; want one round with its one placement shared", res.History, res.Summary().SharedShare)
	}
}

// TestRunFailedGPU checks that a placement on a GPU that has failed is
// refused, and that a decision for another time is.
func TestRunFailedGPU(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 100}}}
	set := &Settings{Round: 10, Failures: []Failure{{GPU: topology.GPU{Slot: 0}, At: 5}}}
	_, err := Run(context.Background(), w, c, fixed{place("a", []alloc.JobID{"x"}, topology.GPU{})}, set)
	if !errors.Is(err, ErrPlacement) || !strings.Contains(err.Error(), "round 1") {
		t.Errorf("Run() error = %v, want ErrPlacement in round 1", err)
	}
	_, err = Run(context.Background(), w, c, late{}, nil)
	if !errors.Is(err, ErrPlacement) {
		t.Errorf("Run() error = %v, want ErrPlacement", err)
	}
}

// late decides for a time after the round's.
type late struct{ fixed }

func (late) Decide(_ context.Context, now float64) (*round.Decision, error) {
	return &round.Decision{Start: now + 1, End: now + 2}, nil
}

// TestRunFailures follows a job through a GPU failure under FIFO on one
// server of 2 GPUs, 10-second rounds: x (1 GPU, 30 steps at 1/s) runs on
// slot 0 from 0; slot 0 fails at 14, so x stops there (14 steps done); in
// round 2 it restarts on slot 1 (2 s lost, 8 steps done) and in round 3,
// slot 0 repaired at 25, it keeps slot 1 and finishes at 30 + 8 = 38.
func TestRunFailures(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 30}}}
	set := &Settings{Round: 10, Restart: 2, Failures: []Failure{{GPU: topology.GPU{Slot: 0}, At: 14, Repair: 25}}}
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), set)
	if err != nil {
		t.Fatal(err)
	}
	got := res.Jobs[0]
	if math.Abs(got.Finish-38) > tol || got.Restarts != 1 || got.Rounds != 4 || math.Abs(got.GPUSeconds-(14+10+8)) > tol {
		t.Errorf("x finished at %v after %d rounds, %d restarts, %v GPU-seconds; want 38, 4, 1, 32", got.Finish, got.Rounds, got.Restarts, got.GPUSeconds)
	}
	want := []RoundStat{{Start: 0, Placements: 1}, {Start: 10, Placements: 1}, {Start: 20, Placements: 1, Restarts: 1}, {Start: 30, Placements: 1}}
	if diff := cmp.Diff(want, res.History); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}
}

func TestRunStalls(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 1}}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	_, err := Run(context.Background(), w, c, fixed{}, &Settings{Stall: 5})
	if !errors.Is(err, ErrStalled) {
		t.Errorf("Run() error = %v, want ErrStalled", err)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 1}}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	if _, err := Run(ctx, w, c, newFIFO(c, w.Types, DefaultRound), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run() error = %v, want context.Canceled", err)
	}
}

// TestRunInvalidInput checks that each kind of bad input is an
// *gpufair.InputError naming the field.
func TestRunInvalidInput(t *testing.T) {
	good := func() *Workload {
		return &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 1}}}
	}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	for _, tc := range []struct {
		name      string
		edit      func(w *Workload)
		set       *Settings
		wantField string
		wantErr   error
	}{
		{"no types", func(w *Workload) { w.Types = nil }, nil, "Workload.Types", gpufair.ErrEmpty},
		{"no jobs", func(w *Workload) { w.Jobs = nil }, nil, "Workload.Jobs", gpufair.ErrEmpty},
		{"type not in cluster", func(w *Workload) { w.Types[0] = "z" }, nil, "Workload.Types", gpufair.ErrUnknownID},
		{"empty ID", func(w *Workload) { w.Jobs[0].ID = "" }, nil, "Jobs.ID", gpufair.ErrValue},
		{"duplicate ID", func(w *Workload) { w.Jobs = append(w.Jobs, w.Jobs[0]) }, nil, "Jobs.ID", gpufair.ErrDuplicate},
		{"gang 0", func(w *Workload) { w.Jobs[0].Gang = 0 }, nil, "Jobs.Gang", gpufair.ErrValue},
		{"NaN steps", func(w *Workload) { w.Jobs[0].Steps = math.NaN() }, nil, "Jobs.Steps", gpufair.ErrValue},
		{"zero steps", func(w *Workload) { w.Jobs[0].Steps = 0 }, nil, "Jobs.Steps", gpufair.ErrValue},
		{"negative arrival", func(w *Workload) { w.Jobs[0].Arrival = -1 }, nil, "Jobs.Arrival", gpufair.ErrValue},
		{"infinite weight", func(w *Workload) { w.Jobs[0].Weight = math.Inf(1) }, nil, "Jobs.Weight", gpufair.ErrValue},
		{"short rates", func(w *Workload) { w.Jobs[0].Rates = nil }, nil, "Jobs.Rates", gpufair.ErrShape},
		{"negative rate", func(w *Workload) { w.Jobs[0].Rates[0] = -1 }, nil, "Jobs.Rates", gpufair.ErrValue},
		{"runs nowhere", func(w *Workload) { w.Jobs[0].Rates[0] = 0 }, nil, "Jobs.Rates", gpufair.ErrValue},
		{"bad spread", func(w *Workload) { w.Jobs[0].Spread = []float64{1, 2} }, nil, "Jobs.Spread", gpufair.ErrShape},
		{"negative round", func(*Workload) {}, &Settings{Round: -1}, "Settings.Round", gpufair.ErrValue},
		{"NaN restart", func(*Workload) {}, &Settings{Restart: math.NaN()}, "Settings.Restart", gpufair.ErrValue},
		{"measure beyond", func(*Workload) {}, &Settings{MeasureTo: 2}, "Settings.MeasureFrom", gpufair.ErrValue},
		{"failure outside", func(*Workload) {}, &Settings{Failures: []Failure{{GPU: topology.GPU{Slot: 1}}}}, "Settings.Failures.GPU", gpufair.ErrUnknownID},
		{"repair before failure", func(*Workload) {}, &Settings{Failures: []Failure{{At: 5, Repair: 5}}}, "Settings.Failures.Repair", gpufair.ErrValue},
		{"overlapping failures", func(*Workload) {}, &Settings{Failures: []Failure{{At: 5, Repair: 9}, {At: 8}}}, "Settings.Failures.At", gpufair.ErrValue},
		{"failed for ever twice", func(*Workload) {}, &Settings{Failures: []Failure{{At: 5}, {At: 8}}}, "Settings.Failures.At", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := good()
			tc.edit(w)
			_, err := Run(context.Background(), w, c, newFIFO(c, []topology.GPUType{"a"}, DefaultRound), tc.set)
			var ie *gpufair.InputError
			if !errors.As(err, &ie) || ie.Field != tc.wantField || !errors.Is(err, tc.wantErr) {
				t.Errorf("Run() error = %v, want an InputError on %s wrapping %v", err, tc.wantField, tc.wantErr)
			}
		})
	}
}

func TestWriteCSV(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "A", Gang: 1, Rates: []float64{1}}, Kind: "k, with comma", Steps: 15},
		{Job: alloc.Job{ID: "B", Gang: 1, Rates: []float64{1}}, Arrival: 1, Steps: 5},
	}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1})
	res, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10, MeasureTo: 1, Horizon: 15})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	// A runs rounds 0 and 1 (finishing at 15); the horizon stops the run at
	// 20, before B gets a round. n(t) is 1 on [0,1), 2 on [1,15), 1 on
	// [15,20): A saw N̄ = 29/15 and would take 15·29/15 = 29 s on a 1/N̄
	// share; B saw N̄ = 33/19 over [1,20].
	want := "scheduler,job,owner,kind,gang,arrival_s,start_s,finish_s,jct_s,steps,done,rounds,restarts,gpu_seconds,contention,isolated_s,rho,measured\n" +
		"fifo,A,A,\"k, with comma\",1,0,0,15,15,15,15,2,0,15,1.9333333333333333,28.999999999999996,0.5172413793103449,true\n" +
		"fifo,B,B,,1,1,,,,5,0,0,0,0,1.736842105263158,8.684210526315791,,false\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteCSV() mismatch (-want +got):\n%s", diff)
	}
}

// TestRunElasticApp: an elastic job runs on fewer GPUs than its gang at its
// rate scaled by GPUs/gang, and holds only those GPUs; two jobs of one owner
// make one app, whose completion runs from the first arrival to the last
// finish and whose T_id is B/min(R_C, demand)·N_avg (Themis' equation 1).
func TestRunElasticApp(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 4})
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "x", Owner: "app", Gang: 4, Rates: []float64{4}, Elastic: true}, Steps: 20},
		{Job: alloc.Job{ID: "y", Owner: "app", Gang: 2, Rates: []float64{2}}, Steps: 20},
	}}
	// x on 2 of its 4 GPUs: 4·2/4 = 2 steps/s, done at 10; y on 2: 2 steps/s.
	s := fixed{place("a", []alloc.JobID{"x"}, topology.GPU{Slot: 0}, topology.GPU{Slot: 1}), place("a", []alloc.JobID{"y"}, topology.GPU{Slot: 2}, topology.GPU{Slot: 3})}
	res, err := Run(context.Background(), w, c, s, &Settings{Round: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		if j.Finish != 10 || j.GPUSeconds != 20 {
			t.Errorf("job %s: finish %v, GPU time %v; want 10, 20", j.ID, j.Finish, j.GPUSeconds)
		}
	}
	// B = 20·4/4 + 20·2/2 = 40 GPU-seconds, demand 6 > R_C = 4, N_avg = 1.
	want := []AppResult{{App: "app", Jobs: 2, Arrival: 0, Finish: 10, Work: 40, Demand: 6, Contention: 1, Isolated: 10, JCT: 10, Rho: 1, GPUSeconds: 40}}
	if diff := cmp.Diff(want, res.Apps, cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("Run() apps mismatch (-want +got):\n%s", diff)
	}
	if a := res.AppSummary(); a.Apps != 1 || a.Finished != 1 || a.MaxRho != 1 || a.SharingIncentive != 1 {
		t.Errorf("AppSummary() = %+v", a)
	}
	// A rigid job on fewer GPUs than its gang breaks the contract.
	w.Jobs[0].Elastic = false
	if _, err := Run(context.Background(), w, c, s, &Settings{Round: 100}); !errors.Is(err, ErrPlacement) {
		t.Errorf("rigid job on half its gang: error %v, want ErrPlacement", err)
	}
}

// TestRunStallsWithoutProgress: Settings.Stall counted rounds with nothing
// placed, so a scheduler placing every round a job that could not progress
// kept the run going until its context ended (stride.Gavel ran 241,878
// rounds in 2 s). Both cases stall after Stall
// rounds.
func TestRunStallsWithoutProgress(t *testing.T) {
	one := topology.GPU{}
	for _, tc := range []struct {
		name  string
		c     topology.Cluster
		w     *Workload
		s     func(c topology.Cluster, w *Workload) round.Scheduler
		round float64
		cost  float64
	}{
		{
			// Its gang fits only spread over the two servers, where it runs at 0.
			name: "spread rate 0",
			c:    servers(topology.Server{Name: "s0", Type: "a", GPUs: 1}, topology.Server{Name: "s1", Type: "a", GPUs: 1}),
			w: &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
				{Job: alloc.Job{ID: "x", Gang: 2, Rates: []float64{1}}, Spread: []float64{0}, Steps: 100},
			}},
			s: func(c topology.Cluster, w *Workload) round.Scheduler { return newFIFO(c, w.Types, 10) },
		},
		{
			// Never marked Renewed, it loses every round after its first
			// to a restart as long as the round.
			name: "restart as long as the round",
			c:    servers(topology.Server{Name: "s", Type: "a", GPUs: 1}),
			w: &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
				{Job: alloc.Job{ID: "x", Gang: 1, Rates: []float64{1}}, Steps: 100},
			}},
			s: func(topology.Cluster, *Workload) round.Scheduler {
				return script(func(float64) []round.Placement { return []round.Placement{place("a", []alloc.JobID{"x"}, one)} })
			},
			cost: 10,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			rounds := 0
			set := &Settings{Round: 10, Restart: tc.cost, Stall: 5, Progress: func(Progress) { rounds++ }}
			_, err := Run(ctx, tc.w, tc.c, tc.s(tc.c, tc.w), set)
			if !errors.Is(err, ErrStalled) || rounds > 6 {
				t.Errorf("Run() error = %v after %d rounds, want ErrStalled after at most 6", err, rounds)
			}
		})
	}
}

// TestRunTooManyRounds: a run that cannot end within maxRounds rounds is
// refused, naming Settings.Round where a round of DefaultRound would do
// and the job's field where none would. Steps of 1e300, or rounds of
// 1e-300 s with every arrival at 0, were accepted and ran for ever; with an
// arrival at 150 s the error blamed Jobs.Arrival.
func TestRunTooManyRounds(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2})
	job := func(id alloc.JobID, arrival, steps float64) Job {
		return Job{Job: alloc.Job{ID: id, Gang: 1, Rates: []float64{1}}, Arrival: arrival, Steps: steps}
	}
	for _, tc := range []struct {
		name      string
		jobs      []Job
		set       Settings
		wantField string // "" for no error
	}{
		{"round too short for the work", []Job{job("x", 0, 1000)}, Settings{Round: 1e-300}, "Settings.Round"},
		{"round too short for an arrival", []Job{job("x", 0, 1), job("y", 150, 1)}, Settings{Round: 1e-300}, "Settings.Round"},
		{"steps out of reach", []Job{job("x", 0, 1e300)}, Settings{}, "Jobs.Steps"},
		{"arrival out of reach", []Job{job("x", 0, 1), job("y", 1e22, 1)}, Settings{Horizon: 3600}, "Jobs.Arrival"},
		// A later phase arrives when the phase before finishes, which
		// the check before the run cannot know: the run stops at the
		// bound instead.
		{"later phase past the bound", []Job{
			{Job: alloc.Job{ID: "p0", Owner: "o", Gang: 1, Rates: []float64{1}}, Arrival: maxRounds - 2, Steps: 1},
			{Job: alloc.Job{ID: "p1", Owner: "o", Gang: 1, Rates: []float64{1}}, Steps: 10, Phase: 1},
		}, Settings{Round: 1}, "Settings.Round"},
		// Work the run need not finish.
		{"horizon before the work ends", []Job{job("x", 0, 1e300)}, Settings{Horizon: 3600}, ""},
		{"unmeasured job out of reach", []Job{job("a", 0, 1), job("b", 0, 1e300)}, Settings{MeasureTo: 1, StopWhenMeasured: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			w := &Workload{Types: []topology.GPUType{"a"}, Jobs: tc.jobs}
			_, err := Run(ctx, w, c, newFIFO(c, w.Types, 1), &tc.set)
			if tc.wantField == "" {
				if err != nil {
					t.Errorf("Run() error = %v, want none", err)
				}
				return
			}
			var ie *gpufair.InputError
			if !errors.As(err, &ie) || ie.Field != tc.wantField || !errors.Is(err, gpufair.ErrTooLarge) {
				t.Errorf("Run() error = %v, want an InputError on %s wrapping ErrTooLarge", err, tc.wantField)
			}
		})
	}
}

// TestRunRestartFlags: a placement of jobs none of which ran is free
// whatever its flags (one marked Restart was charged, and counted as a
// restart), and one marked both Renewed and Restart is refused (it was
// charged).
func TestRunRestartFlags(t *testing.T) {
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 2})
	s0, s1 := topology.GPU{}, topology.GPU{Slot: 1}
	job := func(id alloc.JobID, steps float64) Job {
		return Job{Job: alloc.Job{ID: id, Gang: 1, Rates: []float64{1}}, Steps: steps}
	}
	t.Run("first placement marked Restart", func(t *testing.T) {
		// 300 steps at 1/s on one slot from 0: Restart then Renewed.
		w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{job("a", 300)}}
		s := script(func(now float64) []round.Placement {
			p := place("a", []alloc.JobID{"a"}, s0)
			p.Restart, p.Renewed = now == 0, now > 0
			return []round.Placement{p}
		})
		res, err := Run(context.Background(), w, c, s, &Settings{Round: 100, Restart: 30})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Jobs[0]; math.Abs(got.Finish-300) > tol || got.Restarts != 0 || res.Summary().Restarts != 0 {
			t.Errorf("a finished at %v with %d restarts (%d in the history), want 300 and 0", got.Finish, got.Restarts, res.Summary().Restarts)
		}
	})
	t.Run("first placement shared, marked Restart", func(t *testing.T) {
		// p and q, new, share s0 for [0, 10) marked Restart: each does
		// 10·½ = 5 steps.
		w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{job("p", 100), job("q", 100)}}
		s := script(func(float64) []round.Placement {
			p := place("a", []alloc.JobID{"p", "q"}, s0)
			p.Restart = true
			return []round.Placement{p}
		})
		res, err := Run(context.Background(), w, c, s, &Settings{Round: 10, Restart: 2, Horizon: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Jobs {
			if math.Abs(j.Done-5) > tol || j.Restarts != 0 {
				t.Errorf("%s did %v steps with %d restarts, want 5 and 0", j.ID, j.Done, j.Restarts)
			}
		}
	})
	t.Run("newcomer beside a restart", func(t *testing.T) {
		// Kept as it was, so that the runs of schedulers on Ledger.Commit
		// do not change: p runs alone on s0 in [0, 10), then with q, new,
		// on s1 in [10, 20), marked Restart as Commit marks it; both lose
		// 2 s and do 8·½ = 4 steps; unmarked, only p does.
		w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{job("p", 100), job("q", 100)}}
		for _, marked := range []bool{true, false} {
			s := script(func(now float64) []round.Placement {
				if now == 0 {
					return []round.Placement{place("a", []alloc.JobID{"p"}, s0)}
				}
				p := place("a", []alloc.JobID{"p", "q"}, s1)
				p.Restart = marked
				return []round.Placement{p}
			})
			res, err := Run(context.Background(), w, c, s, &Settings{Round: 10, Restart: 2, Horizon: 20})
			if err != nil {
				t.Fatal(err)
			}
			type got struct {
				Done     float64
				Restarts int
			}
			want := []got{{14, 1}, {4, 1}}
			if !marked {
				want[1] = got{5, 0}
			}
			var have []got
			for _, j := range res.Jobs {
				have = append(have, got{j.Done, j.Restarts})
			}
			if diff := cmp.Diff(want, have, cmpopts.EquateApprox(0, tol)); diff != "" {
				t.Errorf("marked Restart %v: steps done and restarts of p and q mismatch (-want +got):\n%s", marked, diff)
			}
		}
	})
	t.Run("Renewed and Restart", func(t *testing.T) {
		w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{job("a", 300)}}
		s := script(func(now float64) []round.Placement {
			p := place("a", []alloc.JobID{"a"}, s0)
			p.Renewed, p.Restart = now > 0, now > 0
			return []round.Placement{p}
		})
		if _, err := Run(context.Background(), w, c, s, &Settings{Round: 100, Restart: 30}); !errors.Is(err, ErrPlacement) {
			t.Errorf("Run() error = %v, want ErrPlacement", err)
		}
	})
}
