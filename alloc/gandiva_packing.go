package alloc

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/gpufair/gpufair"
)

// JobPair is two jobs that share one gang of GPUs.
type JobPair struct{ A, B JobID }

// GandivaPacking is the baseline that Gavel's evaluation calls Gandiva's
// ad-hoc space sharing (OSDI'20, section 7.3: Figures 9 and 10 and the
// makespan results), as Gavel's code builds it from Gandiva's packing:
// blind to GPU types, every job combination (a job alone, or two jobs
// sharing their gang) gets an equal share of every type, and pairs are
// drawn at random and kept while they improve performance. Each solve:
//
//  1. a pair of Keep (the pairs of the allocation in force) stays if both
//     jobs are still in the problem, with one gang, and the pair improves
//     performance (below); the jobs of the others are free;
//  2. if the jobs' gangs fit the cluster's GPUs, nothing is packed: every
//     job is a combination of its own;
//  3. otherwise the free jobs are paired at random: as many draws as there
//     are free jobs, each of two distinct free jobs, which pair if their
//     gangs are equal and they fit in memory together (positive measured
//     co-located rates for both on every type on which both run); jobs
//     left over run alone;
//  4. each of the m combinations gets Count_k/(m·Gang) of the time on
//     type k, scaled down where those add up to more than 1.
//
// A pair improves performance where, averaged over the GPU types on which
// both jobs run, its two jobs' co-located rates, each over the job's rate
// alone, add up to at least 1: packing beats taking turns. A type without
// positive measured rates for both counts 0. Gavel's code adds the sums
// over the types instead of averaging them, so that with three types a
// pair stays while it keeps a third of its work, and drops a pair without
// rates on any one type; the paper says the exploration goes on "until a
// combination that improves performance is found", which the average
// reads. SumOverTypes applies the code's test.
//
// Pairs are tested at the next solve, as Gandiva measures a packing after
// it has run: a pair drawn now runs until then. Pairs that do not fit are
// never drawn: Gavel's code draws them and drops them at the next solve,
// but such a pair makes no progress, and where no job departs or arrives
// there is no next solve (on Gavel's continuous-multiple trace every job
// could wait so for good), while Gandiva itself finds a pair out of memory
// as soon as it starts it.
//
// Where nothing is packed (step 2), Gavel's code keeps its pairs aside for
// the next time the cluster is oversubscribed; here the allocation in
// force holds the pairs, so they end, and are drawn again.
//
// The draw is a hash of Seed, Draw, Keep and the free jobs' IDs: the same
// inputs give the same allocation. Throughput counts a pair with no
// measurement on a type at half of each job's rate there (taking turns),
// as package sim runs it.
//
// It is a baseline, not a fair mechanism: it is not sharing-incentive,
// envy-free or Pareto-efficient in general.
type GandivaPacking struct {
	JobTypes []string   // label of each job for Pairs, aligned with Problem.Jobs; nil: job IDs
	Pairs    []PairRate // measured co-located rates, by label (SpaceSharing's table)
	Keep     []JobPair  // the pairs in force; pairs naming jobs not in the problem are dropped
	Seed     uint64
	// Draw varies the draw between solves of one problem: a round
	// mechanism passes its count of rounds (stride.Gavel does), so that
	// pairs just undone are not drawn again the same way at every solve.
	Draw uint64
	// SumOverTypes keeps a pair while its sums over the types, added up,
	// reach 1 (Gavel's code), instead of their mean.
	SumOverTypes bool
}

// Name returns "gandiva-packing".
func (GandivaPacking) Name() string { return "gandiva-packing" }

// Allocate returns Solve's Allocation.
func (g GandivaPacking) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	return allocationOf(g.Solve(ctx, p))
}

