package alloc

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// The Gavel policies of this package take their per-job inputs (remaining
// steps, elapsed times, arrival times, SLOs) as slices aligned with
// Problem.Jobs: entry i belongs to Jobs[i], exactly as row i of
// Problem.Throughputs does. Per-GPU-type inputs (costs) are aligned with
// Capacity.Types.

// valueRule says which values a per-job or per-type input accepts.
type valueRule int

const (
	positive    valueRule = iota // finite and > 0
	nonNegative                  // finite and ≥ 0
	positiveInf                  // > 0, +Inf allowed (an SLO that does not bind)
	duration                     // in [0, MaxWorkTime]
)

// MaxWorkTime is the longest time, in the unit of the throughputs' time,
// that a policy takes a job's work left to need with the cluster to itself
// (its RemainingSteps over its best throughput), and the longest Elapsed
// and IsolatedElapsed of FinishTimeFairness. 1e30 seconds are 3e22 years;
// far beyond them (1e300 steps at 3e-12 a second) the policies' arithmetic
// overflows.
const MaxWorkTime = 1e30

// checkWorkTimes returns an *gpufair.InputError naming the first job whose
// steps (in p's units) would take it longer than MaxWorkTime alone.
func (p *Problem) checkWorkTimes(field string, steps []float64) error {
	for i, s := range steps {
		if best := p.bestAlone(i); best > 0 && !(s/best <= MaxWorkTime) {
			return gpufair.Invalid(field, string(p.Jobs[i].ID), gpufair.ErrValue, "work left would take %v alone, more than MaxWorkTime", s/best)
		}
	}
	return nil
}

// checkAligned validates an input slice aligned with ids (job IDs or GPU
// type names): one entry per id, each obeying rule. field names the input in
// the error, for example "Makespan.RemainingSteps".
func checkAligned(field string, v []float64, ids []string, rule valueRule) error {
	if len(v) != len(ids) {
		return gpufair.Invalid(field, "", gpufair.ErrShape, "%d values for %d entries", len(v), len(ids))
	}
	for i, x := range v {
		ok := !math.IsNaN(x)
		switch rule {
		case positive:
			ok = ok && x > 0 && !math.IsInf(x, 0)
		case nonNegative:
			ok = ok && x >= 0 && !math.IsInf(x, 0)
		case positiveInf:
			ok = ok && x > 0
		case duration:
			ok = ok && x >= 0 && x <= MaxWorkTime
		}
		if !ok {
			return gpufair.Invalid(field, ids[i], gpufair.ErrValue, "value %v is out of range", x)
		}
	}
	return nil
}

// typeNames returns the cluster's GPU types as strings, for error messages.
func (p *Problem) typeNames() []string {
	s := make([]string, len(p.Capacity.Types))
	for k, t := range p.Capacity.Types {
		s[k] = string(t)
	}
	return s
}

// bestAlone returns job i's largest effective throughput when it has the
// cluster to itself: all of its time on its fastest type (Gavel's
// X^fastest), spilling onto the next fastest types when its gang needs more
// GPUs than a type has (X_ik ≤ Count_k/Gang_i). Ties between types keep
// column order.
func (p *Problem) bestAlone(i int) float64 {
	rates := p.Throughputs.Row(i)
	order := make([]int, len(rates))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return rates[order[a]] > rates[order[b]] })
	g := float64(p.Jobs[i].Gang)
	left, best := 1.0, 0.0
	for _, k := range order {
		if rates[k] == 0 || left <= 0 {
			break
		}
		x := min(left, p.Capacity.Count[k]/g)
		best += rates[k] * x
		left -= x
	}
	return best
}

// requireRunnable returns an gpufair.InputError naming the first job whose
// throughput row is all zero: policies whose objective is a duration or a
// ratio to a job's own rate cannot serve such a job.
func (p *Problem) requireRunnable(policy string) error {
	for i, j := range p.Jobs {
		if p.bestAlone(i) == 0 {
			return gpufair.Invalid("Throughputs", string(j.ID), gpufair.ErrValue, "%s: the job runs on no GPU type (all rates zero)", policy)
		}
	}
	return nil
}

// isolatedThroughputs returns each job's throughput under the isolated
// allocation of Themis and Gavel §4.2: 1/n of the cluster for each of the n
// jobs, that is Count_k/n GPUs of every type k, or the time fractions
// X_ik = Count_k/(n·Gang_i), scaled down together when they add up to more
// than the job's whole time. The allocation is feasible, so it bounds every
// policy that minimises a ratio to it.
func (p *Problem) isolatedThroughputs() (rates []float64, x [][]float64) {
	n := float64(len(p.Jobs))
	rates = make([]float64, len(p.Jobs))
	x = make([][]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		row := make([]float64, len(p.Capacity.Count))
		var sum float64
		for k, c := range p.Capacity.Count {
			row[k] = c / (n * float64(j.Gang))
			sum += row[k]
		}
		for k := range row {
			if sum > 1 {
				row[k] /= sum
			}
			rates[i] += p.Throughputs.At(i, k) * row[k]
		}
		x[i] = row
	}
	return rates, x
}

// gavelSolve solves m and names the policy in any error, which keeps
// wrapping the lp sentinel (errors.Is(err, lp.ErrInfeasible) holds).
func gavelSolve(ctx context.Context, policy string, m *lp.Model, set *lp.Settings) (*lp.Solution, error) {
	sol, err := solveSecondOpinion(ctx, m, set)
	if err != nil {
		return nil, fmt.Errorf("alloc: %s: %w", policy, err)
	}
	return sol, nil
}

// throughputsOf returns each job's effective throughput Σ_k T_ik·X_ik under
// time fractions x.
func (p *Problem) throughputsOf(x [][]float64) []float64 {
	r := make([]float64, len(x))
	for i, row := range x {
		for k, f := range row {
			r[i] += p.Throughputs.At(i, k) * f
		}
	}
	return r
}

// IsolatedRate returns the rate of a job, gang GPUs at a time with rates[k]
// on the k-th type of c, on a 1/n share of every type of c: Gavel's
// isolated throughput, the denominator of finish-time fairness (OSDI'20,
// section 4.2). The share gives the job a time fraction count_k/(n·gang) on
// type k, scaled down to a total of 1 when the fractions add up to more (a
// job cannot run on two types at once). n below 1 counts as 1. It has no
// error to return: it returns 0, as for a job that runs nowhere, if rates
// is not one rate per type of c, a rate is NaN, infinite or negative, gang
// is below 1 or n is NaN; callers that need to tell those apart validate
// the job first (ValidateJobs).
func IsolatedRate(rates []float64, gang int, c Capacity, n float64) float64 {
	if len(rates) != len(c.Count) || gang < 1 || math.IsNaN(n) {
		return 0 // a short rates indexed past its end; gang 0 gave NaN
	}
	for _, r := range rates {
		if !(r >= 0) || math.IsInf(r, 0) {
			return 0 // a NaN rate gave NaN
		}
	}
	n = math.Max(n, 1)
	g := float64(gang)
	var sum, rate float64
	for k, count := range c.Count {
		x := count / (n * g)
		sum += x
		rate += x * rates[k]
	}
	if sum > 1 {
		rate /= sum
	}
	return rate
}
