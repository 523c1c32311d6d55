package main

import "testing"

// TestRun is the smoke test: with or without a driver, with or without cgo,
// probing this machine and the mock both exit 0, and a bad mock exits 2.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		mock string
		want int
	}{{"", 0}, {"dgxa100", 0}, {"nope", 2}} {
		if got := run("smoke", tc.mock); got != tc.want {
			t.Errorf("run(-mock %q) = %d, want %d", tc.mock, got, tc.want)
		}
	}
}
