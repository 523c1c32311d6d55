package auction

import (
	"errors"
	"fmt"

	"github.com/gpufair/gpufair"
)

// ErrNotConverged reports a proportionally fair solve whose optimality
// certificate (Result.Gap) stayed above Settings.GapTol. The best point found
// is returned with it.
var ErrNotConverged = errors.New("auction: proportional-fairness solve did not certify optimality")

// ErrNoBid reports an agent that returned no bid for a round. The arbiter
// treats it as a bid for nothing and goes on.
var ErrNoBid = errors.New("auction: agent did not bid")

func badInput(field, id string, sentinel error, format string, args ...any) error {
	return &gpufair.InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
