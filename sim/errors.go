package sim

import (
	"errors"

	"github.com/gpufair/gpufair/round"
)

// Errors of a run that depend on the scheduler's behaviour, and of trace
// files; test with errors.Is. Invalid values get *gpufair.InputError.
var (
	// ErrPlacement is round.ErrPlacement: a decision that breaks the
	// contract. Run reports a decision for another time, a placement of
	// a job not in the system or placed twice, of the wrong number of
	// GPUs, on GPUs not all of its type, of a type the job cannot run on,
	// on a slot used twice, failed or outside the cluster, one marked
	// Renewed on slots its jobs did not hold for the whole previous round,
	// and one marked both Renewed and Restart.
	ErrPlacement = round.ErrPlacement
	// ErrStalled reports a run in which jobs waited for Settings.Stall
	// rounds in a row while none progressed.
	ErrStalled = errors.New("sim: no job progressed while jobs waited")
	// ErrTrace reports a trace line that cannot be read.
	ErrTrace = errors.New("sim: malformed trace")
)
