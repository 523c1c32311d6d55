package round

import (
	"fmt"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Kind says what an Event reports.
type Kind int

// The kinds of events.
const (
	// Arrived: Job (with its Rates over the scheduler's GPU types) was
	// submitted; Work is its total work, 0 if unknown.
	Arrived Kind = iota + 1
	// Departed: Job.ID finished or was withdrawn.
	Departed
	// Progressed: Job.ID has done Work units of work since it arrived.
	Progressed
	// Failed: GPU stopped working.
	Failed
	// Repaired: GPU works again.
	Repaired
	// Measured: Job.ID's rates were measured anew; Job.Rates holds them.
	Measured
)

var kindNames = [...]string{Arrived: "arrived", Departed: "departed", Progressed: "progressed", Failed: "failed", Repaired: "repaired", Measured: "measured"}

// String returns the kind's name, as in JSON.
func (k Kind) String() string {
	if k < Arrived || k > Measured {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// MarshalText writes the kind's name.
func (k Kind) MarshalText() ([]byte, error) {
	if k < Arrived || k > Measured {
		return nil, gpufair.Invalid("Event.Kind", "", gpufair.ErrValue, "unknown event kind %d", int(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText reads a kind's name.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return gpufair.Invalid("Event.Kind", "", gpufair.ErrValue, "unknown event kind %q", b)
}

// Event is something that happened in the cluster at Time (seconds on the
// caller's clock). Which fields it uses depends on its Kind; build events
// with Arrive, Depart, Progress, Fail, Repair and Measure.
type Event struct {
	Kind Kind         `json:"kind"`
	Time float64      `json:"time"`
	Job  alloc.Job    `json:"job,omitzero"`
	Work float64      `json:"work,omitempty"`
	GPU  topology.GPU `json:"gpu,omitzero"`
}

// Arrive reports job j submitted at time t, with work units of work to do
// (0 if unknown). j.Rates follow the scheduler's GPU types.
func Arrive(t float64, j alloc.Job, work float64) Event {
	return Event{Kind: Arrived, Time: t, Job: j, Work: work}
}

// Depart reports job id finished or withdrawn at time t.
func Depart(t float64, id alloc.JobID) Event {
	return Event{Kind: Departed, Time: t, Job: alloc.Job{ID: id}}
}

// Progress reports that job id has done done units of work by time t. Done
// may pass the job's total work (a last step longer than planned): the job
// then has none left (Job.Remaining is 0) until it departs.
func Progress(t float64, id alloc.JobID, done float64) Event {
	return Event{Kind: Progressed, Time: t, Job: alloc.Job{ID: id}, Work: done}
}

// Fail reports GPU g failed at time t.
func Fail(t float64, g topology.GPU) Event { return Event{Kind: Failed, Time: t, GPU: g} }

// Repair reports GPU g working again at time t.
func Repair(t float64, g topology.GPU) Event { return Event{Kind: Repaired, Time: t, GPU: g} }

// Measure reports job id's rates measured anew at time t, over the
// scheduler's GPU types. Unlike an arrival's, the rates may leave the job
// no type it can run on (0 everywhere, say, out of memory on each): it then
// waits until it departs or is measured again.
func Measure(t float64, id alloc.JobID, rates []float64) Event {
	return Event{Kind: Measured, Time: t, Job: alloc.Job{ID: id, Rates: rates}}
}
