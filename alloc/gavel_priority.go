package alloc

import (
	"context"
	"slices"
	"sort"

	"github.com/gpufair/gpufair/lp"
)

// FIFO is Gavel's heterogeneity-aware first-in-first-out policy (§4.2):
// with jobs ranked by arrival (rank 0 first) among M jobs,
//
//	maximise_X  Σ_m Gang_m·(M − rank_m)·throughput(m, X)/best_m
//
// over Gavel's time fractions X, where best_m = max_k T_mk is the job's
// throughput on its fastest type (Gavel's throughput(m, X^fastest)).
// Gavel's objective has no Gang_m factor; it is added (as
// §4.1 does for the fairness objectives) so that the value of a GPU-second
// falls with arrival rank whatever the gangs: without it a later 1-GPU job
// outbids an earlier 8-GPU job for the same GPUs.
//
// Arrival[m] is job m's arrival time, aligned with Problem.Jobs; nil means
// the order of Problem.Jobs. Ties keep job order. Jobs with a zero
// throughput row get nothing.
//
// Cost: one LP of jobs×types columns and jobs+types rows.
//
// Properties: on one GPU type, earlier jobs are served first (a job gets
// less than all of its time only when every later job gets nothing). On
// several types it trades order for speed: the linear weights let a later
// job take a type on which it is much faster, relative to its own best,
// than an earlier job (a heterogeneity-aware FIFO, not strict priority).
// Not fair in any of the axioms' senses.
type FIFO struct {
	Arrival []float64 // arrival time of each job; nil means job order
}

// Name returns "fifo".
func (FIFO) Name() string { return "fifo" }

// Allocate returns the FIFO allocation.
func (pol FIFO) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	key := pol.Arrival
	if key == nil {
		key = make([]float64, len(p.Jobs))
	} else if err := checkAligned("FIFO.Arrival", key, p.JobIDs(), nonNegative); err != nil {
		return nil, err
	}
	return priorityAllocate(ctx, pol.Name(), p, func(i int) float64 { return key[i] })
}

// ShortestJobFirst is Gavel's shortest-job-first policy (§4.2). Gavel
// writes it as minimising the duration of the shortest job,
// min_X min_m S_m/throughput(m, X), which fixes the allocation of one job
// only; the sound reading, used here, applies the same rule to every job in
// turn: jobs are ranked by their shortest possible duration S_m/alone_m
// (RemainingSteps over the throughput with the cluster to itself: all of
// its time on its fastest type, spilling to the next types when its gang
// exceeds a type's count) and served by the rank-weighted objective of FIFO,
//
//	maximise_X  Σ_m Gang_m·(M − rank_m)·throughput(m, X)/best_m.
//
// RemainingSteps is aligned with Problem.Jobs and must be positive. Ties
// keep job order; jobs with a zero throughput row rank last and get nothing.
//
// Properties: those of FIFO with rank by length: on one GPU type the
// shortest job gets all it can use first (Gavel's objective exactly), then
// the next; on several types the order yields to large speed differences.
type ShortestJobFirst struct {
	RemainingSteps []float64
}

// Name returns "shortest-job-first".
func (ShortestJobFirst) Name() string { return "shortest-job-first" }

// Allocate returns the shortest-job-first allocation.
func (pol ShortestJobFirst) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	q, _, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	if err := checkAligned("ShortestJobFirst.RemainingSteps", pol.RemainingSteps, p.JobIDs(), positive); err != nil {
		return nil, err
	}
	// The order comes from the rates as given, where equal remaining
	// times are exact ties; the LP from the normalised ones.
	return priorityAllocate(ctx, pol.Name(), q, func(i int) float64 {
		if b := p.bestAlone(i); b > 0 {
			return pol.RemainingSteps[i] / b
		}
		return lp.Inf
	})
}

// priorityRanks returns each job's rank when jobs are sorted by key,
// ascending, ties kept in job order.
// Each key is computed once: the comparisons call it n·log n times, and
// shortest-job-first's key reads a row of rates (4 s at 100,000 jobs).
func priorityRanks(n int, key func(i int) float64) []int {
	order := make([]int, n)
	keys := make([]float64, n)
	for i := range order {
		order[i], keys[i] = i, key(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return keys[order[a]] < keys[order[b]] })
	rank := make([]int, n)
	for r, i := range order {
		rank[i] = r
	}
	return rank
}

// rankWeights returns the weight of each job's throughput in the
// rank-weighted objective, Gang·(M − rank)/best with jobs ranked by key and
// best the job's fastest rate; 0 for a job that runs nowhere.
func rankWeights(p *Problem, key func(i int) float64) []float64 {
	n := len(p.Jobs)
	rank := priorityRanks(n, key)
	w := make([]float64, n)
	for i, j := range p.Jobs {
		if best := slices.Max(p.Throughputs.Row(i)); best > 0 {
			w[i] = float64(j.Gang) * float64(n-rank[i]) / best
		}
	}
	return w
}

// priorityAllocate solves the rank-weighted LP shared by FIFO and
// ShortestJobFirst.
func priorityAllocate(ctx context.Context, name string, p *Problem, key func(i int) float64) (*Allocation, error) {
	m := lp.NewModel(lp.Maximize)
	v := addTimeFractions(m, p)
	for i, w := range rankWeights(p, key) {
		if w == 0 {
			continue
		}
		for _, t := range v.throughput(i, w) {
			m.SetObjective(t.Var, t.Coef)
		}
	}
	sol, err := gavelSolve(ctx, name, m, nil)
	if err != nil {
		return nil, err
	}
	return v.allocation(sol), nil
}
