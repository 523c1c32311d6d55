package auction

import (
	"context"
	"fmt"
	"time"

	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// Agent is the arbiter's view of an app: Themis' AGENT (section 4.2.2),
// co-located with the app's own scheduler. held[s] counts the GPUs of server
// s (of the arbiter's cluster) the app holds at now.
//
// An agent that errors, returns an invalid table or returns no rows bids
// for nothing that round; the arbiter records why in Round.Errors and goes
// on. The arbiter calls agents one after another; an agent that blocks
// should honour ctx.
type Agent interface {
	// Bid answers an offer with the app's bid table (step 3): rho for rows
	// of the offer's GPUs on top of held, and RhoNone for winning nothing.
	// Tables are validated with ftf.BidTable.Validate.
	Bid(ctx context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error)
	// Rho returns the app's current rho if it keeps held until it finishes.
	// The arbiter asks only when the app lost GPUs since its last bid, so
	// that bid's table no longer prices what it holds (see Arbiter).
	Rho(ctx context.Context, now time.Time, c topology.Cluster, held []int) (float64, error)
}

// RhoAgent is an Agent for an app whose rho the caller can compute for any
// placement: Bid is ftf.NewTable over the offer with Table's bounds, Rho is
// RhoAt of what the app holds.
type RhoAgent struct {
	// RhoAt returns rho at now for a placement the app would keep until
	// it finishes, such as ftf.SingleJob.Rho with Elapsed brought up to now.
	RhoAt func(now time.Time, p ftf.Placement) (float64, error)
	// Table bounds the bid tables; nil means ftf's defaults.
	Table *ftf.TableSettings
}

// Bid returns ftf.NewTable(offer, held, RhoAt at now, a.Table).
func (a RhoAgent) Bid(_ context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error) {
	return ftf.NewTable(offer, held, func(p ftf.Placement) (float64, error) { return a.RhoAt(now, p) }, a.Table)
}

// Rho returns RhoAt(now, the placement of held).
func (a RhoAgent) Rho(_ context.Context, now time.Time, c topology.Cluster, held []int) (float64, error) {
	return a.RhoAt(now, ftf.Placement{GPUs: total(held), Locality: c.LocalityOfCounts(held)})
}

// AgentError is an agent's failure in a round, reported in Round.Errors.
type AgentError struct {
	App string
	Op  string // "Bid" or "Rho"
	Err error
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("auction: agent %q: %s: %v", e.App, e.Op, e.Err)
}

// Unwrap returns the agent's error.
func (e *AgentError) Unwrap() error { return e.Err }

func total(xs []int) int {
	var n int
	for _, x := range xs {
		n += x
	}
	return n
}
