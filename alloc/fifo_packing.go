package alloc

import (
	"cmp"
	"context"
	"slices"

	"github.com/gpufair/gpufair"
)

// DefaultPackingThreshold is FIFOPacking's threshold when its Threshold is
// 0: Gavel's code's packing_threshold.
const DefaultPackingThreshold = 1.5

// FIFOPacking is the heterogeneity-aware FIFO with space sharing of Gavel's
// evaluation (OSDI'20, section 7.3: "the heterogeneity-aware version with
// space sharing"), as Gavel's code builds it (its FIFO policy in
// "packing" mode), where the paper gives no formulation of its own:
//
//  1. jobs in arrival order each take the GPU type on which they are
//     fastest among those with room for their gang, all of their time;
//     the first job that fits no type waits, and every job behind it;
//  2. then each waiting job, in arrival order, joins a job placed alone in
//     step 1, of its gang, on that job's type, where the two jobs'
//     co-located rates over their rates alone there add up to more than
//     Threshold: the placed job with the largest such sum. The first
//     waiting job that finds none stops the packing, so that no job
//     jumps the queue.
//
// The allocation is recomputed from scratch at each solve, as Gavel's code
// does in this mode: a job may move to another type when the jobs ahead of
// it change. Gavel's code gives every job one GPU; here a job takes its
// gang's GPUs of its type, and pairs are of one gang. Jobs with no rate on
// any type with room wait.
//
// Partners and Pairs of the result name jobs by ID. It is a baseline of
// Gavel's evaluation, not a fair mechanism.
type FIFOPacking struct {
	Arrival  []float64  // arrival time of each job; nil means job order
	JobTypes []string   // label of each job for Pairs; nil: job IDs
	Pairs    []PairRate // measured co-located rates, by label (SpaceSharing's table)
	// Threshold is the packing threshold; 0 means DefaultPackingThreshold,
	// and +Inf packs nothing (Gavel's code's FIFO in "perf" mode, its
	// heterogeneity-aware FIFO without space sharing).
	Threshold float64
}

// Name returns "fifo-packing".
func (FIFOPacking) Name() string { return "fifo-packing" }

// Allocate returns Solve's Allocation.
func (f FIFOPacking) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	return allocationOf(f.Solve(ctx, p))
}

// Solve returns the allocation with its pairs. It returns an
// *gpufair.InputError for an invalid problem, arrival times, labels, pair
// rates or threshold.
func (f FIFOPacking) Solve(ctx context.Context, p *Problem) (*SharingResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	threshold := f.Threshold
	if threshold == 0 {
		threshold = DefaultPackingThreshold
	}
	if !(threshold > 0) {
		return nil, gpufair.Invalid("FIFOPacking.Threshold", "", gpufair.ErrValue, "threshold %v", f.Threshold)
	}
	order := make([]int, len(p.Jobs))
	for i := range order {
		order[i] = i
	}
	if f.Arrival != nil {
		if err := checkAligned("FIFOPacking.Arrival", f.Arrival, p.JobIDs(), nonNegative); err != nil {
			return nil, err
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(f.Arrival[a], f.Arrival[b]) })
	}
	labels, rates, err := jobPairTable(p, f.JobTypes, f.Pairs, "FIFOPacking")
	if err != nil {
		return nil, err
	}
	free := slices.Clone(p.Capacity.Count)
	on := make([]int, len(p.Jobs)) // type index + 1; 0: waiting
	next := 0
	for ; next < len(order); next++ {
		i := order[next]
		best := -1
		for k, room := range free {
			if r := p.Throughputs.At(i, k); r > 0 && room >= float64(p.Jobs[i].Gang) && (best < 0 || r > p.Throughputs.At(i, best)) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		on[i] = best + 1
		free[best] -= float64(p.Jobs[i].Gang)
	}
	partner := make([]int, len(p.Jobs)) // partner + 1; 0: none
	for _, i := range order[next:] {
		host, hostSum := -1, threshold
		for _, h := range order[:next] {
			k := on[h] - 1
			if partner[h] != 0 || p.Jobs[h].Gang != p.Jobs[i].Gang || !(p.Throughputs.At(i, k) > 0) {
				continue
			}
			r, ok := jobPairRates(rates, labels[i], labels[h], k)
			if !ok {
				continue
			}
			// Gavel's code counts each job's co-located rate over its
			// rate alone, skipping a job that makes no progress.
			sum := 0.0
			for side, alone := range []float64{p.Throughputs.At(i, k), p.Throughputs.At(h, k)} {
				if r[side] > 0 {
					sum += r[side] / alone
				}
			}
			if sum > hostSum {
				host, hostSum = h, sum
			}
		}
		if host < 0 {
			break
		}
		partner[i], partner[host] = host+1, i+1
		on[i] = on[host]
	}
	return jobSharing(p, rates, labels, partner, func(i int) []float64 {
		x := make([]float64, p.Capacity.NumTypes())
		if on[i] > 0 {
			x[on[i]-1] = 1
		}
		return x
	}), nil
}
