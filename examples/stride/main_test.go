package main

import (
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRun is the smoke test: the walk-through runs and prints the paper's
// numbers (Table 2's shares, section 5.2's 8/3 GPUs per user, then 4 each).
func TestRun(t *testing.T) {
	testcases.CheckRun(t, run,
		"1-GPU job: 66.7%",
		"2-GPU job: 33.3%",
		"4-GPU job: 16.7%",
		"ticket load per GPU: [37.5 37.5]",
		"user1: 32 GPU-quanta, 2.67 GPUs on average",
		"user3: 32 GPU-quanta, 2.67 GPUs on average",
		"user2: 48 GPU-quanta, 4 GPUs on average",
	)
}
