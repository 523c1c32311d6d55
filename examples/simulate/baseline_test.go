package main

import (
	"context"
	"io"
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestBaselines is the smoke test of Themis' baselines (package baseline):
// each finishes every job of a small multi-GPU workload, deterministically.
func TestBaselines(t *testing.T) {
	cfg := &config{jobs: 30, rate: 4, multi: true, seed: 1, mechanisms: "tiresias,gandiva,gandiva-no-time-slicing,slaq,optimus,srtf,srsf",
		cluster: []int{4, 4, 8}, perServer: 4, round: 360}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"tiresias                        30    30 |",
		"gandiva                         30    30 |",
		"gandiva-no-time-slicing         30    30 |",
		"slaq                            30    30 |",
		"optimus                         30    30 |",
		"srtf                            30    30 |",
		"srsf                            30    30 |",
	)
}
