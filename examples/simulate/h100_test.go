package main

import (
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRunH100 compares max-min on Gavel-style jobs with and without two
// H100s added to the cluster: every job finishes either way, and the
// H100s shorten the average JCT.
func TestRunH100(t *testing.T) {
	ms, err := pick("max-min")
	if err != nil {
		t.Fatal(err)
	}
	avgJCT := func(cluster []int) float64 {
		cfg := &config{jobs: 40, rate: 2, seed: 1, cluster: cluster, perServer: 2, h100PerServer: 2, round: 360}
		wl, tp, _, err := workload(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := newSimCluster(cfg, tp)
		if err != nil {
			t.Fatal(err)
		}
		if wl, err = c.workload(wl); err != nil {
			t.Fatal(err)
		}
		res, err := simulate(context.Background(), cfg, &env{c: c.c, w: wl, round: cfg.round, tp: tp}, ms[0], settings(cfg, len(wl.Jobs)))
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary()
		if s.Finished != 40 {
			t.Errorf("cluster %v: %d of 40 jobs finished", cluster, s.Finished)
		}
		return s.AvgJCT
	}
	without, with := avgJCT([]int{4, 4, 4}), avgJCT([]int{4, 4, 4, 2})
	if !(with < without) {
		t.Errorf("average JCT %v s with two H100s, %v s without: want lower with them", with, without)
	}
	cfg := &config{jobs: 10, rate: 2, seed: 1, mechanisms: "max-min", cluster: []int{4, 4, 4, 2}, perServer: 2, h100PerServer: 8, round: 360}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"on 4 K80, 4 P100, 4 V100 GPUs (2 per server) and 2 H100s (8 per server)",
		"max-min                         10    10 |")
}

// TestH100Flags: -cluster takes three counts or four, the H100s go on
// servers of -h100-per-server GPUs (8 unless set), and only comparisons
// and -experiment load take the fourth count.
func TestH100Flags(t *testing.T) {
	cfg, err := parseFlags([]string{"-cluster", "1:2:3:4"}, os.Stderr)
	if err != nil || len(cfg.cluster) != 4 || cfg.cluster[3] != 4 {
		t.Fatalf("-cluster 1:2:3:4: %v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"-cluster", "1:2:3:4:5"}, os.Stderr); err == nil {
		t.Error("-cluster 1:2:3:4:5 accepted")
	}
	if cfg.h100PerServer != 8 {
		t.Errorf("-h100-per-server defaults to %d, want 8", cfg.h100PerServer)
	}
	cfg.cluster[3] = 12
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := newSimCluster(cfg, tp)
	if err != nil {
		t.Fatal(err)
	}
	var h100 []int
	for _, s := range c.c.Servers {
		if s.Type == h100Type {
			h100 = append(h100, s.GPUs)
		}
	}
	if !slices.Equal(h100, []int{8, 4}) {
		t.Errorf("12 H100s on servers of %v, want [8 4]", h100)
	}
	cfg.h100PerServer = 0
	if _, err := newSimCluster(cfg, tp); err == nil {
		t.Error("H100 servers of 0 GPUs accepted")
	}
	cfg.experiment = "placement"
	if err := run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "H100") {
		t.Errorf("-experiment placement with H100s: error %v, want one about H100s", err)
	}
}
