package stride

import (
	"errors"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
)

// Sentinel errors, wrapped in *alloc.InputError; test with errors.Is.
var (
	// ErrTooLarge reports a job whose gang does not fit the server or the
	// cluster (of its GPU type) it is meant to run on.
	ErrTooLarge = errors.New("stride: job larger than the GPUs it may use")
	// ErrTickets reports tickets that are zero, negative, NaN or infinite.
	ErrTickets = errors.New("stride: tickets must be positive and finite")
	// ErrUnknownType reports a GPU type the cluster does not have.
	ErrUnknownType = errors.New("stride: unknown GPU type")
	// ErrQuantum reports a quantum or round index that does not increase.
	ErrQuantum = errors.New("stride: quantum index must increase")
)

func inputErr(field, id string, sentinel error, format string, args ...any) error {
	return &alloc.InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

func checkTickets(field, id string, t float64) error {
	if !(t > 0) || t > maxTickets {
		return inputErr(field, id, ErrTickets, "%v tickets", t)
	}
	return nil
}

// maxTickets bounds tickets away from +Inf so that strides stay positive.
const maxTickets = 1e300
