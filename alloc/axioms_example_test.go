package alloc_test

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// OEF's expression (1): Gandiva_fair's allocation of one slow and one fast
// GPU among three users, exactly. It is sharing-incentive and
// Pareto-efficient, but u3 envies u2.
func ExampleAudit() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"GPU1", "GPU2"}, []float64{1, 1})
	a := alloc.NewAllocation([]string{"u1", "u2", "u3"}, c)
	a.GPUs = [][]float64{{1, 4.0 / 45}, {0, 7.0 / 15}, {0, 4.0 / 9}}
	vals := []alloc.Valuation{alloc.Linear{1, 2}, alloc.Linear{1, 3}, alloc.Linear{1, 4}}
	r, err := alloc.Audit(context.Background(), a, c, vals, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(r)
	// Output:
	// sharing incentive: true (worst row 1, margin 0.05)
	// envy-freeness: false (row 2 envies row 1 by 0.05)
	// Pareto efficiency: true (total relative gain available 0)
}

// A strategy-proofness probe of a mechanism that gives each GPU type to the
// highest reported rate (OEF's expression (5)): u2, who gets nothing, wins
// the slow GPU by reporting 1.05 instead of 1 on it.
func ExampleProbeStrategyProofness() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"GPU1", "GPU2"}, []float64{1, 1})
	maxEff := func(_ context.Context, rep [][]float64) (*alloc.Allocation, error) {
		a := alloc.NewAllocation([]string{"u1", "u2", "u3"}, c)
		for k := range c.Types {
			best := 0
			for i := range rep {
				if rep[i][k] > rep[best][k] {
					best = i
				}
			}
			a.GPUs[best][k] = c.Count[k]
		}
		return a, nil
	}
	truth := [][]float64{{1, 2}, {1, 3}, {1, 4}}
	r, _ := alloc.ProbeStrategyProofness(context.Background(), maxEff, truth, &alloc.ProbeSettings{Seed: 1})
	fmt.Printf("strategy-proof: %v; u%d gains %.3g reporting %.3g\n", r.Holds, r.Row+1, r.Gain, r.Misreport)
	// Output:
	// strategy-proof: false; u2 gains +Inf reporting [1.05 3]
}

// Jobs owned by users: aggregate the job rows per owner, and value each
// owner's bundle by the best use among its jobs.
func ExampleAllocation_ByOwner() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"K80", "V100"}, []float64{2, 2})
	users := []alloc.Tenant{{ID: "alice", Weight: 1}, {ID: "bob", Weight: 1}}
	jobs := []alloc.Job{
		{ID: "a1", Owner: "alice", Gang: 1, Weight: 1},
		{ID: "a2", Owner: "alice", Gang: 1, Weight: 1},
		{ID: "b1", Owner: "bob", Gang: 1, Weight: 1},
	}
	a := alloc.NewAllocation([]string{"a1", "a2", "b1"}, c)
	a.GPUs = [][]float64{{1, 0}, {0, 1}, {1, 1}}
	owned, _ := a.ByOwner(jobs, users)
	vals, _ := alloc.OwnerValuations(jobs, users, []alloc.Linear{{1, 2}, {1, 4}, {1, 3}})
	si, _ := alloc.SharingIncentive(owned, c, vals, alloc.OwnerWeights(users))
	fmt.Println(owned.GPUs)
	fmt.Printf("sharing incentive: %v, margins %.3g\n", si.Holds, si.Margin)
	// Output:
	// [[1 1] [1 1]]
	// sharing incentive: true, margins [0 0]
}

