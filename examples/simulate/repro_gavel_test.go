package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// smoke returns a small configuration of an experiment: a few jobs on a
// small cluster, one seed.
func smoke(experiment, mechanisms string, multi bool) *config {
	return &config{experiment: experiment, mechanisms: mechanisms, jobs: 30, seed: 1, seeds: 1, multi: multi,
		rates: []float64{2}, sizes: []float64{12}, rounds: []float64{360, 1440},
		cluster: []int{8, 8, 8}, perServer: 4, round: 360}
}

// TestGavelExperiments is the smoke run of Gavel's reproduction: each
// experiment of docs/reproduction.md on a small workload, checking the
// table it prints.
func TestGavelExperiments(t *testing.T) {
	for _, tc := range []struct {
		cfg  *config
		want []string
	}{
		{smoke("gavel-fig9", "max-min,max-min-agnostic", false), []string{"multi-GPU: false", "max-min-agnostic/max-min", "Average rho"}},
		{smoke("gavel-fig10", "max-min,max-min-agnostic", false), []string{"multi-GPU: true"}},
		{smoke("gavel-fig11", "finish-time-fairness,finish-time-fairness-agnostic", false), []string{"finish-time-fairness-agnostic/finish-time-fairness"}},
		{smoke("gavel-makespan", "makespan,fifo-agnostic", false), []string{"Makespan (hours)", "\n12 "}},
		{smoke("gavel-fig15", "", false), []string{"max-min, 6 min", "max-min, 24 min", "ideal/max-min, 6 min"}},
		{smoke("gavel-space-sharing", "max-min,space-sharing-max-min", false), []string{"space-sharing-max-min/max-min", "Placements of two jobs sharing their GPUs", "\n2                 0.0 ±   0.0", "            -\n"}},
		{smoke("gavel-space-sharing", "space-sharing-max-min,space-sharing-max-min-then-total,gandiva-packing,gandiva-packing-sum-over-types,space-sharing-water-filling", false),
			[]string{"space-sharing-max-min-then-total/space-sharing-max-min", "gandiva-packing/space-sharing-max-min", "gandiva-packing-sum-over-types/space-sharing-max-min", "space-sharing-water-filling/space-sharing-max-min"}},
		{smoke("gavel-makespan", "makespan,gandiva-packing", false), []string{"gandiva-packing/makespan"}},
		{smoke("gavel-makespan", "makespan,space-sharing-min-makespan,space-sharing-min-makespan-then-total", false),
			[]string{"space-sharing-min-makespan/makespan", "space-sharing-min-makespan-then-total/makespan"}},
		{smoke("gavel-fig9", "fifo-gavel,fifo-perf,fifo-packing", false), []string{"fifo-perf/fifo-gavel", "fifo-packing/fifo-gavel"}},
		{smoke("gavel-fig9", "fifo,space-sharing-fifo", false), []string{"space-sharing-fifo/fifo"}},
	} {
		t.Run(tc.cfg.experiment, func(t *testing.T) {
			testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), tc.cfg, w) }, tc.want...)
		})
	}
}

// TestGavelHierarchy checks Figures 12 and 13's claims on their own
// setting: with fairness within entities every job of an entity gets the
// same share and the entities' shares of the allocation follow their
// weights 1:2:3; with FIFO within entities, later jobs of entity 0 get
// nothing; and the heterogeneity-aware allocation beats the agnostic
// static partition.
func TestGavelHierarchy(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		cfg := &config{seed: 1, seeds: 1, round: 360}
		tr, err := runHierarchy(context.Background(), cfg, fifo)
		if err != nil {
			t.Fatal(err)
		}
		last := tr.alloc[len(tr.alloc)-1]
		total := sum(last)
		for e := range 3 {
			var share float64
			var zero int
			for m := range tr.ids {
				if tr.entity[m] == e {
					share += last[m] / total
					if last[m] < 1e-9 {
						zero++
					}
				}
			}
			if want := float64(e+1) / 6; share < want-1e-6 || share > want+1e-6 {
				t.Errorf("fifo %v: entity %d has %.4f of the throughput, want %.4f", fifo, e, share, want)
			}
			if !fifo && zero > 0 || fifo && e == 0 && zero == 0 {
				t.Errorf("fifo %v: entity %d has %d jobs with nothing", fifo, e, zero)
			}
		}
		var aw, st float64
		for r := range tr.alloc {
			aw, st = aw+sum(tr.alloc[r]), st+sum(tr.static[r])
		}
		if !(aw > st) {
			t.Errorf("fifo %v: aware total %.1f is not above the static partition's %.1f", fifo, aw, st)
		}
	}
	var b strings.Builder
	if err := run(context.Background(), &config{experiment: "gavel-fig13", seed: 1, seeds: 1, round: 360}, &b); err != nil || !strings.Contains(b.String(), "FIFO within each") {
		t.Errorf("gavel-fig13: %v\n%s", err, b.String())
	}
}
