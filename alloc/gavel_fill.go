package alloc

import (
	"cmp"
	"slices"
)

// fillIdle hands the GPUs that the time fractions x leave idle to jobs
// with time to spare, most urgent first (the order urgency gives, largest
// first, ties by index), each on the types it can use, fastest first. A
// job's throughput only rises, so no finish time or ρ does, and an optimum
// of Makespan or FinishTimeFairness stays one. Both policies minimise the
// largest finish time only, and their optima differ in what the other jobs
// get: the decomposed LP (MaxMin's cutting planes) meets each job's row
// exactly, leaving whatever no row needs idle (all 25 K80s of 75 GPUs on
// 150 of Gavel's jobs), where a vertex of the one LP usually uses every
// GPU. x must fit the cluster (timeFractionsToAllocation repairs it);
// fillIdle modifies it.
func fillIdle(p *Problem, x [][]float64, urgency []float64) {
	idle := append([]float64(nil), p.Capacity.Count...)
	for i, row := range x {
		for k, f := range row {
			idle[k] -= f * float64(p.Jobs[i].Gang)
		}
	}
	order := make([]int, len(x))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(urgency[b], urgency[a]) })
	types := make([]int, len(idle))
	for _, i := range order {
		g := float64(p.Jobs[i].Gang)
		left := 1.0
		for _, f := range x[i] {
			left -= f
		}
		rates := p.Throughputs.Row(i)
		for k := range types {
			types[k] = k
		}
		slices.SortStableFunc(types, func(a, b int) int { return cmp.Compare(rates[b], rates[a]) })
		for _, k := range types {
			if left <= dustTol || rates[k] <= 0 {
				break
			}
			if idle[k] <= dustTol*p.Capacity.Count[k] {
				continue
			}
			f := min(left, idle[k]/g)
			x[i][k] += f
			left -= f
			idle[k] -= f * g
		}
	}
}
