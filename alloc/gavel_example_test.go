package alloc_test

import (
	"context"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// gavelExample is Gavel §4.1's example: three jobs on one V100 and one K80.
func gavelExample() *alloc.Problem {
	types := []topology.GPUType{"V100", "K80"}
	c, _ := alloc.NewCapacity(types, []float64{1, 1})
	jobs := []alloc.Job{{ID: "job0", Gang: 1, Weight: 1}, {ID: "job1", Gang: 1, Weight: 1}, {ID: "job2", Gang: 1, Weight: 1}}
	tp, _ := speedup.New([]string{"job0", "job1", "job2"}, types, [][]float64{{40, 10}, {12, 4}, {100, 50}})
	p, err := alloc.NewProblem(c, nil, jobs, tp)
	if err != nil {
		panic(err)
	}
	return p
}

func print(a *alloc.Allocation, err error) {
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: V100 %.3g, K80 %.3g\n", r, a.GPUs[i][0]+0, a.GPUs[i][1]+0)
	}
}

func ExampleMaxTotalThroughput() {
	print(alloc.MaxTotalThroughput{}.Allocate(context.Background(), gavelExample()))
	// Output:
	// job0: V100 0, K80 1
	// job1: V100 0, K80 0
	// job2: V100 1, K80 0
}

func ExampleMakespan() {
	p := gavelExample()
	pol := alloc.Makespan{RemainingSteps: []float64{4000, 1200, 20000}}
	a, err := pol.Allocate(context.Background(), p)
	print(a, err)
	// Every job finishes at the same time, the makespan.
	for i, thr := range a.Utilities(p.Valuations()) {
		fmt.Printf("%s finishes after %.4g s\n", a.Rows[i], pol.RemainingSteps[i]/thr)
	}
	// Output:
	// job0: V100 0.357, K80 0
	// job1: V100 0.214, K80 0.429
	// job2: V100 0.429, K80 0.571
	// job0 finishes after 280 s
	// job1 finishes after 280 s
	// job2 finishes after 280 s
}

func ExampleFinishTimeFairness() {
	p := gavelExample()
	pol := alloc.FinishTimeFairness{
		RemainingSteps:  []float64{4000, 1200, 20000},
		Elapsed:         []float64{100, 0, 50},
		IsolatedElapsed: []float64{60, 0, 50},
	}
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The largest ρ is optimal (the allocation below it need not be unique).
	rho, _ := pol.Rho(p, a)
	fmt.Printf("max ρ %.3g\n", math.Max(rho[0], math.Max(rho[1], rho[2])))
	// Output: max ρ 0.972
}

func ExampleFIFO() {
	// job0 arrived first, then job2, then job1.
	print(alloc.FIFO{Arrival: []float64{0, 20, 10}}.Allocate(context.Background(), gavelExample()))
	// Output:
	// job0: V100 1, K80 0
	// job1: V100 0, K80 0
	// job2: V100 0, K80 1
}

func ExampleShortestJobFirst() {
	// Alone, job1 needs 100/12 s, job2 5000/100 s, job0 4000/40 s.
	print(alloc.ShortestJobFirst{RemainingSteps: []float64{4000, 100, 5000}}.Allocate(context.Background(), gavelExample()))
	// Output:
	// job0: V100 0, K80 0
	// job1: V100 1, K80 0
	// job2: V100 0, K80 1
}

