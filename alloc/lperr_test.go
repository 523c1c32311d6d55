package alloc_test

import (
	"errors"

	"github.com/gpufair/gpufair/lp"
)

// isLPError reports whether err wraps one of lp's sentinel errors.
func isLPError(err error) bool {
	for _, s := range []error{lp.ErrInfeasible, lp.ErrUnbounded, lp.ErrNumerical, lp.ErrIterationLimit, lp.ErrTimeLimit, lp.ErrViolation, lp.ErrInvalidModel} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
