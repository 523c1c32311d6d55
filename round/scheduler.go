package round

import (
	"context"
)

// Scheduler is a mechanism on the round contract. A production scheduler
// and the simulator drive it the same way: Apply the events since the last
// call, then Decide the next round; Snapshot the state to survive a
// restart, and Restore it into a Scheduler built with the same cluster and
// settings. A Scheduler is not safe for concurrent use: a service that
// snapshots from another goroutine than the one that decides must
// serialise the calls.
type Scheduler interface {
	// Name names the mechanism.
	Name() string
	// Apply checks every event, then applies them in order. A refused
	// call returns an *gpufair.InputError and changes nothing.
	Apply(events ...Event) error
	// Decide returns the decision for the round that starts at now, within
	// the mechanism's time budget: when the budget runs out it returns the
	// best decision found, marked Partial. It returns an error, and changes
	// nothing, for a time out of order (gpufair.ErrOrder) or a ctx already
	// done.
	Decide(ctx context.Context, now float64) (*Decision, error)
	// Snapshot returns the whole state as JSON.
	Snapshot() ([]byte, error)
	// Restore replaces the state with a snapshot. It returns an error
	// wrapping gpufair.ErrSnapshot, and changes nothing, for a corrupt
	// snapshot, or one of another mechanism, cluster or set of GPU types.
	Restore(snapshot []byte) error
}
