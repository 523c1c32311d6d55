package alloc

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// gavelT is Gavel §4.1's throughput matrix: jobs 0–2 on one V100 and one K80.
var gavelT = [][]float64{{40, 10}, {12, 4}, {100, 50}}

func TestMaxTotalThroughputHand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count []float64
		gangs []int
		rates [][]float64
		want  float64
	}{
		// V100 to job 2 and K80 to job 0 (110) beats V100 to job 0 and
		// K80 to job 2 (90); a job runs on one type at a time.
		{"gavel T, one of each", []float64{1, 1}, nil, gavelT, 110},
		// Two V100s: jobs 2 and 0 on them (140), the K80 to job 1 (4).
		{"gavel T, two V100s", []float64{2, 1}, nil, gavelT, 144},
		// A gang-2 job on 3 GPUs of one type: time ≤ 1 uses 2 of them,
		// the third goes to the single-GPU job.
		{"gangs", []float64{3}, []int{2, 1}, [][]float64{{10}, {1}}, 11},
		// A job that runs nowhere gets nothing and changes nothing.
		{"zero row", []float64{1}, nil, [][]float64{{0}, {3}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := gavelProblem(t, tc.count, tc.gangs, tc.rates)
			a, err := MaxTotalThroughput{}.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, a)
			var total float64
			for _, r := range throughputs(p, a) {
				total += r
			}
			if !relClose(total, tc.want, gavelTol) {
				t.Errorf("total throughput = %v, want %v", total, tc.want)
			}
		})
	}
}

func TestMakespanHand(t *testing.T) {
	// One GPU, rates 1 and 2, 10 steps each: equal finishing times need
	// x_a = 2·x_b, so x = (2/3, 1/3) and the makespan is 10/(2/3) = 15.
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{1}, {2}})
	a, err := Makespan{RemainingSteps: []float64{10, 10}}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, a)
	if diff := cmp.Diff([][]float64{{2.0 / 3}, {1.0 / 3}}, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("Makespan allocation mismatch (-want +got):\n%s", diff)
	}
	// Gavel's T on one V100 and one K80, equal steps: the makespan LP's
	// value is the max-min of throughput/steps.
	p = gavelProblem(t, []float64{1, 1}, nil, gavelT)
	steps := []float64{100, 100, 100}
	a, err = Makespan{RemainingSteps: steps}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	got := makespanOf(p, a, steps)
	want := bisect(0, 1e4, func(ms float64) bool { return feasibleWith(t, p, divide(steps, ms)) })
	if !relClose(got, want, gavelTol) {
		t.Errorf("makespan = %v, bisection gives %v", got, want)
	}
}

func TestFinishTimeFairnessHand(t *testing.T) {
	// One GPU, two jobs of rate 1 with 10 steps left. Job a started 10 s
	// ago and would have needed 5 s with half the GPU; job b is new.
	// Isolated rate 1/2: D_a = 5 + 20 = 25, D_b = 20. Equal ρ:
	// (10 + 10/x)/25 = 10/(20(1−x)) gives 4x² + 5x − 4 = 0.
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{1}, {1}})
	pol := FinishTimeFairness{RemainingSteps: []float64{10, 10}, Elapsed: []float64{10, 0}, IsolatedElapsed: []float64{5, 0}}
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, a)
	x := (-5 + math.Sqrt(89)) / 8
	if !relClose(a.GPUs[0][0], x, gavelTol) {
		t.Errorf("job a's share = %v, want %v", a.GPUs[0][0], x)
	}
	rho, err := pol.Rho(p, a)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 / (2 * (1 - x))
	if diff := cmp.Diff([]float64{want, want}, rho, cmpopts.EquateApprox(gavelTol, 0)); diff != "" {
		t.Errorf("ρ mismatch (-want +got):\n%s", diff)
	}
	// New jobs: ρ_m = thr^iso_m/thr_m, so the optimum is the normalised
	// max-min. Gavel's T on one V100 and one K80 with equal steps.
	p = gavelProblem(t, []float64{1, 1}, nil, gavelT)
	pol = FinishTimeFairness{RemainingSteps: []float64{50, 50, 50}}
	a, err = pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	rho, err = pol.Rho(p, a)
	if err != nil {
		t.Fatal(err)
	}
	got := maxOf(rho)
	wantMax := bisectRho(t, p, pol)
	if !relClose(got, wantMax, gavelTol) || got > 1+gavelTol {
		t.Errorf("max ρ = %v, bisection gives %v (and isolated 1)", got, wantMax)
	}
}

