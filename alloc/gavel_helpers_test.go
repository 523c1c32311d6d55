package alloc

import (
	"context"
	"fmt"
	"math"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// gavelTol is the tolerance for comparing the Gavel policies' objective
// values with hand-computed or brute-force optima: solver vertices are
// accurate to about 1e-9 and the repair moves them by no more than that.
const gavelTol = 1e-6

// fataler is what the helpers need of *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// gavelProblem builds a job-level Problem: jobs j0, j1, … with the given
// gangs (nil: all 1) and weight 1, over types t0, t1, ….
func gavelProblem(t fataler, count []float64, gangs []int, rates [][]float64) *Problem {
	t.Helper()
	types := make([]topology.GPUType, len(count))
	for k := range types {
		types[k] = topology.GPUType(fmt.Sprintf("t%d", k))
	}
	return mmProblem(t, types, count, rates, gangs, nil)
}

// genGavelProblem draws a small valid Problem: 1–3 types with 1–4 GPUs,
// 1–maxJobs jobs with gangs 1–2 and integer-ish rates in [0, 10]; when
// runnable, every job has a positive rate somewhere.
func genGavelProblem(maxJobs int, runnable bool) *rapid.Generator[*Problem] {
	return rapid.Custom(func(t *rapid.T) *Problem {
		nt := rapid.IntRange(1, 3).Draw(t, "types")
		nj := rapid.IntRange(1, maxJobs).Draw(t, "jobs")
		count := make([]float64, nt)
		for k := range count {
			count[k] = float64(rapid.IntRange(1, 4).Draw(t, "count"))
		}
		gangs := make([]int, nj)
		rates := make([][]float64, nj)
		for i := range rates {
			gangs[i] = rapid.IntRange(1, 2).Draw(t, "gang")
			rates[i] = make([]float64, nt)
			for k := range rates[i] {
				rates[i][k] = float64(rapid.IntRange(0, 10).Draw(t, "rate"))
			}
			if runnable && rates[i][0] == 0 {
				rates[i][0] = 1
			}
		}
		return gavelProblem(t, count, gangs, rates)
	})
}

// genSteps draws n positive step counts.
func genSteps(t *rapid.T, n int, label string) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = float64(rapid.IntRange(1, 100).Draw(t, label))
	}
	return s
}

// checkGavelFeasible fails unless a is a valid allocation of p's cluster
// whose rows are p's jobs and each job's time Σ_k GPUs_k/Gang is at most 1.
func checkGavelFeasible(t fataler, p *Problem, a *Allocation) {
	t.Helper()
	if err := a.Validate(p.Capacity); err != nil {
		t.Fatalf("infeasible allocation: %v", err)
	}
	if len(a.Rows) != len(p.Jobs) {
		t.Fatalf("%d rows for %d jobs", len(a.Rows), len(p.Jobs))
	}
	for i, j := range p.Jobs {
		if a.Rows[i] != string(j.ID) {
			t.Fatalf("row %d is %q, want %q", i, a.Rows[i], j.ID)
		}
		var time float64
		for _, g := range a.GPUs[i] {
			time += g / float64(j.Gang)
		}
		if time > 1+FeasTol {
			t.Fatalf("job %s runs %v of the time", j.ID, time)
		}
	}
}

// throughputs returns each job's effective throughput under a.
func throughputs(p *Problem, a *Allocation) []float64 { return a.Utilities(p.Valuations()) }

// feasibleWith reports whether some allocation gives every job m at least
// need[m] throughput: the probe of the bisections below. It solves
// max λ s.t. throughput_m ≥ λ·need_m, λ ≤ 2, which is always feasible (gonum's
// simplex does not always recognise an infeasible LP), and checks λ ≥ 1.
func feasibleWith(t fataler, p *Problem, need []float64) bool {
	t.Helper()
	m := lp.NewModel(lp.Maximize)
	v := addTimeFractions(m, p)
	lambda := m.AddVar("lambda", 0, 2, 1)
	for i := range p.Jobs {
		m.AddConstraint("need", append(v.throughput(i, 1), lp.Term{Var: lambda, Coef: -need[i]}), lp.GE, 0)
	}
	sol, err := lp.Solve(context.Background(), m, nil)
	if err != nil {
		t.Fatalf("feasibility LP: %v", err)
	}
	return sol.Value(lambda) >= 1-1e-12
}

// bisect returns the smallest x in [lo, hi] for which ok(x) holds, to a
// relative width of 1e-9, assuming ok is monotone and ok(hi).
func bisect(lo, hi float64, ok func(float64) bool) float64 {
	for hi-lo > 1e-9*hi {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func nanValue() float64 { return math.NaN() }
