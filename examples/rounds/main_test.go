package main

import (
	"strings"
	"testing"
)

// TestRun is the smoke test: the walk-through runs, Gavel's mechanism
// reaches its targets with renewed leases, the rounding placer's averages
// equal the ideal shares, and the output is deterministic.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"after 1000 rounds: largest |received - target| = 0\n",
		"d: [0.5 0.5]",
		"lease renewals: 999",
		"alice: [5.5 1.25] GPUs per round on average, ideal [5.5 1.25]",
		"bob: [2.5 2.75] GPUs per round on average, ideal [2.5 2.75]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var again strings.Builder
	if err := run(&again); err != nil || again.String() != out {
		t.Errorf("second run differs (err %v)", err)
	}
}
