package sim

import (
	"errors"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
)

// Errors of a run that depend on the scheduler's behaviour, and of trace
// files; test with errors.Is. Invalid values get *alloc.InputError.
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

// inputErr returns an *alloc.InputError naming the field and the job (or
// type) at fault, wrapping sentinel.
func inputErr(field, id string, sentinel error, format string, args ...any) error {
	return &alloc.InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
