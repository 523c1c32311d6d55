package alloc

import (
	"errors"
	"fmt"
)

// Sentinel errors wrapped by InputError; test with errors.Is.
var (
	ErrEmpty     = errors.New("alloc: empty input")
	ErrShape     = errors.New("alloc: mismatched dimensions")
	ErrValue     = errors.New("alloc: invalid value") // NaN, Inf, negative or zero where positive is required
	ErrUnknownID = errors.New("alloc: unknown identifier")
	ErrDuplicate = errors.New("alloc: duplicate identifier")
)

// InputError names the input that was rejected: a field, optionally the
// identifier of the user, job or GPU type it belongs to, and the reason.
type InputError struct {
	Field string // e.g. "Cluster.Count", "Jobs.Gang", "Users.Weight"
	ID    string // the user, job or GPU type at fault; empty when the whole field is
	Err   error  // one of the sentinel errors above, wrapped with detail
}

func (e *InputError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("%s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("%s[%s]: %v", e.Field, e.ID, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

func inputErr(field, id string, sentinel error, format string, args ...any) error {
	return &InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
