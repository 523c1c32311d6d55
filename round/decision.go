package round

import (
	"math"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Placement runs Jobs (one job, or several that share the GPUs, as Gavel's
// space sharing does) on GPUs, all of Type, for the lease of its Decision.
type Placement struct {
	Jobs []alloc.JobID    `json:"jobs"`
	Type topology.GPUType `json:"type"`
	GPUs []topology.GPU   `json:"gpus"`
	// Renewed reports that each of the jobs held these slots until the
	// start of this lease: they go on without a checkpoint and restart.
	Renewed bool `json:"renewed,omitempty"`
	// Restart reports that the jobs ran before and resume here from a
	// checkpoint: on other slots, or after a pause. A placement of jobs
	// that never ran is neither Renewed nor Restart.
	Restart bool `json:"restart,omitempty"`
}

// Decision is one round's outcome: placements leased for [Start, End).
type Decision struct {
	Round      int         `json:"round"`
	Start      float64     `json:"start"`
	End        float64     `json:"end"`
	Placements []Placement `json:"placements"`
	// Partial reports that the time budget ran out before the mechanism
	// finished: the decision is the best it found, for example the
	// realisation of the allocation of an earlier solve.
	Partial bool `json:"partial,omitempty"`
}

// LeaseEnd returns now + length, the end of a lease of length seconds
// from now, or the first time after now that a float64 holds where length
// is below now's resolution: from 1e20 s on, a lease of six minutes ended
// where it began, and the ledger refused every decision.
func LeaseEnd(now, length float64) float64 {
	if end := now + length; end > now {
		return end
	}
	return math.Nextafter(now, math.Inf(1))
}

// Restarts returns the number of placements that restart from a
// checkpoint.
func (d *Decision) Restarts() int {
	n := 0
	for _, p := range d.Placements {
		if p.Restart {
			n++
		}
	}
	return n
}

// Renewals returns the number of placements that keep their slots.
func (d *Decision) Renewals() int {
	n := 0
	for _, p := range d.Placements {
		if p.Renewed {
			n++
		}
	}
	return n
}

// GPUs returns the number of GPUs the decision uses.
func (d *Decision) GPUs() int {
	n := 0
	for _, p := range d.Placements {
		n += len(p.GPUs)
	}
	return n
}
