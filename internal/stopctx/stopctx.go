// Package stopctx holds a context for tests that stop a long computation
// at each of its cancellation checks in turn. It imports nothing of
// gpufair, so that the tests of every package, lp's own included, can use
// it.
package stopctx

import "context"

// Countdown is a context whose Err is nil for its first N calls and
// context.Canceled from then on. Run a computation once with N =
// math.MaxInt to count its checks (math.MaxInt − N after the run), then
// once for each N below that count to stop it at each check.
type Countdown struct {
	context.Context
	N int
}

// Err counts the call and reports whether the countdown has run out.
func (c *Countdown) Err() error {
	if c.N--; c.N < 0 {
		return context.Canceled
	}
	return nil
}
