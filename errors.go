package gpufair

import (
	"errors"
	"fmt"
)

// The sentinel errors every package of the library wraps, so that one
// errors.Is test works whichever package reported the problem. Errors about
// an input are *InputError values naming the input; errors that only one
// package can meet (an LP that is infeasible, an auction that did not
// converge) have sentinels of that package.
var (
	// ErrEmpty reports an input that must not be empty: no jobs, no GPU
	// types, a nil matrix.
	ErrEmpty = errors.New("gpufair: empty input")
	// ErrShape reports mismatched dimensions: a rate vector of the wrong
	// length, rows that do not match their labels.
	ErrShape = errors.New("gpufair: mismatched dimensions")
	// ErrValue reports a number out of its domain: NaN, ±Inf, negative, or
	// zero where a positive value is required.
	ErrValue = errors.New("gpufair: invalid value")
	// ErrUnknownID reports a job, tenant or GPU slot that is not known.
	ErrUnknownID = errors.New("gpufair: unknown identifier")
	// ErrDuplicate reports an identifier listed twice.
	ErrDuplicate = errors.New("gpufair: duplicate identifier")
	// ErrUnknownType reports a GPU type the cluster (or market, or
	// mechanism) does not have.
	ErrUnknownType = errors.New("gpufair: unknown GPU type")
	// ErrTooLarge reports a value beyond what it must fit in or what the
	// library supports: a gang larger than the GPUs it may use, or a
	// count, size, time or rate beyond a stated limit (alloc.MaxCount,
	// topology.MaxServerGPUs, sim.MaxJobs, ...).
	ErrTooLarge = errors.New("gpufair: too large")
	// ErrOrder reports an event or round whose time or index goes backwards.
	ErrOrder = errors.New("gpufair: out of order")
	// ErrSnapshot reports a snapshot that cannot be restored: corrupt, of
	// another version, or taken of another cluster or configuration.
	ErrSnapshot = errors.New("gpufair: snapshot cannot be restored")
)

// InputError names the input that was rejected: a field, optionally the
// identifier of the tenant, job, GPU type or slot it belongs to, and the
// reason, which wraps one of the sentinel errors of this package.
type InputError struct {
	Field string // e.g. "Capacity.Count", "Jobs.Gang", "Tenants.Weight"
	ID    string // the tenant, job or GPU type at fault; empty when the whole field is
	Err   error  // a sentinel error, wrapped with detail
}

// Error names the input field, the item (where there is one) and what is wrong with it.
func (e *InputError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s[%s]: %v", e.Field, e.ID, e.Err)
}

// Unwrap returns the reason, for errors.Is and errors.As.
func (e *InputError) Unwrap() error { return e.Err }

// Invalid returns an *InputError for field and id that wraps sentinel, with
// a message formatted from format and args.
func Invalid(field, id string, sentinel error, format string, args ...any) error {
	return &InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
