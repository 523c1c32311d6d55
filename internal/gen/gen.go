package gen

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// TypeName returns the name of the k-th generated GPU type: "T0", "T1", ...
func TypeName(k int) topology.GPUType { return topology.GPUType(fmt.Sprint("T", k)) }

// Cluster generates a valid cluster of 1 to maxTypes GPU types named by
// TypeName, each with 1 to 64 GPUs (whole numbers: real clusters).
func Cluster(maxTypes int) *rapid.Generator[alloc.Capacity] {
	return rapid.Custom(func(t *rapid.T) alloc.Capacity {
		m := rapid.IntRange(1, maxTypes).Draw(t, "types")
		c := alloc.Capacity{Types: make([]topology.GPUType, m), Count: make([]float64, m)}
		for k := range m {
			c.Types[k] = TypeName(k)
			c.Count[k] = float64(rapid.IntRange(1, 64).Draw(t, "count"))
		}
		return c
	})
}

// Rate generates a rate between 0.1 and 10, on a log scale so that small
// and large ratios are both common.
func Rate() *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		return math.Exp(rapid.Float64Range(math.Log(0.1), math.Log(10)).Draw(t, "log rate"))
	})
}

// Rates generates a rows×types matrix of rates from Rate. With zeros, each
// cell is 0 with probability about 1/5 (a job that cannot run on a type),
// but every row keeps at least one positive rate.
func Rates(rows, types int, zeros bool) *rapid.Generator[[][]float64] {
	return rapid.Custom(func(t *rapid.T) [][]float64 {
		out := make([][]float64, rows)
		for i := range out {
			out[i] = make([]float64, types)
			keep := rapid.IntRange(0, types-1).Draw(t, "positive type")
			for k := range out[i] {
				if zeros && k != keep && rapid.IntRange(0, 4).Draw(t, "zero") == 0 {
					continue
				}
				out[i][k] = Rate().Draw(t, "rate")
			}
		}
		return out
	})
}

// OrderedSpeedups generates a rows×types speedup matrix whose speedup ratios
// are consistently ordered (the assumption of OEF's Theorem 5.2, ERRATA.md):
// column 0 is 1 (the slowest type), every row is non-decreasing, and for
// every k the ratio w_i^{k+1}/w_i^k is non-decreasing in i, so that users are
// sorted by how much they gain from faster types.
func OrderedSpeedups(rows, types int) *rapid.Generator[[][]float64] {
	return rapid.Custom(func(t *rapid.T) [][]float64 {
		out := make([][]float64, rows)
		for i := range out {
			out[i] = make([]float64, types)
			out[i][0] = 1
		}
		ratio := make([]float64, rows)
		for k := 1; k < types; k++ {
			for i := range ratio {
				ratio[i] = rapid.Float64Range(1, 4).Draw(t, "ratio")
			}
			slices.Sort(ratio)
			for i := range out {
				out[i][k] = out[i][k-1] * ratio[i]
			}
		}
		return out
	})
}

// Users generates 1 to maxUsers users "u0", "u1", ... with weights 1 (half
// of the time) or drawn from [0.5, 4].
func Users(maxUsers int) *rapid.Generator[[]alloc.Tenant] {
	return rapid.Custom(func(t *rapid.T) []alloc.Tenant {
		n := rapid.IntRange(1, maxUsers).Draw(t, "users")
		users := make([]alloc.Tenant, n)
		for i := range users {
			users[i] = alloc.Tenant{ID: alloc.TenantID(fmt.Sprint("u", i)), Weight: Weight().Draw(t, "weight")}
		}
		return users
	})
}

// Weight generates a positive weight: 1 half of the time, otherwise from
// [0.5, 4].
func Weight() *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		if rapid.Bool().Draw(t, "unit weight") {
			return 1
		}
		return rapid.Float64Range(0.5, 4).Draw(t, "weight")
	})
}

