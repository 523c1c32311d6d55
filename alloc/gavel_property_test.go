package alloc

import (
	"context"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertyGavelFeasible: every policy returns a feasible allocation of
// the problem's jobs, on problems with zero rows where the policy accepts
// them.
func TestPropertyGavelFeasible(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(5, true).Draw(t, "problem")
		n := len(p.Jobs)
		steps := genSteps(t, n, "steps")
		cost := genSteps(t, p.Capacity.NumTypes(), "cost")
		for _, pol := range []Policy{
			MaxTotalThroughput{}, Makespan{RemainingSteps: steps}, FinishTimeFairness{RemainingSteps: steps, Elapsed: genSteps(t, n, "elapsed")},
			FIFO{Arrival: genSteps(t, n, "arrival")}, ShortestJobFirst{RemainingSteps: steps}, MinCost{Cost: cost},
		} {
			a, err := pol.Allocate(context.Background(), p)
			if err != nil {
				t.Fatalf("%s: %v", pol.Name(), err)
			}
			checkGavelFeasible(t, p, a)
		}
	})
}

// TestPropertyMakespanEqualsBisection: the one-LP makespan, solved either
// way, equals the smallest makespan bisection over feasibility LPs finds,
// and no feasible allocation the other policies return finishes earlier.
func TestPropertyMakespanEqualsBisection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(4, true).Draw(t, "problem")
		steps := genSteps(t, len(p.Jobs), "steps")
		rates, _ := p.isolatedThroughputs()
		hi := 0.0
		for i, r := range rates {
			hi = math.Max(hi, steps[i]/r)
		}
		want := bisect(0, hi, func(ms float64) bool { return feasibleWith(t, p, divide(steps, ms)) })
		var got float64
		for _, m := range []MaxMinMethod{FullLP, Decomposed} {
			a, err := Makespan{RemainingSteps: steps, Method: m}.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, a)
			checkNoIdleWhileSpare(t, p, a)
			got = makespanOf(p, a, steps)
			if !relClose(got, want, 1e-6) {
				t.Fatalf("method %d: makespan = %v, bisection = %v", m, got, want)
			}
		}
		other, err := MaxTotalThroughput{}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if ms := makespanOf(p, other, steps); ms < got*(1-1e-6) {
			t.Fatalf("max-throughput allocation finishes by %v, before the optimal makespan %v", ms, got)
		}
	})
}

// TestPropertyFinishTimeFairnessOptimal: the Dinkelbach iteration reaches
// the smallest max ρ that bisection over ρ finds, and never exceeds the
// isolated allocation's, with its steps solved either way.
func TestPropertyFinishTimeFairnessOptimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(4, true).Draw(t, "problem")
		n := len(p.Jobs)
		pol := FinishTimeFairness{RemainingSteps: genSteps(t, n, "steps"), Elapsed: genSteps(t, n, "elapsed"), IsolatedElapsed: genSteps(t, n, "isolated")}
		want := bisectRho(t, p, pol)
		for _, m := range []MaxMinMethod{Decomposed, FullLP} {
			pol.Method = m
			a, err := pol.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, a)
			checkNoIdleWhileSpare(t, p, a)
			rho, err := pol.Rho(p, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := maxOf(rho); !relClose(got, want, 1e-6) {
				t.Fatalf("method %d: max ρ = %v, bisection = %v", m, got, want)
			}
		}
	})
}

// TestPropertyPriorityOneType: on one GPU type, FIFO and SJF serve jobs in
// rank order: a job gets less than all of its time only when every job
// after it gets nothing.
func TestPropertyPriorityOneType(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "jobs")
		count := float64(rapid.IntRange(1, 6).Draw(t, "count"))
		gangs := make([]int, n)
		rates := make([][]float64, n)
		for i := range rates {
			gangs[i] = rapid.IntRange(1, 4).Draw(t, "gang")
			rates[i] = []float64{float64(rapid.IntRange(1, 10).Draw(t, "rate"))}
		}
		p := gavelProblem(t, []float64{count}, gangs, rates)
		arrival := genSteps(t, n, "arrival")
		steps := genSteps(t, n, "steps")
		for _, c := range []struct {
			pol Policy
			key func(i int) float64
		}{
			{FIFO{Arrival: arrival}, func(i int) float64 { return arrival[i] }},
			{ShortestJobFirst{RemainingSteps: steps}, func(i int) float64 { return steps[i] / p.bestAlone(i) }},
		} {
			a, err := c.pol.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, a)
			rank := priorityRanks(n, c.key)
			order := make([]int, n)
			for i, r := range rank {
				order[r] = i
			}
			starved := false // some earlier job got less than it could use
			for _, i := range order {
				x := a.GPUs[i][0] / float64(gangs[i])
				if starved && x > gavelTol {
					t.Fatalf("%s: job %d runs %v of the time after an earlier job was cut short: %v", c.pol.Name(), i, x, a.GPUs)
				}
				if x < math.Min(1, count/float64(gangs[i]))-gavelTol {
					starved = true
				}
			}
		}
	})
}

