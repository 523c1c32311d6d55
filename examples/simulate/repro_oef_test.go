package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/sim"
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

// TestGandivaFairOEFWorkloadEnds runs Gandiva_fair with trading on the
// workload of `-experiment oef-jct -jobs 600` (seed 1) to the end. Its
// trades' migrations once moved two starved tenants' jobs back and forth
// without end in one of its rounds; a job now moves at most once per
// decision.
func TestGandivaFairOEFWorkloadEnds(t *testing.T) {
	c, err := oefCluster()
	if err != nil {
		t.Fatal(err)
	}
	wl, err := oefWorkload(50, 12, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := pick("gandiva-fair-trading")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := simulate(ctx, &config{}, &env{c: c, w: wl, round: oefRound}, ms[0], &sim.Settings{Round: oefRound})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 600 {
		t.Fatalf("%d jobs finished, want 600", len(res.Jobs))
	}
}