// Jobs generates 1 to maxJobs jobs "j0", "j1", ... owned by users drawn from
// users (every user owns at least one job when maxJobs allows), with gangs
// 1, 2, 4 or 8 and weights from Weight.
func Jobs(users []alloc.Tenant, maxJobs int) *rapid.Generator[[]alloc.Job] {
	return rapid.Custom(func(t *rapid.T) []alloc.Job {
		n := rapid.IntRange(max(1, min(len(users), maxJobs)), max(1, maxJobs)).Draw(t, "jobs")
		jobs := make([]alloc.Job, n)
		for i := range jobs {
			owner := i
			if i >= len(users) {
				owner = rapid.IntRange(0, len(users)-1).Draw(t, "owner")
			}
			jobs[i] = alloc.Job{
				ID:     alloc.JobID(fmt.Sprint("j", i)),
				Owner:  users[owner].ID,
				Gang:   rapid.SampledFrom([]int{1, 1, 1, 2, 4, 8}).Draw(t, "gang"),
				Weight: Weight().Draw(t, "job weight"),
			}
		}
		return jobs
	})
}

// ProblemSizes bounds the problems Problem generates.
type ProblemSizes struct {
	Types, Users, Jobs int
	// Zeros allows zero throughputs (every job keeps one positive rate).
	Zeros bool
}

// Problem generates a valid *alloc.Problem within the sizes: a cluster,
// users, their jobs, and a jobs×types throughput matrix from Rates.
func Problem(s ProblemSizes) *rapid.Generator[*alloc.Problem] {
	return rapid.Custom(func(t *rapid.T) *alloc.Problem {
		c := Cluster(s.Types).Draw(t, "cluster")
		users := Users(s.Users).Draw(t, "users")
		jobs := Jobs(users, s.Jobs).Draw(t, "jobs")
		rates := Rates(len(jobs), len(c.Types), s.Zeros).Draw(t, "throughputs")
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = string(j.ID)
		}
		tp, err := speedup.New(ids, c.Types, rates)
		if err != nil {
			t.Fatalf("gen: invalid throughputs: %v", err)
		}
		p, err := alloc.NewProblem(c, users, jobs, tp)
		if err != nil {
			t.Fatalf("gen: invalid problem: %v", err)
		}
		return p
	})
}

// Allocation generates an allocation of c to rows labelled "r0", "r1", ...
// that is feasible for c: for each type, rows get shares of its count that
// sum to at most 1 (exactly 1 about half of the time: work-conserving), and
// some cells are 0.
func Allocation(c alloc.Capacity, rows int) *rapid.Generator[*alloc.Allocation] {
	return rapid.Custom(func(t *rapid.T) *alloc.Allocation {
		labels := make([]string, rows)
		for i := range labels {
			labels[i] = fmt.Sprint("r", i)
		}
		a := alloc.NewAllocation(labels, c)
		full := rapid.Bool().Draw(t, "work-conserving")
		for k, n := range c.Count {
			parts := make([]float64, rows+1)
			var total float64
			for i := range parts {
				if i == rows && full {
					continue
				}
				if rapid.IntRange(0, 3).Draw(t, "zero share") > 0 {
					parts[i] = rapid.Float64Range(0, 1).Draw(t, "share")
				}
				total += parts[i]
			}
			if total == 0 {
				continue
			}
			for i := range rows {
				a.GPUs[i][k] = n * parts[i] / total
			}
		}
		return a
	})
}

// Linear returns rates as Linear valuations.
func Linear(rates [][]float64) []alloc.Linear {
	out := make([]alloc.Linear, len(rates))
	for i, r := range rates {
		out[i] = alloc.Linear(r)
	}
	return out
}

// Valuations returns rates as Linear valuations behind the Valuation interface.
func Valuations(rates [][]float64) []alloc.Valuation {
	out := make([]alloc.Valuation, len(rates))
	for i, r := range rates {
		out[i] = alloc.Linear(r)
	}
	return out
}
