package sim

import (
	"context"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// A Scheduler decides, round by round, which active jobs run on which GPUs.
// It is where a mechanism of the library (a fractional policy realised by
// Gavel's rounds, Themis' auction with leases, ...) plugs into the
// simulator. A Scheduler may keep state between rounds; it serves one run.
type Scheduler interface {
	// Name names the mechanism in reports.
	Name() string
	// Schedule returns the placements of round st.Round. It must not keep
	// or modify st, whose slices the simulator reuses.
	Schedule(ctx context.Context, st *State) ([]Placement, error)
}

// State is what a Scheduler sees at the start of a round.
type State struct {
	Round  int     // round index, increasing (rounds without jobs are skipped)
	Now    float64 // start of the round, seconds
	Length float64 // round length, seconds
	// Cluster is the physical cluster and Types the workload's GPU types:
	// every Job's Rates follow Types.
	Cluster topology.Cluster
	Types   []topology.GPUType
	// Active lists the jobs arrived by Now and not finished, in (Arrival,
	// ID) order.
	Active []Active
	// Arrived and Departed list the jobs that became active, or finished,
	// since the previous round the Scheduler saw.
	Arrived, Departed []alloc.JobID
}

// Active is a job in the system and its progress.
type Active struct {
	Job       *Job    // the job, read-only
	Remaining float64 // steps left
	Service   float64 // GPU-seconds received so far (Σ gang × seconds run)
	Ran       int     // rounds the job has run
	// Last is the GPU slots the job ran on in the previous round, nil if it
	// did not run then.
	Last []topology.GPU
}

// Placement runs a job for one round on GPU slots of one type: exactly
// Job.Gang slots, none used by another placement of the round.
type Placement struct {
	Job  alloc.JobID
	GPUs []topology.GPU
}
