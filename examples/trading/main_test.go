package main

import (
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRun is the smoke test: the walk-through runs, prints Table 3's end
// state, shows that inflating 2 to 2.8 pays, and is deterministic.
func TestRun(t *testing.T) {
	testcases.CheckRun(t, run,
		"V100/C K80/A 5\n",
		"A: 40 K80, 0 V100, throughput 40",
		"B: 20 K80, 4 V100, throughput 40",
		"C: 0 K80, 8 V100, throughput 50",
		"u1 reports 2: trades [fast/u3 slow/u1 3] [fast/u2 slow/u1 2.5]; u1 holds 1 slow, 0.0889 fast, true throughput 1.18",
		"u1 reports 2.8: trades [fast/u3 slow/u1 3] [fast/u2 slow/u1 2.9]; u1 holds 1 slow, 0.107 fast, true throughput 1.21",
		"4 trades undone, each logged with a negative rate, e.g. V100/C K80/A -5",
	)
}
