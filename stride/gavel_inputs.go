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

// RemainingSteps returns each job's work left (round.Job.Remaining), as
// the inputs below give it to the policies of package alloc: 1e15 steps
// for a job of unknown total work, at least a millionth of the job's work
// (a job done but not yet departed still has some left, as the policies
// need), and at most what takes half of alloc.MaxWorkTime at the job's
// isolated rate on the whole cluster, its rates capped at 1: within what
// the policies take, at the job's rates or at the rates of 1 that
// alloc.Agnostic gives them. p is the decision's problem, its jobs aligned
// with jobs; if they are not (or p is nil) it returns nil, which the
// policies refuse as an input of the wrong length.
func RemainingSteps(p *alloc.Problem, jobs []*round.Job) []float64 {
	if !aligned(p, jobs) {
		return nil
	}
	r := make([]float64, len(jobs))
	for i, j := range jobs {
		r[i] = j.Remaining()
		if math.IsInf(r[i], 1) {
			r[i] = unknownWork
		}
		r[i] = max(r[i], j.Work*1e-6, 1e-9)
		capped := make([]float64, len(p.Jobs[i].Rates))
		for k, x := range p.Jobs[i].Rates {
			capped[k] = min(x, 1)
		}
		if alone := alloc.IsolatedRate(capped, j.Gang, p.Capacity, 1); alone > 0 {
			r[i] = min(r[i], alloc.MaxWorkTime/2*alone)
		}
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
func ShortestJobFirstInputs(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
	return alloc.ShortestJobFirst{RemainingSteps: RemainingSteps(p, jobs)}
}

// MakespanInputs returns alloc.Makespan over the jobs' work left.
func MakespanInputs(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
	return alloc.Makespan{RemainingSteps: RemainingSteps(p, jobs)}
}

// FinishTimeFairnessInputs returns alloc.FinishTimeFairness: work left, the
// time since each job arrived, and the time its work done would have taken
// on a 1/n share of the healthy GPUs, n being the jobs in the system
// (Gavel accumulates this round by round; here the current n prices all
// past progress). Times beyond alloc.MaxWorkTime count as that. If p's jobs
// are not aligned with jobs, the policy has no inputs and refuses p.
func FinishTimeFairnessInputs(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
	if !aligned(p, jobs) {
		return alloc.FinishTimeFairness{}
	}
	n := float64(len(jobs))
	el := make([]float64, len(jobs))
	iso := make([]float64, len(jobs))
	for i, j := range jobs {
		el[i] = min(max(now-j.Arrival, 0), alloc.MaxWorkTime)
		if r := alloc.IsolatedRate(p.Jobs[i].Rates, j.Gang, p.Capacity, n); r > 0 {
			iso[i] = min(j.Done/r, alloc.MaxWorkTime)
		}
	}
	return alloc.FinishTimeFairness{RemainingSteps: RemainingSteps(p, jobs), Elapsed: el, IsolatedElapsed: iso}
}

// aligned reports whether p has one job per job of jobs: the inputs above
// index p.Jobs by the position in jobs.
func aligned(p *alloc.Problem, jobs []*round.Job) bool {
	return p != nil && len(p.Jobs) == len(jobs)
}
