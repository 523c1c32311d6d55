package sim

import (
	"errors"
)

// Errors of a run that depend on the scheduler's behaviour, and of trace
// files; test with errors.Is. Invalid values get *gpufair.InputError.
var (
	// ErrPlacement reports a Scheduler that placed a job that is not
	// active, placed one twice, gave it the wrong number of GPUs or GPUs of
	// several types, or used a GPU slot twice or one that does not exist.
	ErrPlacement = errors.New("sim: invalid placement")
	// ErrStalled reports a run in which jobs waited for Settings.Stall
	// rounds in a row while the Scheduler placed nothing.
	ErrStalled = errors.New("sim: scheduler placed no job while jobs waited")
	// ErrTrace reports a trace line that cannot be read.
	ErrTrace = errors.New("sim: malformed trace")
)
