package ftf

import (
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// Placement summarises an allocation as rho sees it: how many GPUs, and how
// spread out they are (which decides the slowdown S(G)).
type Placement struct {
	GPUs     int
	Locality topology.Locality
}

// SingleJob is an app with one training job: the inputs of Themis'
// equation 1. Times are in seconds.
type SingleJob struct {
	Elapsed    float64 // T_current - T_start, queueing included
	ItersLeft  float64 // iterations still to run
	ItersTotal float64 // iterations in all, for T_independent
	IterTime   float64 // serial (one-GPU) seconds per iteration
	DemandMax  int     // job_demand_max: the most GPUs the job can use
	// ClusterGPUs is R_C, the GPUs of the whole cluster.
	ClusterGPUs int
	// Contention is N_avg, the average number of apps sharing the cluster
	// over the app's life; T_independent is the finish time in a 1/N_avg
	// share.
	Contention float64
	// Slowdown is the job's S(G) per locality; the zero value means
	// topology.DefaultSlowdown().
	Slowdown topology.Slowdown
}

// Validate reports a negative, NaN or infinite time or iteration count, a
// zero serial iteration time, demand or cluster size, a contention below
// zero, more iterations left than in total, and an invalid slowdown.
func (j SingleJob) Validate() error {
	switch {
	case !finiteNonNeg(j.Elapsed):
		return badInput("SingleJob.Elapsed", "", gpufair.ErrValue, "%v is not finite and non-negative", j.Elapsed)
	case !finiteNonNeg(j.ItersLeft):
		return badInput("SingleJob.ItersLeft", "", gpufair.ErrValue, "%v is not finite and non-negative", j.ItersLeft)
	case !positiveFinite(j.ItersTotal) || j.ItersLeft > j.ItersTotal:
		return badInput("SingleJob.ItersTotal", "", gpufair.ErrValue, "%v is not positive, finite and at least ItersLeft", j.ItersTotal)
	case !positiveFinite(j.IterTime):
		return badInput("SingleJob.IterTime", "", gpufair.ErrValue, "%v is not positive and finite", j.IterTime)
	case j.DemandMax < 1:
		return badInput("SingleJob.DemandMax", "", gpufair.ErrValue, "%d is below 1", j.DemandMax)
	case j.ClusterGPUs < 1:
		return badInput("SingleJob.ClusterGPUs", "", gpufair.ErrValue, "%d is below 1", j.ClusterGPUs)
	case !positiveFinite(j.Contention):
		return badInput("SingleJob.Contention", "", gpufair.ErrValue, "%v is not positive and finite", j.Contention)
	}
	if j.Slowdown != (topology.Slowdown{}) {
		if err := j.Slowdown.Validate(); err != nil {
			return badInput("SingleJob.Slowdown", "", gpufair.ErrValue, "%v", err)
		}
	}
	return nil
}

func slowdownOr(s topology.Slowdown) topology.Slowdown {
	if s == (topology.Slowdown{}) {
		return topology.DefaultSlowdown()
	}
	return s
}

// Independent returns T_independent = T_cluster · N_avg with
// T_cluster = iter_total · iter_time / min(R_C, job_demand_max), or NaN for
// a j that Validate refuses (a cluster of 0 GPUs gave +Inf).
func (j SingleJob) Independent() float64 {
	if j.Validate() != nil {
		return math.NaN()
	}
	return j.independent()
}

// independent is Independent for a j that Validate takes.
func (j SingleJob) independent() float64 {
	return j.ItersTotal * j.IterTime / float64(min(j.ClusterGPUs, j.DemandMax)) * j.Contention
}

// Shared returns T_shared = elapsed + iter_left · iter_time(G), with
// iter_time(G) = iter_time_serial · S(G) / min(|G|, job_demand_max). With no
// GPUs and work left it is +Inf: the job never finishes. It is NaN for a j
// that Validate refuses or a negative GPU count (a NaN iter_left on no GPUs
// gave +Inf, a negative one a time before now); a Locality beyond
// CrossRack counts as CrossRack (topology.Slowdown.At).
func (j SingleJob) Shared(p Placement) float64 {
	if p.GPUs < 0 || j.Validate() != nil {
		return math.NaN()
	}
	return j.shared(p)
}

// shared is Shared for a j that Validate takes and p.GPUs not negative.
func (j SingleJob) shared(p Placement) float64 {
	if j.ItersLeft == 0 {
		return j.Elapsed
	}
	if p.GPUs <= 0 {
		return math.Inf(1)
	}
	s := slowdownOr(j.Slowdown).At(p.Locality)
	return j.Elapsed + j.ItersLeft*j.IterTime*s/float64(min(p.GPUs, j.DemandMax))
}

// Rho returns equation 1's rho(G) = T_shared(G) / T_independent, +Inf for
// an empty placement while work is left. It validates j first.
func (j SingleJob) Rho(p Placement) (float64, error) {
	if err := j.Validate(); err != nil {
		return 0, err
	}
	if err := p.Validate(); err != nil {
		return 0, err
	}
	return ratio("SingleJob", j.shared(p), j.independent(), p)
}

// ratio returns rho = T_shared/T_independent for the app named by field,
// refusing times and ratios outside float64's range: T_independent of 0
// or +Inf, T_shared of +Inf on GPUs (without GPUs, work left never
// finishes, and +Inf is the answer), or a finite T_shared whose rho
// overflows (3 s elapsed over a T_independent of 2.6e-310, with no work
// left), which would give NaN, 0 or +Inf for an app that finishes.
func ratio(field string, shared, independent float64, p Placement) (float64, error) {
	if !(independent > 0) || math.IsInf(independent, 1) {
		return 0, badInput(field, "", gpufair.ErrTooLarge, "T_independent %v is outside float64's range", independent)
	}
	r := shared / independent
	if math.IsInf(r, 1) && (p.GPUs > 0 || !math.IsInf(shared, 1)) {
		return 0, badInput(field, "", gpufair.ErrTooLarge, "T_shared %v on %d GPUs over T_independent %v overflows float64", shared, p.GPUs, independent)
	}
	return r, nil
}

// Validate reports a negative GPU count or an unknown locality.
func (p Placement) Validate() error {
	if p.GPUs < 0 {
		return badInput("Placement.GPUs", "", gpufair.ErrValue, "%d is negative", p.GPUs)
	}
	if !p.Locality.Valid() {
		return badInput("Placement.Locality", "", gpufair.ErrValue, "%d is not a locality level", int(p.Locality))
	}
	return nil
}