// Solve returns the allocation with its pairs: Partners name each job's
// partner by job ID (Labels are the job IDs), and Pairs list each pair's
// time by type, A and B being job IDs. It returns an *gpufair.InputError
// for an invalid problem, labels or pair rates (as SpaceSharing), or a
// Keep that pairs a job with itself or lists a job twice.
func (g GandivaPacking) Solve(ctx context.Context, p *Problem) (*SharingResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	labels, rates, err := jobPairTable(p, g.JobTypes, g.Pairs, "GandivaPacking")
	if err != nil {
		return nil, err
	}
	index := make(map[JobID]int, len(p.Jobs))
	for i, j := range p.Jobs {
		index[j.ID] = i
	}
	partner := make([]int, len(p.Jobs)) // partner + 1; 0: none
	kept := make(map[JobID]bool, 2*len(g.Keep))
	for _, kp := range g.Keep {
		if kp.A == kp.B {
			return nil, gpufair.Invalid("GandivaPacking.Keep", string(kp.A), gpufair.ErrValue, "a job paired with itself")
		}
		for _, id := range []JobID{kp.A, kp.B} {
			if kept[id] {
				return nil, gpufair.Invalid("GandivaPacking.Keep", string(id), gpufair.ErrDuplicate, "the job is in two pairs")
			}
			kept[id] = true
		}
		a, okA := index[kp.A]
		b, okB := index[kp.B]
		if okA && okB && p.Jobs[a].Gang == p.Jobs[b].Gang && improves(p, rates, labels, a, b, g.SumOverTypes) {
			partner[a], partner[b] = b+1, a+1
		}
	}
	gangs, gpus := 0.0, 0.0
	for _, j := range p.Jobs {
		gangs += float64(j.Gang)
	}
	for _, n := range p.Capacity.Count {
		gpus += n
	}
	if gangs <= gpus {
		clear(partner)
	} else {
		g.draw(p, partner, func(a, b int) bool { return fits(p, rates, labels, a, b) })
	}
	return g.result(p, rates, labels, partner), nil
}

// improves reports whether jobs a and b gain by sharing their gang (see
// GandivaPacking; sum: GandivaPacking.SumOverTypes).
func improves(p *Problem, rates map[pairKey][2]float64, labels []string, a, b int, sum bool) bool {
	gains := pairGains(p, rates, labels, a, b)
	total := 0.0
	for _, x := range gains {
		total += x
	}
	if sum { // the code drops a pair with no rate on a type
		return len(gains) > 0 && !slices.Contains(gains, 0) && total >= 1
	}
	return len(gains) > 0 && total >= float64(len(gains))
}

// fits reports whether jobs a and b have positive measured co-located
// rates on every type on which both run.
func fits(p *Problem, rates map[pairKey][2]float64, labels []string, a, b int) bool {
	return !slices.Contains(pairGains(p, rates, labels, a, b), 0)
}

// pairGains returns, for each type on which jobs a and b both run, their
// co-located rates over their rates alone, added up; 0 where the pair has
// no positive measured rates.
func pairGains(p *Problem, rates map[pairKey][2]float64, labels []string, a, b int) []float64 {
	var gains []float64
	for k := range p.Capacity.Types {
		ta, tb := p.Throughputs.At(a, k), p.Throughputs.At(b, k)
		if !(ta > 0 && tb > 0) {
			continue
		}
		gain := 0.0
		if r, ok := jobPairRates(rates, labels[a], labels[b], k); ok && r[0] > 0 && r[1] > 0 {
			gain = r[0]/ta + r[1]/tb
		}
		gains = append(gains, gain)
	}
	return gains
}

// draw pairs the free jobs (partner 0) at random, as step 3 of
// GandivaPacking says, where fit allows.
func (g GandivaPacking) draw(p *Problem, partner []int, fit func(a, b int) bool) {
	var free []int
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatUint(g.Seed, 10) + "/" + strconv.FormatUint(g.Draw, 10)))
	for _, kp := range g.Keep {
		h.Write([]byte{1})
		h.Write([]byte(kp.A + "+" + kp.B))
	}
	for i, j := range p.Jobs {
		if partner[i] == 0 {
			free = append(free, i)
			h.Write([]byte{0})
			h.Write([]byte(j.ID))
		}
	}
	rng := rand.New(rand.NewPCG(g.Seed, h.Sum64()))
	for range len(free) {
		if len(free) < 2 {
			return
		}
		x := rng.IntN(len(free))
		y := rng.IntN(len(free) - 1)
		if y >= x {
			y++
		}
		a, b := free[x], free[y]
		if p.Jobs[a].Gang != p.Jobs[b].Gang || !fit(a, b) {
			continue
		}
		partner[a], partner[b] = b+1, a+1
		free = slices.DeleteFunc(free, func(i int) bool { return i == a || i == b })
	}
}

// result gives each combination its equal share (step 4 of
// GandivaPacking).
func (g GandivaPacking) result(p *Problem, rates map[pairKey][2]float64, labels []string, partner []int) *SharingResult {
	combos := 0
	for i := range p.Jobs {
		if partner[i] == 0 || partner[i]-1 > i {
			combos++
		}
	}
	return jobSharing(p, rates, labels, partner, func(i int) []float64 {
		x := make([]float64, p.Capacity.NumTypes())
		sum := 0.0
		for k, n := range p.Capacity.Count {
			x[k] = n / (float64(combos) * float64(p.Jobs[i].Gang))
			sum += x[k]
		}
		if sum > 1 {
			for k := range x {
				x[k] /= sum
			}
		}
		return x
	})
}
