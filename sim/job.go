package sim

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Job is one training job of a workload: the library's job (ID, owner,
// gang, weight and Rates, which follow Workload.Types) and what a trace adds
// to it. Here an empty Owner means the job is a tenant of its own, and
// Weight 0 means 1.
type Job struct {
	alloc.Job
	// Kind says what the job trains, for reports (Gavel's job type, such
	// as "ResNet-50 (batch size 64)").
	Kind string
	// Arrival is when the job is submitted, in seconds from the start of
	// the trace.
	Arrival float64
	// Steps is the work to do: training steps to completion.
	Steps float64
	// Spread[k] is the throughput when the gang's GPUs span several servers
	// (Gavel's unconsolidated throughput); nil means Rates.
	Spread []float64
	// Phase puts a barrier between an owner's jobs, as successive halving
	// has between its rounds of trials (Themis, NSDI'20, section 4.3.2): a
	// job of phase p arrives only once every job of its owner in a lower
	// phase has finished, at the later of that finish and Arrival. Jobs of
	// an owner's lowest phase arrive at Arrival; 0 everywhere means no
	// barrier.
	Phase int
}

// weight returns the job's weight with 0 read as 1.
func (j *Job) weight() float64 {
	if j.Weight == 0 {
		return 1
	}
	return j.Weight
}

// owner returns the job's tenant, the job itself when Owner is empty.
func (j *Job) owner() alloc.TenantID {
	if j.Owner == "" {
		return alloc.TenantID(j.ID)
	}
	return j.Owner
}

// rate returns the job's throughput on type k, spread over servers or not.
func (j *Job) rate(k int, spread bool) float64 {
	if spread && j.Spread != nil {
		return j.Spread[k]
	}
	return j.Rates[k]
}

// fits reports whether the job's gang fits the GPUs of some type it runs
// on, count[k] being the GPUs of type k.
func (j *Job) fits(count []int) bool {
	for k, n := range count {
		if j.Rates[k] > 0 && j.Gang <= n {
			return true
		}
	}
	return false
}

// Workload is a trace of jobs over a set of GPU types: every Job's Rates
// and Spread follow Types.
type Workload struct {
	Types []topology.GPUType
	Jobs  []Job
}

// WithType returns a copy of w whose jobs can also run on GPU type t, to
// ask what a GPU type the trace was not measured on would change: an H100
// row measured with examples/gpu-probe, say, and completed by
// MeasuredRates. rate(j) gives job j's steps per second on t: on one
// server (0: not on t), and with its gang spread over servers, which
// counts only for the jobs that have spread rates (Job.Spread). The jobs'
// work (Steps) is unchanged. It returns an *gpufair.InputError if w or rate
// is nil, t is empty or already one of w's types, or a rate is not finite
// and non-negative.
func (w *Workload) WithType(t topology.GPUType, rate func(j *Job) (one, spread float64)) (*Workload, error) {
	switch {
	case w == nil:
		return nil, gpufair.Invalid("Workload", "", gpufair.ErrEmpty, "nil workload")
	case rate == nil:
		return nil, gpufair.Invalid("rate", string(t), gpufair.ErrEmpty, "no rate function")
	case t == "":
		return nil, gpufair.Invalid("GPUType", "", gpufair.ErrEmpty, "no name for the new type")
	case slices.Contains(w.Types, t):
		return nil, gpufair.Invalid("GPUType", string(t), gpufair.ErrDuplicate, "already a type of the workload")
	}
	out := &Workload{Types: append(slices.Clone(w.Types), t), Jobs: slices.Clone(w.Jobs)}
	for i := range out.Jobs {
		j := &out.Jobs[i]
		r, spread := rate(j)
		switch {
		case !finiteNonNeg(r):
			return nil, gpufair.Invalid("Rates", string(j.ID), gpufair.ErrValue, "rate %v on %s", r, t)
		case j.Spread != nil && !finiteNonNeg(spread):
			return nil, gpufair.Invalid("Spread", string(j.ID), gpufair.ErrValue, "spread rate %v on %s", spread, t)
		}
		j.Rates = append(slices.Clone(j.Rates), r)
		if j.Spread != nil {
			j.Spread = append(slices.Clone(j.Spread), spread)
		}
	}
	return out, nil
}