func TestFIFOHand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		count   []float64
		gangs   []int
		rates   [][]float64
		arrival []float64
		want    [][]float64
	}{
		{"one type, job order", []float64{2}, nil, [][]float64{{1}, {5}, {3}}, nil, [][]float64{{1}, {1}, {0}}},
		{"arrival reversed", []float64{2}, nil, [][]float64{{1}, {5}, {3}}, []float64{3, 2, 1}, [][]float64{{0}, {1}, {1}}},
		// Without the gang factor, job 1 (1 GPU) would outbid job 0 (2 GPUs)
		// per GPU: weight 3/2 per GPU against 2.
		{"gangs", []float64{3}, []int{2, 2, 1}, [][]float64{{1}, {1}, {1}}, nil, [][]float64{{2}, {1}, {0}}},
		// Heterogeneous: job 0 is indifferent between the types, job 1 is
		// ten times faster on t1, so job 0 takes t0.
		{"heterogeneous", []float64{1, 1}, nil, [][]float64{{1, 1}, {0.1, 1}}, nil, [][]float64{{1, 0}, {0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := gavelProblem(t, tc.count, tc.gangs, tc.rates)
			a, err := FIFO{Arrival: tc.arrival}.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, a)
			if diff := cmp.Diff(tc.want, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
				t.Errorf("FIFO mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFIFOHeterogeneousTradesOrder(t *testing.T) {
	// The limit of Gavel's linear rank weights: job 0 (weight 2) is 1.01×
	// faster on t1, job 1 (weight 1) ten times; job 0 yields t1.
	p := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{1, 1.01}, {0.1, 1}})
	a, err := FIFO{}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float64{{1, 0}, {0, 1}}, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("FIFO mismatch (-want +got):\n%s", diff)
	}
}

func TestShortestJobFirstHand(t *testing.T) {
	// Durations alone: 30/1, 10/1, 20/2 = 30, 10, 10: jobs 1 and 2 tie,
	// job order breaks it, so job 1 first, then job 2.
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{1}, {1}, {2}})
	a, err := ShortestJobFirst{RemainingSteps: []float64{30, 10, 20}}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float64{{0}, {1}, {0}}, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("SJF mismatch (-want +got):\n%s", diff)
	}
}

func TestMinCostHand(t *testing.T) {
	// Types A ($1/h) and B ($3/h). Job 0 runs 1 and 4 steps/s, job 1 runs
	// 1 and 2: the best throughput per dollar is job 0 on B, 4/3.
	p := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{1, 4}, {1, 2}})
	cost := []float64{1, 3}
	a, err := MinCost{Cost: cost}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, a)
	if diff := cmp.Diff([][]float64{{0, 1}, {0, 0}}, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("MinCost mismatch (-want +got):\n%s", diff)
	}
	// Job 1 must finish 10 steps within 20 s (0.5 steps/s). Cheapest: half
	// an A for job 1, all of B for job 0: (4 + 0.5)/(3 + 0.5) = 9/7.
	pol := MinCost{Cost: cost, RemainingSteps: []float64{1, 10}, SLO: []float64{math.Inf(1), 20}}
	a, err = pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, a)
	if got := costRatio(p, a, cost); !relClose(got, 9.0/7, gavelTol) {
		t.Errorf("throughput per cost = %v, want 9/7", got)
	}
	if thr := throughputs(p, a); thr[1] < 0.5-gavelTol {
		t.Errorf("job 1 runs %v steps/s, its SLO needs 0.5", thr[1])
	}
}

