package main

import (
	"context"
	"io"
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestOEFExperiments is the smoke run of OEF's reproduction: each
// experiment of docs/reproduction.md on a few jobs and rounds, checking the
// table it prints.
func TestOEFExperiments(t *testing.T) {
	for _, tc := range []struct {
		cfg  *config
		want []string
	}{
		{smoke("oef-throughput", "", false), []string{"oef-cooperative", "gandiva-fair-trading", "vs max-min"}},
		{smoke("oef-fairness", "", false), []string{"t00 lies", "worst sharing-incentive margin"}},
		{smoke("oef-profiling", "", false), []string{"20%", "deviation"}},
		{smoke("oef-jct", "", false), []string{"avg JCT", "oef-non-cooperative"}},
	} {
		t.Run(tc.cfg.experiment, func(t *testing.T) {
			tc.cfg.oefRounds = 4
			testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), tc.cfg, w) }, tc.want...)
		})
	}
}
