package sim

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Ideal replays workload w on cluster c as Gavel's "ideal baseline"
// (OSDI'20, section 7.5, Figure 15(b)) does: every job runs exactly as the
// fractional allocation of pol says, continuously, with no rounds, gangs
// or placement. Between two events (an arrival or a finish) job m
// progresses at Σ_k X_mk·T_mk, X_mk being its share of time on type k
// (pol's GPUs over its gang) and T_mk its rate on one server; pol is solved
// again over the jobs in the system at every event. It is the yardstick of
// a round mechanism: what the allocation promises, not what slots can give.
//
// Settings apply as for Run, except Round, Restart, Failures and Stall,
// which have no meaning here (Failures must be empty); jobs must not have
// phases (Job.Phase). The result's
// Round is 0, Rounds counts the allocations solved, and a job's Rounds the
// intervals it ran in. It returns an *gpufair.InputError for bad input, the
// policy's errors wrapped with the time of the solve, ErrStalled if jobs
// wait with no allocation and none will arrive, and ctx's error when it is
// done (checked at every event).
//
// Cost: one policy solve per arrival and finish.
func Ideal(ctx context.Context, w *Workload, c topology.Cluster, pol alloc.Policy, set *Settings) (*Result, error) {
	if pol == nil {
		return nil, gpufair.Invalid("Policy", "", gpufair.ErrEmpty, "no policy")
	}
	if set != nil && len(set.Failures) > 0 {
		return nil, gpufair.Invalid("Settings.Failures", "", gpufair.ErrValue, "the ideal baseline has no GPUs to fail")
	}
	if w == nil {
		return nil, gpufair.Invalid("Workload", "", gpufair.ErrEmpty, "nil workload")
	}
	r, err := newRun(w, c, nil, set)
	if err != nil {
		return nil, err
	}
	if r.phases != nil {
		return nil, gpufair.Invalid("Jobs.Phase", "", gpufair.ErrValue, "the ideal baseline has no barriers between phases")
	}
	r.name = pol.Name()
	r.set.Round = 0
	capa := alloc.Capacity{Types: r.types, Count: make([]float64, len(r.count))}
	for k, n := range r.count {
		capa.Count[k] = float64(n)
	}
	var theta, gpus []float64 // per active job: rate, GPUs held
	now := r.jobs[0].job.Arrival
	for r.finished < len(r.jobs) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if r.set.Horizon > 0 && now >= r.set.Horizon {
			break
		}
		r.admitIdeal(now)
		if len(r.active) == 0 {
			now = r.jobs[r.next].job.Arrival
			continue
		}
		if theta, gpus, err = r.solveIdeal(ctx, pol, capa, theta, gpus); err != nil {
			return nil, fmt.Errorf("sim: ideal allocation at %g s: %w", now, err)
		}
		r.rounds++
		// The next event: an arrival or the first finish.
		next := math.Inf(1)
		if r.next < len(r.jobs) {
			next = r.jobs[r.next].job.Arrival
		}
		for a, i := range r.active {
			if theta[a] > 0 {
				next = min(next, now+r.jobs[i].remaining/theta[a])
			}
		}
		if math.IsInf(next, 1) {
			return nil, fmt.Errorf("%w: %d jobs wait with no allocation at %g s", ErrStalled, len(r.active), now)
		}
		if r.set.Horizon > 0 {
			next = min(next, r.set.Horizon)
		}
		r.advanceIdeal(now, next, theta, gpus)
		now, r.end = next, next
		if r.set.StopWhenMeasured && r.measuredDone() {
			break
		}
	}
	return r.result(), nil
}

// admitIdeal makes the jobs that arrived by now active.
func (r *run) admitIdeal(now float64) {
	for r.next < len(r.jobs) && r.jobs[r.next].job.Arrival <= now {
		r.active = append(r.active, r.next)
		r.next++
	}
}

// solveIdeal solves pol over the active jobs and returns each one's rate
// and GPUs, reusing the slices' storage.
func (r *run) solveIdeal(ctx context.Context, pol alloc.Policy, capa alloc.Capacity, theta, gpus []float64) ([]float64, []float64, error) {
	jobs := make([]alloc.Job, len(r.active))
	for a, i := range r.active {
		j := r.jobs[i].job
		jobs[a] = j.Job
		jobs[a].Weight = j.weight()
		jobs[a].Rates = r.jobs[i].toldRates()
	}
	p, err := alloc.NewJobProblem(capa, nil, jobs)
	if err != nil {
		return nil, nil, err
	}
	x, err := pol.Allocate(ctx, p)
	if err == nil {
		// A policy of the caller's own may return any shape.
		err = x.ValidateFor(p)
	}
	if err != nil {
		return nil, nil, err
	}
	theta, gpus = slices.Grow(theta[:0], len(jobs))[:len(jobs)], slices.Grow(gpus[:0], len(jobs))[:len(jobs)]
	for a, j := range jobs {
		theta[a], gpus[a] = 0, 0
		run := r.jobs[r.active[a]].job.Rates // the rates the job runs at, whatever pol was told
		for k, g := range x.GPUs[a] {
			theta[a] += g / float64(j.Gang) * run[k]
			gpus[a] += g
		}
	}
	return theta, gpus, nil
}

// advanceIdeal runs the active jobs from now to next at their rates, and
// retires those that finish.
func (r *run) advanceIdeal(now, next float64, theta, gpus []float64) {
	dt := next - now
	keep := r.active[:0]
	for a, i := range r.active {
		js := &r.jobs[i]
		if theta[a] > 0 {
			if js.ran == 0 {
				js.start = now
			}
			js.ran++
			js.service += gpus[a] * dt
			js.remaining -= theta[a] * dt
			// The job that set next finishes exactly; rounding must not
			// leave it a sliver of work.
			if js.remaining <= 1e-9*js.job.Steps || now+(js.remaining+theta[a]*dt)/theta[a] <= next {
				js.remaining, js.finish = 0, next
				r.finished++
				continue
			}
		}
		keep = append(keep, i)
	}
	r.active = keep
}
