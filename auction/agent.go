package auction

import (
	"context"
	"fmt"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/topology"
)

// Agent is the arbiter's view of an app: Themis' AGENT (section 4.2.2),
// co-located with the app's own scheduler. held[s] counts the GPUs of server
// s (of the arbiter's cluster) the app holds at now.
//
// An agent that errors, returns an invalid table or returns no rows bids
// for nothing that round; the arbiter records why in Round.Errors and goes
// on, with the app's state as it was. The arbiter calls the agents of a
// round concurrently, as apps examine an offer in parallel (section
// 4.2.2): an agent must be safe to call alongside the others. Under a round
// budget (ArbiterSettings.Budget) ctx carries the agents' deadline, and an
// agent still busy at that deadline is abandoned (its answer, if it comes,
// is dropped): it must not touch state shared with the caller after ctx is
// done.
type Agent interface {
	// Bid answers an offer with the app's bid table (step 3): rho for rows
	// of the offer's GPUs on top of held, and RhoNone for winning nothing.
	// Tables are validated with ftf.BidTable.Validate.
	Bid(ctx context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error)
	// Rho returns the app's rho at now if it keeps held until it finishes
	// (+Inf for an app with work left that holds nothing: see Arbiter for
	// how the arbiter prices that).
	Rho(ctx context.Context, now time.Time, c topology.Cluster, held []int) (float64, error)
	// Wants returns the GPUs of free (a count per server, within free) that
	// the app would put to use at once, holding held, or nil if none: the
	// smallest bundle that lets it run more (one GPU for an elastic app,
	// what completes a gang for a rigid one). It is how the arbiter hands
	// out leftovers and payments, and the test of work conservation. It
	// must be quick, must not block and must not modify its arguments.
	Wants(held, free []int) []int
}

// RhoAgent is an Agent for an app whose rho the caller can compute for any
// placement: Bid is ftf.Bids over the offer with Bids' bounds, Rho is RhoAt
// of what the app holds, and it wants GPUs up to Bids.Demand.
type RhoAgent struct {
	// RhoAt returns rho at now for a placement the app would keep until
	// it finishes, such as ftf.SingleJob.Rho with Elapsed brought up to now.
	RhoAt func(now time.Time, p ftf.Placement) (float64, error)
	// Bids bounds the bid tables (its Demand is the app's); nil means
	// ftf's defaults and no demand limit.
	Bids *ftf.BidSettings
}

// Bid returns ftf.Bids(offer, held, RhoAt at now, a.Bids).
func (a RhoAgent) Bid(ctx context.Context, now time.Time, offer ftf.Offer, held []int) (ftf.BidTable, error) {
	price := func(counts []int) (float64, error) {
		loc, err := offer.Cluster.LocalityOfCounts(counts)
		if err != nil {
			return 0, err
		}
		return a.RhoAt(now, ftf.Placement{GPUs: total(counts), Locality: loc})
	}
	return ftf.Bids(ctx, offer, held, price, a.Bids)
}

// Rho returns RhoAt(now, the placement of held). It returns an
// *gpufair.InputError wrapping gpufair.ErrShape if held is not one count
// per server of c.
func (a RhoAgent) Rho(_ context.Context, now time.Time, c topology.Cluster, held []int) (float64, error) {
	if err := checkHeld(c, held); err != nil {
		return 0, err
	}
	loc, err := c.LocalityOfCounts(held)
	if err != nil {
		return 0, err
	}
	return a.RhoAt(now, ftf.Placement{GPUs: total(held), Locality: loc})
}

// Wants returns one GPU of the first server of free it can use
// (Bids.Usable), while it holds fewer than Bids.Demand GPUs (any number
// without a demand).
func (a RhoAgent) Wants(held, free []int) []int {
	if a.Bids != nil && a.Bids.Demand > 0 && total(held) >= a.Bids.Demand {
		return nil
	}
	for s, n := range free {
		if n > 0 && (a.Bids == nil || a.Bids.Usable == nil || a.Bids.Usable(s)) {
			out := make([]int, len(free))
			out[s] = 1
			return out
		}
	}
	return nil
}

// callAgents calls f(ctx, i) for i in [0, n), all at once, and returns
// their results by i. Once ctx is done the calls still running are
// abandoned (their results, if they come, are dropped) and report ctx's
// error, so that slow agents cannot hold the round past its budget. An
// abandoned call runs on after callAgents returns, so f must read nothing
// that the caller may change afterwards (agentCall).
func callAgents[T any](ctx context.Context, n int, f func(ctx context.Context, i int) (T, error)) ([]T, []error) {
	vals, errs := make([]T, n), make([]error, n)
	type result struct {
		i   int
		v   T
		err error
	}
	ch := make(chan result, n)
	for i := range n {
		go func() {
			v, err := f(ctx, i)
			ch <- result{i, v, err}
		}()
	}
	done := make([]bool, n)
	for left := n; left > 0; left-- {
		select {
		case r := <-ch:
			vals[r.i], errs[r.i], done[r.i] = r.v, r.err, true
		case <-ctx.Done():
			for i := range done {
				if !done[i] {
					errs[i] = ctx.Err()
				}
			}
			return vals, errs
		}
	}
	return vals, errs
}

// AgentError is an agent's failure in a round, reported in Round.Errors.
type AgentError struct {
	App string
	Op  string // "Bid" or "Rho"
	Err error
}

// Error names the agent, the call that failed and why.
func (e *AgentError) Error() string {
	return fmt.Sprintf("auction: agent %q: %s: %v", e.App, e.Op, e.Err)
}

// Unwrap returns the agent's error.
func (e *AgentError) Unwrap() error { return e.Err }

// checkHeld reports held that is not one count per server of c, as an
// InputError naming held.
func checkHeld(c topology.Cluster, held []int) error {
	if len(held) != len(c.Servers) {
		return badInput("held", "", gpufair.ErrShape, "%d counts for %d servers", len(held), len(c.Servers))
	}
	return nil
}

func total(xs []int) int {
	var n int
	for _, x := range xs {
		n += x
	}
	return n
}
