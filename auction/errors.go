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

// ErrNodeBudget reports a bid-table search stopped at TableSettings.MaxNodes
// before it could prove its allocation optimal. No allocation is returned
// with it.
var ErrNodeBudget = errors.New("auction: bid-table search exceeded its node budget")

// SearchError is a bid-table search that stopped early; Err is ErrNodeBudget.
type SearchError struct {
	Nodes int // nodes visited when it stopped
	Err   error
}

func (e *SearchError) Error() string {
	return fmt.Sprintf("auction: bid-table search stopped after %d nodes: %v", e.Nodes, e.Err)
}

func (e *SearchError) Unwrap() error { return e.Err }