func ExampleMinCost() {
	p := gavelExample()
	cost := []float64{3.06, 0.9} // $ per GPU-hour
	print(alloc.MinCost{Cost: cost}.Allocate(context.Background(), p))
	// job1 must finish 1,200 steps within 150 s: 8 steps/s.
	pol := alloc.MinCost{Cost: cost, RemainingSteps: []float64{1, 1200, 1}, SLO: []float64{math.Inf(1), 150, math.Inf(1)}}
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	thr := a.Utilities(p.Valuations())
	used := a.Used()
	fmt.Printf("job1 runs %.3g steps/s; %.3g steps per dollar-hour\n", thr[1], (thr[0]+thr[1]+thr[2])/(cost[0]*used[0]+cost[1]*used[1]))
	// An SLO out of reach is an error naming the job.
	pol.SLO[1] = 60
	_, err = pol.Allocate(context.Background(), p)
	fmt.Println(err)
	// Output:
	// job0: V100 0, K80 0
	// job1: V100 0, K80 0
	// job2: V100 0, K80 1
	// job1 runs 8 steps/s; 21 steps per dollar-hour
	// alloc: min-cost-slo: job job1 needs 20 steps per unit time to meet its SLO, at most 12 is possible: lp: problem is infeasible
}

func ExampleSpaceSharing() {
	// Gavel §3.1: jobs 0 and 1 co-located on a V100 run at 20 and 7.5.
	types := []topology.GPUType{"V100", "P100", "K80"}
	c, _ := alloc.NewCapacity(types, []float64{1, 1, 1})
	jobs := []alloc.Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 1, Weight: 1}, {ID: "c", Gang: 1, Weight: 1}, {ID: "d", Gang: 1, Weight: 1}}
	// Jobs a and c are of type "resnet", b and d of type "lstm".
	tp, _ := speedup.New([]string{"a", "b", "c", "d"}, types, [][]float64{{40, 20, 10}, {15, 10, 5}, {40, 20, 10}, {15, 10, 5}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	s := alloc.SpaceSharing{
		Objective: alloc.SharingMaxMin,
		JobTypes:  []string{"resnet", "lstm", "resnet", "lstm"},
		Pairs:     []alloc.PairRate{{A: "resnet", B: "lstm", Type: "V100", RateA: 20, RateB: 7.5}},
	}
	r, err := s.Solve(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, thr := range r.Throughput {
		fmt.Printf("%s: %.3g steps/s\n", p.Jobs[i].ID, thr)
	}
	for _, ps := range r.Pairs {
		fmt.Printf("%s+%s on %s: %.3g\n", ps.A, ps.B, ps.Type, ps.Time)
	}
	// Output:
	// a: 18.6 steps/s
	// b: 7.97 steps/s
	// c: 18.6 steps/s
	// d: 7.97 steps/s
}

func ExampleNewPlacementProblem() {
	// Four V100s, two of them in one free server; two 2-GPU jobs whose
	// rates drop when their workers are spread over servers.
	types := []topology.GPUType{"V100"}
	c, _ := alloc.NewCapacity(types, []float64{4})
	jobs := []alloc.Job{{ID: "lm", Gang: 2, Weight: 1}, {ID: "resnet", Gang: 2, Weight: 1}}
	tp, _ := speedup.New([]string{"lm", "resnet"}, types, [][]float64{{10}, {10}})
	spread, _ := speedup.New([]string{"lm", "resnet"}, types, [][]float64{{6}, {9}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	pp, err := alloc.NewPlacementProblem(p, spread, []float64{2})
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := alloc.MaxTotalThroughput{}.Allocate(context.Background(), pp.Problem)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: %s %.3g, %s %.3g\n", r, a.Types[0], a.GPUs[i][0]+0, a.Types[1], a.GPUs[i][1]+0)
	}
	// Output:
	// lm: V100 2, V100_unconsolidated 0
	// resnet: V100 0, V100_unconsolidated 2
}

// ExampleSpaceSharing_thenTotal: job a runs only on the V100, job b on
// both GPUs. Max-min's level is 1 (b can do no more than run all of its
// time, on the K80), and it holds for a anywhere from half of the V100 to
// all of it, so max-min alone leaves a's share to the LP solver's vertex.
// SharingMaxMinThenTotal gives a the whole V100.
func ExampleSpaceSharing_thenTotal() {
	types := []topology.GPUType{"V100", "K80"}
	c, _ := alloc.NewCapacity(types, []float64{1, 1})
	jobs := []alloc.Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 1, Weight: 1}}
	tp, _ := speedup.New([]string{"a", "b"}, types, [][]float64{{1, 0}, {1, 1}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	r, err := alloc.SpaceSharing{Objective: alloc.SharingMaxMinThenTotal}.Solve(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, thr := range r.Throughput {
		fmt.Printf("%s: %.3g steps/s, V100 %.2f, K80 %.2f\n", p.Jobs[i].ID, thr, r.Alone[i][0], r.Alone[i][1])
	}
	// Output:
	// a: 1 steps/s, V100 1.00, K80 0.00
	// b: 1 steps/s, V100 0.00, K80 1.00
}

// Gavel's makespan policy with space sharing: three jobs on one V100, two
// of type "r" and one of type "a", each "a" job running at 8 steps/s beside
// an "r" job (10 alone). Alone one after another they take 4 hours;
// co-located, the batch ends sooner. Each job is a class of its own (its
// own work left), and its partners are named by job type.
func ExampleSpaceSharing_minMakespan() {
	types := []topology.GPUType{"V100"}
	c, _ := alloc.NewCapacity(types, []float64{1})
	jobs := []alloc.Job{{ID: "r1", Gang: 1, Weight: 1}, {ID: "r2", Gang: 1, Weight: 1}, {ID: "a1", Gang: 1, Weight: 1}}
	tp, _ := speedup.New([]string{"r1", "r2", "a1"}, types, [][]float64{{10}, {10}, {10}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	steps := []float64{36000, 36000, 72000} // 1, 1 and 2 hours alone
	r, err := alloc.SpaceSharing{
		Objective:      alloc.SharingMinMakespan,
		JobTypes:       []string{"r", "r", "a"},
		Pairs:          []alloc.PairRate{{A: "r", B: "a", Type: "V100", RateA: 8, RateB: 8}},
		RemainingSteps: steps,
	}.Solve(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, thr := range r.Throughput {
		shared := 0.0
		for _, ps := range r.Partners[i] {
			shared += ps.Time
		}
		fmt.Printf("%s: done in %.3g h, alone %.3f, co-located %.3f of the time\n", p.Jobs[i].ID, steps[i]/thr/3600, r.Alone[i][0], shared)
	}
	// Output:
	// r1: done in 2.5 h, alone 0.000, co-located 0.500 of the time
	// r2: done in 2.5 h, alone 0.000, co-located 0.500 of the time
	// a1: done in 2.5 h, alone 0.000, co-located 1.000 of the time
}

// Gavel's heterogeneity-aware FIFO with space sharing: two jobs on one
// V100, "b" arriving after "a". Without pairs, a takes the GPU and b
// waits; beside each other a keeps 9 of its 10 steps/s and b runs at 6,
// which FIFO's objective (a's throughput over its best weighted 2, b's 1)
// prefers: 2·0.9 + 0.6 = 2.4 against 2·1 = 2.
func ExampleSpaceSharing_fifo() {
	types := []topology.GPUType{"V100"}
	c, _ := alloc.NewCapacity(types, []float64{1})
	jobs := []alloc.Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 1, Weight: 1}}
	tp, _ := speedup.New([]string{"a", "b"}, types, [][]float64{{10}, {10}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	for _, pairs := range [][]alloc.PairRate{nil, {{A: "a", B: "b", Type: "V100", RateA: 9, RateB: 6}}} {
		r, err := alloc.SpaceSharing{Objective: alloc.SharingFIFO, Pairs: pairs, Arrival: []float64{0, 60}}.Solve(context.Background(), p)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d pairs: a %.3g steps/s, b %.3g steps/s\n", len(pairs), r.Throughput[0], r.Throughput[1])
	}
	// Output:
	// 0 pairs: a 10 steps/s, b 0 steps/s
	// 1 pairs: a 9 steps/s, b 6 steps/s
}

// Water filling with space sharing: a and b run only on the V100, c only
// on the K80, and a equal share (a third of each GPU) gives each job a
// third of its rate. Beside each other a and b keep 60% of their rate, so
// sharing the V100 all the time gives each 1.8 times its equal share,
// against 1.5 taking turns; that is max-min's level, which a and b hold.
// Water filling then raises c, which no one else can use the K80 for, to
// its whole rate, 3 times its share: max-min alone only promises it 1.8.
func ExampleSpaceSharing_waterFilling() {
	types := []topology.GPUType{"V100", "K80"}
	c, _ := alloc.NewCapacity(types, []float64{1, 1})
	jobs := []alloc.Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 1, Weight: 1}, {ID: "c", Gang: 1, Weight: 1}}
	tp, _ := speedup.New([]string{"a", "b", "c"}, types, [][]float64{{10, 0}, {10, 0}, {0, 4}})
	p, _ := alloc.NewProblem(c, nil, jobs, tp)
	pairs := []alloc.PairRate{{A: "a", B: "b", Type: "V100", RateA: 6, RateB: 6}}
	r, err := alloc.SpaceSharing{Objective: alloc.SharingWaterFilling, Pairs: pairs}.Solve(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, j := range jobs {
		fmt.Printf("%s: %.3g steps/s, beside another job %.3g of its time\n", j.ID, r.Throughput[i], sharedTime(r.Partners[i]))
	}
	// Output:
	// a: 6 steps/s, beside another job 1 of its time
	// b: 6 steps/s, beside another job 1 of its time
	// c: 4 steps/s, beside another job 0 of its time
}

// sharedTime is the fraction of its time a job spends beside others.
func sharedTime(ps []alloc.PartnerShare) float64 {
	t := 0.0
	for _, s := range ps {
		t += s.Time
	}
	return t
}

// Hierarchical with space sharing: tenant "product" (weight 2) has job p,
// tenant "research" (weight 1) runs r1 then r2 first in, first out, on one
// V100. Without pairs, p gets two thirds of the GPU and r1 one third; r2
// waits. Beside each other p and r1 keep 60% of their rate: with p alone
// 37.5% of the time and beside r1 62.5%, p runs at 7.5 steps/s and r1 at
// 3.75, still 2 to 1, both 12.5% faster.
func ExampleSpaceSharing_hierarchical() {
	types := []topology.GPUType{"V100"}
	c, _ := alloc.NewCapacity(types, []float64{1})
	tenants := []alloc.Tenant{{ID: "product", Weight: 2}, {ID: "research", Weight: 1}}
	jobs := []alloc.Job{
		{ID: "p", Owner: "product", Gang: 1, Weight: 1},
		{ID: "r1", Owner: "research", Gang: 1, Weight: 1},
		{ID: "r2", Owner: "research", Gang: 1, Weight: 1},
	}
	tp, _ := speedup.New([]string{"p", "r1", "r2"}, types, [][]float64{{10}, {10}, {10}})
	p, _ := alloc.NewProblem(c, tenants, jobs, tp)
	for _, pairs := range [][]alloc.PairRate{nil, {{A: "p", B: "r1", Type: "V100", RateA: 6, RateB: 6}}} {
		s := alloc.SpaceSharing{Objective: alloc.SharingHierarchical, Pairs: pairs, FIFO: []alloc.TenantID{"research"}}
		r, err := s.Solve(context.Background(), p)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d pairs: p %.2f, r1 %.2f, r2 %.2f steps/s\n", len(pairs), r.Throughput[0], r.Throughput[1], r.Throughput[2])
	}
	// Output:
	// 0 pairs: p 6.67, r1 3.33, r2 0.00 steps/s
	// 1 pairs: p 7.50, r1 3.75, r2 0.00 steps/s
}
