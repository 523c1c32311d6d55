package stride

import (
	"math"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
)

// The functions below are GavelSettings.Inputs for the policies of package
// alloc that take per-job inputs. A job of unknown total work counts as
// having unknownWork left.

// unknownWork is the work left assumed for a job that did not say its total
// work: long enough to rank it after every job that did.
const unknownWork = 1e15

// remaining returns each job's work left, at least a millionth of its work
// (a job done but not yet departed still has a positive remaining work, as
// the policies need).
func remaining(jobs []*round.Job) []float64 {
	r := make([]float64, len(jobs))
	for i, j := range jobs {
		r[i] = j.Remaining()
		if math.IsInf(r[i], 1) {
			r[i] = unknownWork
		}
		r[i] = max(r[i], j.Work*1e-6, 1e-9)
	}
	return r
}

// FIFOInputs returns alloc.FIFO over the jobs' arrival times.
func FIFOInputs(now float64, _ *alloc.Problem, jobs []*round.Job) alloc.Policy {
	arr := make([]float64, len(jobs))
	for i, j := range jobs {
		arr[i] = max(j.Arrival, 0)
	}
	return alloc.FIFO{Arrival: arr}
}

// ShortestJobFirstInputs returns alloc.ShortestJobFirst over the jobs' work
// left.
func ShortestJobFirstInputs(now float64, _ *alloc.Problem, jobs []*round.Job) alloc.Policy {
	return alloc.ShortestJobFirst{RemainingSteps: remaining(jobs)}
}

// MakespanInputs returns alloc.Makespan over the jobs' work left.
func MakespanInputs(now float64, _ *alloc.Problem, jobs []*round.Job) alloc.Policy {
	return alloc.Makespan{RemainingSteps: remaining(jobs)}
}

// FinishTimeFairnessInputs returns alloc.FinishTimeFairness: work left, the
// time since each job arrived, and the time its work done would have taken
// on a 1/n share of the healthy GPUs, n being the jobs in the system
// (Gavel accumulates this round by round; here the current n prices all
// past progress).
func FinishTimeFairnessInputs(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
	n := float64(len(jobs))
	el := make([]float64, len(jobs))
	iso := make([]float64, len(jobs))
	for i, j := range jobs {
		el[i] = max(now-j.Arrival, 0)
		if r := alloc.IsolatedRate(p.Jobs[i].Rates, j.Gang, p.Capacity, n); r > 0 {
			iso[i] = j.Done / r
		}
	}
	return alloc.FinishTimeFairness{RemainingSteps: remaining(jobs), Elapsed: el, IsolatedElapsed: iso}
}