// An envy-free allocation, made from median rates, held to every rate
// between each job's slowest and fastest profiling runs. The README's three
// jobs, each its own tenant's, profiled three times, with cooperative OEF's
// allocation of one K80 and one V100: envy-free on the medians, and not for
// every rate the runs allow, nor sharing-incentive (SharingIncentiveWithin):
// with its slowest K80 run and fastest V100 run, b, which holds the K80,
// would rather have a third of each GPU.
func ExampleEnvyFreenessWithin() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"K80", "V100"}, []float64{1, 1})
	runs := [][][]float64{ // steps/s of each run, on each type
		{{1.0, 1.0, 1.0}, {3.8, 4.0, 4.1}},
		{{1.0, 0.9, 1.1}, {2.0, 2.0, 2.1}},
		{{1.0, 1.0, 1.0}, {9.0, 10.0, 10.5}},
	}
	var tenants []alloc.Tenant
	var jobs []alloc.Job
	var lo, hi []alloc.Linear
	for i, job := range runs {
		median, slowest, fastest := make([]float64, 2), make(alloc.Linear, 2), make(alloc.Linear, 2)
		for k, rs := range job {
			median[k], slowest[k], fastest[k] = rs[1], slices.Min(rs), slices.Max(rs)
		}
		id := string(rune('a' + i))
		tenants = append(tenants, alloc.Tenant{ID: alloc.TenantID(id), Weight: 1})
		jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Owner: alloc.TenantID(id), Gang: 1, Weight: 1, Rates: median})
		lo, hi = append(lo, slowest), append(hi, fastest)
	}
	p, _ := alloc.NewJobProblem(c, tenants, jobs)
	a, err := alloc.OEF{Mode: alloc.Cooperative}.Allocate(context.Background(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	onMedians, _ := alloc.EnvyFreeness(a, p.Valuations(), nil)
	within, _ := alloc.EnvyFreenessWithin(a, lo, hi, nil)
	fmt.Printf("on the medians: envy-free %v (largest envy %.3f)\n", onMedians.Holds, max(0, onMedians.MaxEnvy))
	fmt.Printf("within the runs: envy-free %v (%s may envy %s by %.3f)\n", within.Holds, a.Rows[within.Envier], a.Rows[within.Envied], within.MaxEnvy)
	si, _ := alloc.SharingIncentiveWithin(a, c, lo, hi, nil)
	fmt.Printf("within the runs: sharing-incentive %v (smallest margin %.3f, %s's)\n", si.Holds, si.Margin[si.Worst], a.Rows[si.Worst])
	// Output:
	// on the medians: envy-free true (largest envy 0.000)
	// within the runs: envy-free false (b may envy a by 0.046)
	// within the runs: sharing-incentive false (smallest margin -0.030, b's)
}

// evenPolicy is a policy of a caller's own: every job gets an equal share
// of every type, in GPUs.
type evenPolicy struct{}

func (evenPolicy) Name() string { return "even" }

func (evenPolicy) Allocate(_ context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	a := alloc.NewAllocation(p.JobIDs(), p.Capacity)
	for _, row := range a.GPUs {
		for k, n := range p.Capacity.Count {
			row[k] = n / float64(len(p.Jobs))
		}
	}
	return a, nil
}

// A policy of one's own, checked before its rows are read as the
// problem's jobs: what evenPolicy returns passes, and a result with a row
// missing, or more GPUs than the cluster has, does not.
func ExampleAllocation_ValidateFor() {
	c, _ := alloc.NewCapacity([]topology.GPUType{"K80", "V100"}, []float64{2, 1})
	p, _ := alloc.NewJobProblem(c, nil, []alloc.Job{
		{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 4}},
		{ID: "b", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
	})
	a, _ := evenPolicy{}.Allocate(context.Background(), p)
	fmt.Println(a.GPUs, a.ValidateFor(p))

	short := alloc.NewAllocation([]string{"a"}, c)
	fmt.Println(short.ValidateFor(p))
	a.GPUs[1][1] = 1
	fmt.Println(a.ValidateFor(p))
	// Output:
	// [[1 0.5] [1 0.5]] <nil>
	// Allocation.GPUs: gpufair: mismatched dimensions: 1 rows for 2 jobs
	// Allocation.GPUs[V100]: gpufair: invalid value: 1.5 GPUs allocated of 1
}