func TestMinCostInfeasibleSLO(t *testing.T) {
	p := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{1, 4}, {1, 2}})
	cost := []float64{1, 3}
	// Job 0 alone can reach 4 steps/s; it needs 5.
	_, err := MinCost{Cost: cost, RemainingSteps: []float64{50, 1}, SLO: []float64{10, math.Inf(1)}}.Allocate(context.Background(), p)
	var se *SLOError
	if !errors.As(err, &se) || !errors.Is(err, lp.ErrInfeasible) || se.Job != "j0" || se.Need != 5 || se.Max != 4 {
		t.Errorf("error = %v, want an *SLOError for j0 needing 5 of 4, wrapping lp.ErrInfeasible", err)
	}
	// Each SLO alone can be met (3.5 of 4, 1.5 of 2), not both: they need
	// more than the two GPUs together.
	_, err = MinCost{Cost: cost, RemainingSteps: []float64{35, 15}, SLO: []float64{10, 10}}.Allocate(context.Background(), p)
	if !errors.As(err, &se) || !errors.Is(err, lp.ErrInfeasible) || se.Job != "" {
		t.Errorf("error = %v, want an *SLOError for the SLOs together, wrapping lp.ErrInfeasible", err)
	}
}

func TestGavelPoliciesBadInput(t *testing.T) {
	p := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {0, 0}})
	ok := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {3, 1}})
	slow := gavelProblem(t, []float64{1, 1}, nil, [][]float64{{3e-12, 3e-12}, {3e-12, 3e-12}})
	nan := math.NaN()
	for _, tc := range []struct {
		name  string
		pol   Policy
		p     *Problem
		field string
		want  error
	}{
		{"makespan zero row", Makespan{RemainingSteps: []float64{1, 1}}, p, "Throughputs", gpufair.ErrValue},
		{"ftf zero row", FinishTimeFairness{RemainingSteps: []float64{1, 1}}, p, "Throughputs", gpufair.ErrValue},
		{"makespan short steps", Makespan{RemainingSteps: []float64{1}}, ok, "Makespan.RemainingSteps", gpufair.ErrShape},
		{"makespan NaN steps", Makespan{RemainingSteps: []float64{1, nan}}, ok, "Makespan.RemainingSteps", gpufair.ErrValue},
		{"ftf negative elapsed", FinishTimeFairness{RemainingSteps: []float64{1, 1}, Elapsed: []float64{-1, 0}}, ok, "FinishTimeFairness.Elapsed", gpufair.ErrValue},
		{"ftf missing steps", FinishTimeFairness{}, ok, "FinishTimeFairness.RemainingSteps", gpufair.ErrShape},
		{"fifo Inf arrival", FIFO{Arrival: []float64{0, math.Inf(1)}}, ok, "FIFO.Arrival", gpufair.ErrValue},
		{"sjf zero steps", ShortestJobFirst{RemainingSteps: []float64{0, 1}}, ok, "ShortestJobFirst.RemainingSteps", gpufair.ErrValue},
		{"min-cost free type", MinCost{Cost: []float64{0, 1}}, ok, "MinCost.Cost", gpufair.ErrValue},
		{"min-cost cost per job", MinCost{Cost: []float64{1, 1, 1}}, ok, "MinCost.Cost", gpufair.ErrShape},
		{"min-cost SLO without steps", MinCost{Cost: []float64{1, 1}, SLO: []float64{1, 1}}, ok, "MinCost.RemainingSteps", gpufair.ErrShape},
		// Work left taking over MaxWorkTime alone: 1e300 steps at 3e-12
		// a second overflowed the policies' arithmetic.
		{"makespan work of 3e311 s", Makespan{RemainingSteps: []float64{1, 1e300}}, slow, "Makespan.RemainingSteps", gpufair.ErrValue},
		{"ftf work of 3e311 s", FinishTimeFairness{RemainingSteps: []float64{1e300, 1}}, slow, "FinishTimeFairness.RemainingSteps", gpufair.ErrValue},
		{"ftf elapsed over MaxWorkTime", FinishTimeFairness{RemainingSteps: []float64{1, 1}, Elapsed: []float64{0, 2e30}}, ok, "FinishTimeFairness.Elapsed", gpufair.ErrValue},
		{"min-cost work of 3e311 s", MinCost{Cost: []float64{1, 1}, RemainingSteps: []float64{1e300, 1}, SLO: []float64{math.Inf(1), 1}}, slow, "MinCost.RemainingSteps", gpufair.ErrValue},
		{"min-cost zero SLO", MinCost{Cost: []float64{1, 1}, RemainingSteps: []float64{1, 1}, SLO: []float64{0, 1}}, ok, "MinCost.SLO", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.pol.Allocate(context.Background(), tc.p)
			var ie *gpufair.InputError
			if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, tc.want) {
				t.Errorf("Allocate() error = %v, want an *gpufair.InputError on %s wrapping %v", err, tc.field, tc.want)
			}
		})
	}
	// A GPU type with zero count is not a valid cluster.
	bad := *ok
	bad.Capacity = Capacity{Types: ok.Capacity.Types, Count: []float64{1, 0}}
	for _, pol := range []Policy{MaxTotalThroughput{}, FIFO{}, Makespan{RemainingSteps: []float64{1, 1}}} {
		if _, err := pol.Allocate(context.Background(), &bad); !errors.Is(err, gpufair.ErrValue) {
			t.Errorf("%s on a zero-count type: error = %v, want gpufair.ErrValue", pol.Name(), err)
		}
	}
	// Zero rows are served as documented: FIFO and max throughput give the
	// job nothing.
	for _, pol := range []Policy{MaxTotalThroughput{}, FIFO{}, ShortestJobFirst{RemainingSteps: []float64{1, 1}}, MinCost{Cost: []float64{1, 1}}} {
		a, err := pol.Allocate(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", pol.Name(), err)
		}
		if g := a.GPUs[1]; g[0] > gavelTol || g[1] > gavelTol {
			t.Errorf("%s gives the job with a zero row %v GPUs", pol.Name(), g)
		}
	}
}