// TestPropertyMinCostMeetsSLOs: with SLOs that the isolated allocation
// meets, MinCost meets them all and earns at least the isolated
// allocation's throughput per cost.
func TestPropertyMinCostMeetsSLOs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(5, true).Draw(t, "problem")
		n := len(p.Jobs)
		steps := genSteps(t, n, "steps")
		cost := genSteps(t, p.Capacity.NumTypes(), "cost")
		rates, x := p.isolatedThroughputs()
		slo := make([]float64, n)
		for i := range slo {
			slo[i] = math.Inf(1)
			if rapid.Bool().Draw(t, "hasSLO") {
				slo[i] = steps[i] / (0.9 * rates[i])
			}
		}
		a, err := MinCost{Cost: cost, RemainingSteps: steps, SLO: slo}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkGavelFeasible(t, p, a)
		for i, r := range throughputs(p, a) {
			if r < steps[i]/slo[i]*(1-1e-6) {
				t.Fatalf("job %d runs %v, its SLO needs %v", i, r, steps[i]/slo[i])
			}
		}
		iso := timeFractionsToAllocation(p, x)
		if got, floor := costRatio(p, a, cost), costRatio(p, iso, cost); got < floor*(1-1e-6) {
			t.Fatalf("throughput per cost %v is below the isolated allocation's %v", got, floor)
		}
	})
}

// TestPropertyMaxTotalThroughputBruteForce: with single-GPU jobs and whole
// GPUs, the LP is a transportation problem with an integral optimum, so it
// equals the best assignment of GPUs to jobs found by enumeration.
func TestPropertyMaxTotalThroughputBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nt := rapid.IntRange(1, 2).Draw(t, "types")
		count := make([]float64, nt)
		for k := range count {
			count[k] = float64(rapid.IntRange(1, 2).Draw(t, "count"))
		}
		n := rapid.IntRange(1, 4).Draw(t, "jobs")
		rates := make([][]float64, n)
		for i := range rates {
			rates[i] = make([]float64, nt)
			for k := range rates[i] {
				rates[i][k] = float64(rapid.IntRange(0, 10).Draw(t, "rate"))
			}
		}
		p := gavelProblem(t, count, nil, rates)
		a, err := MaxTotalThroughput{}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		var got float64
		for _, r := range throughputs(p, a) {
			got += r
		}
		if want := bestAssignment(rates, count, 0, make([]bool, n)); !relClose(got, want, 1e-7) {
			t.Fatalf("LP total %v, best assignment %v", got, want)
		}
	})
}

// bestAssignment returns the largest total rate of giving each remaining
// GPU (types from k on) to a distinct job or to none.
func bestAssignment(rates [][]float64, count []float64, k int, busy []bool) float64 {
	for k < len(count) && count[k] == 0 {
		k++
	}
	if k == len(count) {
		return 0
	}
	count[k]--
	defer func() { count[k]++ }()
	best := bestAssignment(rates, count, k, busy) // this GPU idles
	for i := range rates {
		if !busy[i] {
			busy[i] = true
			best = math.Max(best, rates[i][k]+bestAssignment(rates, count, k, busy))
			busy[i] = false
		}
	}
	return best
}

// TestPropertyClassesMatchPerJob: MaxTotalThroughput and MinCost solve one
// LP per class of interchangeable jobs and split each class evenly.
// Duplicating every job and every GPU must then double the total
// throughput (MaxTotalThroughput) and keep the throughput per cost
// (MinCost), and the two copies of a job get the same allocation.
func TestPropertyClassesMatchPerJob(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(4, true).Draw(t, "problem")
		n := len(p.Jobs)
		rates := make([][]float64, 2*n)
		gangs := make([]int, 2*n)
		for i, j := range p.Jobs {
			rates[i], rates[n+i] = p.Throughputs.Row(i), p.Throughputs.Row(i)
			gangs[i], gangs[n+i] = j.Gang, j.Gang
		}
		count := make([]float64, len(p.Capacity.Count))
		cost := make([]float64, len(count))
		for k, c := range p.Capacity.Count {
			count[k], cost[k] = 2*c, float64(1+k)
		}
		double := gavelProblem(t, count, gangs, rates)
		for _, pol := range []Policy{MaxTotalThroughput{}, MinCost{Cost: cost}} {
			a, err := pol.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := pol.Allocate(context.Background(), double)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				for k := range count {
					if math.Abs(b.GPUs[i][k]-b.GPUs[n+i][k]) > 1e-9 {
						t.Fatalf("%s: copies of job %d get %v and %v", pol.Name(), i, b.GPUs[i], b.GPUs[n+i])
					}
				}
			}
			total := func(q *Problem, x *Allocation) (thr, bill float64) {
				for i, r := range throughputs(q, x) {
					thr += r
					for k, g := range x.GPUs[i] {
						bill += cost[k] * g
					}
				}
				return thr, bill
			}
			ta, ba := total(p, a)
			tb, bb := total(double, b)
			switch pol.(type) {
			case MaxTotalThroughput:
				if !relClose(tb, 2*ta, 1e-7) {
					t.Fatalf("total throughput %v doubled, want %v", tb, 2*ta)
				}
			case MinCost:
				if ba > 0 && bb > 0 && !relClose(tb/bb, ta/ba, 1e-7) {
					t.Fatalf("throughput per cost %v doubled, want %v", tb/bb, ta/ba)
				}
			}
		}
	})
}
