package main

import (
	"path/filepath"
	"testing"

	"github.com/gpufair/gpufair/gpu"
)

// TestRun is the smoke test: with or without a driver, with or without cgo,
// probing this machine and the mock both exit 0, and a bad mock exits 2, as
// does -record with a mock. Recording this machine exits 0 too (without a
// driver the transcript holds the failed Init).
// Profiling a command on the mock's targets succeeds when the command
// reports a rate and exits 1 when it does not (no GPU is needed: the command
// runs on this machine with the mock's UUID in CUDA_VISIBLE_DEVICES).
func TestRun(t *testing.T) {
	prof := gpu.Profiler{Repeats: 2}
	transcript := filepath.Join(t.TempDir(), "nvml.json")
	for _, tc := range []struct {
		mock, record string
		argv         []string
		want         int
	}{
		{"", "", nil, 0},
		{"dgxa100", "", nil, 0},
		{"nope", "", nil, 2},
		{"dgxa100", transcript, nil, 2},
		{"", transcript, nil, 0},
		{"dgxa100", "", []string{"sh", "-c", "echo rate: 12.5"}, 0},
		{"dgxa100", "", []string{"sh", "-c", "echo out of memory; exit 1"}, 1},
	} {
		got := run("smoke", tc.mock, tc.record, prof, tc.argv)
		if tc.argv != nil && !mockAvailable() {
			continue // without cgo the mock cannot be probed, so nothing is profiled
		}
		if got != tc.want {
			t.Errorf("run(-mock %q, %q) = %d, want %d", tc.mock, tc.argv, got, tc.want)
		}
	}
}
