package stride

import (
	"errors"

	"github.com/gpufair/gpufair"
)

// Sentinel errors, wrapped in *gpufair.InputError; test with errors.Is.
var (
	// ErrTickets reports tickets that are zero, negative, NaN or infinite.
	ErrTickets = errors.New("stride: tickets must be positive and finite")
)

func checkTickets(field, id string, t float64) error {
	if !(t > 0) || t > maxTickets {
		return gpufair.Invalid(field, id, ErrTickets, "%v tickets", t)
	}
	return nil
}

// maxTickets bounds tickets away from +Inf so that strides stay positive.
const maxTickets = 1e300
