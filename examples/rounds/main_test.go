package main

import (
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRun is the smoke test: the walk-through runs, Gavel's mechanism
// reaches its targets with renewed leases, the rounding placer's averages
// equal the ideal shares, and the output is deterministic.
func TestRun(t *testing.T) {
	testcases.CheckRun(t, run,
		"after 1000 rounds: largest |received - target| = 0\n",
		"d: [0.5 0.5]",
		"lease renewals: 999",
		"alice: [5.5 1.25] GPUs per round on average, ideal [5.5 1.25]",
		"bob: [2.5 2.75] GPUs per round on average, ideal [2.5 2.75]",
	)
}
