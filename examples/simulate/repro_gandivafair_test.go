package main

import (
	"context"
	"io"
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestGandivaFairExperiments is the smoke run of Gandiva_fair's
// reproduction: each experiment of docs/reproduction.md with 30 jobs per
// tenant (Figure 6 has one job per tenant and runs whole), checking the
// tables it prints.
func TestGandivaFairExperiments(t *testing.T) {
	for _, tc := range []struct {
		cfg  *config
		want []string
	}{
		{smoke("gandiva-fair-fig6", "", false), []string{"70 tenants on 48 P100s", "1-GPU ", "8-GPU ", "GPUs in use, of 48"}},
		{smoke("gandiva-fair-fig7", "", false), []string{"3 tenants of 30 jobs each on 64 K80s", "user2 ", "GPUs in use, of 64"}},
		{smoke("gandiva-fair-trading", "", false), []string{"4 tenants of 30 jobs", "Figure 8", "with trading (Figure 11)", "trades and undos"}},
	} {
		t.Run(tc.cfg.experiment, func(t *testing.T) {
			testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), tc.cfg, w) }, tc.want...)
		})
	}
}