// Validate reports no types or jobs, duplicate or empty IDs and types, gangs
// below 1, weights, arrivals, steps or rates that are negative, NaN or
// infinite, steps that are zero, a negative phase, rate vectors of the wrong
// length, and a job that can run on no type. Errors are *gpufair.InputError values naming the
// field and the job.
func (w *Workload) Validate() error {
	if w == nil {
		return gpufair.Invalid("Workload", "", gpufair.ErrEmpty, "nil workload")
	}
	if len(w.Types) == 0 {
		return gpufair.Invalid("Workload.Types", "", gpufair.ErrEmpty, "no GPU types")
	}
	for k, t := range w.Types {
		if t == "" || slices.Index(w.Types[:k], t) >= 0 {
			return gpufair.Invalid("Workload.Types", string(t), gpufair.ErrDuplicate, "type %d is empty or listed twice", k)
		}
	}
	if len(w.Jobs) == 0 {
		return gpufair.Invalid("Workload.Jobs", "", gpufair.ErrEmpty, "no jobs")
	}
	seen := make(map[alloc.JobID]bool, len(w.Jobs))
	for i := range w.Jobs {
		if err := w.validateJob(&w.Jobs[i], i, seen); err != nil {
			return err
		}
	}
	return nil
}

func (w *Workload) validateJob(j *Job, i int, seen map[alloc.JobID]bool) error {
	id := string(j.ID)
	switch {
	case j.ID == "":
		return gpufair.Invalid("Jobs.ID", "", gpufair.ErrValue, "job %d has an empty ID", i)
	case seen[j.ID]:
		return gpufair.Invalid("Jobs.ID", id, gpufair.ErrDuplicate, "listed twice")
	case j.Gang < 1:
		return gpufair.Invalid("Jobs.Gang", id, gpufair.ErrValue, "gang %d is below 1", j.Gang)
	case !finiteNonNeg(j.Weight):
		return gpufair.Invalid("Jobs.Weight", id, gpufair.ErrValue, "weight %v", j.Weight)
	case !finiteNonNeg(j.Arrival):
		return gpufair.Invalid("Jobs.Arrival", id, gpufair.ErrValue, "arrival %v", j.Arrival)
	case !finiteNonNeg(j.Steps) || j.Steps == 0:
		return gpufair.Invalid("Jobs.Steps", id, gpufair.ErrValue, "steps %v is not positive and finite", j.Steps)
	case j.Phase < 0:
		return gpufair.Invalid("Jobs.Phase", id, gpufair.ErrValue, "phase %d is negative", j.Phase)
	}
	seen[j.ID] = true
	if err := w.validateRates("Jobs.Rates", id, j.Rates); err != nil {
		return err
	}
	if j.Spread != nil {
		if err := w.validateRates("Jobs.Spread", id, j.Spread); err != nil {
			return err
		}
	}
	if !slices.ContainsFunc(j.Rates, func(r float64) bool { return r > 0 }) {
		return gpufair.Invalid("Jobs.Rates", id, gpufair.ErrValue, "the job runs on no GPU type")
	}
	return nil
}

func (w *Workload) validateRates(field, id string, r []float64) error {
	if len(r) != len(w.Types) {
		return gpufair.Invalid(field, id, gpufair.ErrShape, "%d rates for %d GPU types", len(r), len(w.Types))
	}
	for k, x := range r {
		if !finiteNonNeg(x) {
			return gpufair.Invalid(field, id, gpufair.ErrValue, "rate %v on %q", x, w.Types[k])
		}
	}
	return nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 0) } // false for NaN

// byArrival orders jobs by (Arrival, ID), the order of a run.
func byArrival(a, b *Job) int {
	if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}