func TestGavelPoliciesDeterministic(t *testing.T) {
	p := gavelProblem(t, []float64{3, 2, 1}, []int{1, 2, 1, 1, 2}, [][]float64{
		{4, 2, 1}, {8, 4, 2}, {3, 3, 3}, {5, 1, 1}, {6, 6, 2},
	})
	steps := []float64{10, 20, 30, 40, 50}
	for _, pol := range []Policy{
		MaxTotalThroughput{}, Makespan{RemainingSteps: steps}, FinishTimeFairness{RemainingSteps: steps, Elapsed: steps},
		FIFO{}, ShortestJobFirst{RemainingSteps: steps}, MinCost{Cost: []float64{3, 2, 1}},
	} {
		a, err := pol.Allocate(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", pol.Name(), err)
		}
		b, err := pol.Allocate(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", pol.Name(), err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs differ: %v and %v", pol.Name(), a.GPUs, b.GPUs)
		}
	}
}

// makespanOf returns max_m steps_m/throughput_m under a.
func makespanOf(p *Problem, a *Allocation, steps []float64) float64 {
	worst := 0.0
	for i, r := range throughputs(p, a) {
		worst = math.Max(worst, steps[i]/r)
	}
	return worst
}

// costRatio returns Σ throughput / Σ Cost_k·GPUs_k under a.
func costRatio(p *Problem, a *Allocation, cost []float64) float64 {
	var thr, bill float64
	for _, r := range throughputs(p, a) {
		thr += r
	}
	for k, u := range a.Used() {
		bill += cost[k] * u
	}
	return thr / bill
}

func divide(v []float64, d float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / d
	}
	return out
}

func maxOf(v []float64) float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// bisectRho returns the smallest max ρ some allocation reaches, by
// bisection over ρ: ρ_m ≤ ρ holds iff throughput_m ≥ S_m/(ρ·D_m − t_m).
func bisectRho(t fataler, p *Problem, pol FinishTimeFairness) float64 {
	in, err := pol.inputs(p)
	if err != nil {
		t.Fatal(err)
	}
	p = in.p
	rates, _ := p.isolatedThroughputs()
	hi := in.maxRho(rates)
	return bisect(0, hi, func(rho float64) bool {
		need := make([]float64, len(p.Jobs))
		for i := range need {
			slack := rho*in.den[i] - in.elapsed[i]
			if slack <= 0 {
				return false
			}
			need[i] = in.steps[i] / slack
		}
		return feasibleWith(t, p, need)
	})
}
