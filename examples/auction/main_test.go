package main

import (
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRun is the smoke test: the walk-through runs and prints Table 3 by
// equation 2 (133/125 for 4 GPUs), the one-shot auction's c_i (vgg keeps
// 2 of 3.5 for inception: 4/7; inception keeps 1 of 1.25 for vgg: 0.8), and
// the arbiter's first round with its payments, GPUs given in the same round.
func TestRun(t *testing.T) {
	testcases.CheckRun(t, run,
		"4 GPUs: rho 1.064 (equation 2), 1 (median model, as printed)",
		"16 GPUs: rho 0.3453 (equation 2), 0.34 (median model, as printed)",
		"vgg wins 3 GPUs and keeps c = 0.571 of them (1.71 GPUs in expectation)",
		"inception wins 1 GPUs and keeps c = 0.8 of them (0.8 GPUs in expectation)",
		"t=0s: 6 GPUs offered to [inception resnet]",
		"vgg: 1 GPUs (payment) 0s..10m0s from inception",
	)
}
