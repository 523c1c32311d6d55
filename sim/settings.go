package sim

import (
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// DefaultRound is Gavel's round length, 6 minutes (OSDI'20, section 3.2:
// rounds of about 6 minutes approximate the ideal allocation well).
const DefaultRound = 360.0

// defaultStall is Settings.Stall's default.
const defaultStall = 1000

// Settings tune a run. A nil *Settings means the zero value, which is
// usable: 6-minute rounds, no restart cost, no failures, every job
// measured, the run going on until every job finishes.
type Settings struct {
	// Round is the round length in seconds; 0 means DefaultRound. The
	// simulator asks the scheduler for a decision every Round seconds. A
	// run takes at most 2^52 rounds: Run refuses, with an
	// *gpufair.InputError wrapping gpufair.ErrTooLarge, a workload with an
	// arrival beyond them, or a job it must finish (every job, or the
	// measured ones with StopWhenMeasured) that cannot finish within them
	// or Horizon at its fastest rate alone, and stops one still going
	// after them with that error. The error names Settings.Round when the
	// time would fit in 2^52 rounds of DefaultRound, and the job's Arrival
	// or Steps when it would not.
	Round float64
	// Restart is the time in seconds a job loses at the start of a lease
	// in which it resumes from a checkpoint: a placement not marked
	// round.Placement.Renewed of a job that ran before, whether marked
	// Restart or not. A job placed for the first time loses it only
	// beside such a job in a placement marked Restart (as
	// round.Ledger.Commit marks it); a placement of jobs none of which ran
	// costs nothing, whatever its flags. 0 means free preemption, as in
	// Gavel's simulator.
	Restart float64
	// Colocated, if not nil, gives the rates of jobs a and b while they
	// share the GPUs of one placement of type t (Gavel's measured
	// co-located throughputs: see GavelColocation), for the whole lease
	// even if the other job finishes first; ok false means no
	// measurement. Jobs sharing GPUs without one (or more than two at once)
	// split the time equally, each at its own rate.
	Colocated func(t topology.GPUType, a, b *Job) (rateA, rateB float64, ok bool)
	// Failures are GPU slots that stop working for a while. Each failure
	// is reported to the scheduler (round.Fail, round.Repair) at the next
	// round; a placement on a GPU that fails mid-round stops at the
	// failure.
	Failures []Failure
	// MeasureFrom and MeasureTo select the jobs, by index in (Arrival, ID)
	// order, that Result.Summary reports on: [MeasureFrom, MeasureTo).
	// MeasureTo 0 means up to the last job. Gavel measures jobs 4,000 to
	// 5,000 of a continuous trace, to see the steady state.
	MeasureFrom, MeasureTo int
	// StopWhenMeasured ends the run as soon as every measured job has
	// finished; later jobs keep arriving until then, so the load stays
	// steady (Gavel's method). Unfinished jobs are reported as such.
	StopWhenMeasured bool
	// Horizon stops the run at the first round starting at or after this
	// time, in seconds; 0 means no limit.
	Horizon float64
	// Stall is the number of rounds in a row in which jobs wait and none
	// progresses before Run gives up with ErrStalled; 0 means 1000. A
	// round counts whether the scheduler placed no job or placed only jobs
	// that could not progress (a gang spread over servers at a spread rate
	// of 0, a lease lost to Restart, work too large for a step to change
	// it).
	Stall int
	// Progress, if not nil, is called after every round. It must be
	// cheap; the simulator does not throttle it.
	Progress func(Progress)
	// Profiled, if not nil, gives the rates the scheduler is told when job
	// j arrives, one per Workload type, in place of j.Rates, at which the
	// job still runs: a scheduler that allocates from profiles measured
	// with error (ProfileNoise). Ideal's policy is told them too. Each rate
	// must be finite and non-negative, and positive exactly where j.Rates
	// is; Run and Ideal call it once per job, before the first round.
	Profiled func(j *Job) []float64
}

// ProfileNoise returns a Settings.Profiled that tells the scheduler each
// positive rate of a job times 1+ε, ε uniform in [−spread, spread] and drawn
// afresh for every rate, from seed and the job's ID: a job is told the same
// rates in every run with the same seed, whatever the order of the calls.
// Profiling runs of one job on one GPU were seen to agree within 1% where
// the GPU bounds the job and to spread up to 27% where the host does
// (docs/benchmarks/oef.md). spread must be in [0, 1). The function returns
// nil, no rates, for a nil job.
func ProfileNoise(spread float64, seed uint64) (func(j *Job) []float64, error) {
	if !(spread >= 0 && spread < 1) {
		return nil, gpufair.Invalid("ProfileNoise", "", gpufair.ErrValue, "spread %v is not in [0, 1)", spread)
	}
	return func(j *Job) []float64 {
		if j == nil { // it panicked
			return nil
		}
		h := fnv.New64a()
		h.Write([]byte(j.ID))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		told := slices.Clone(j.Rates)
		for k, r := range told {
			if r > 0 {
				told[k] = r * (1 + spread*(2*rng.Float64()-1))
			}
		}
		return told
	}, nil
}

// Failure is a GPU slot out of service from At until Repair, in seconds;
// Repair 0 means it is never repaired. The failures of one slot must not
// overlap.
type Failure struct {
	GPU        topology.GPU
	At, Repair float64
}

// Progress is a run's state after a round, for progress reports.
type Progress struct {
	Round    int
	Now      float64 // end of the round, seconds
	Finished int     // jobs finished so far
	Jobs     int     // jobs in the workload
	Active   int     // jobs in the system
}
