package main

import (
	"context"
	"io"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/internal/testcases"
)

// TestH100Rates: every job type of Gavel's table gets a finite positive
// H100 rate where it runs on a V100; the one-GPU job types measured on
// the H100 keep their measured rates, and the rest are estimated.
func TestH100Rates(t *testing.T) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	row, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		t.Fatal(err)
	}
	rates, err := h100Rates(tp)
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, jt := range tp.JobTypes() {
		r, ok := rates[jt]
		if !ok {
			t.Fatalf("no H100 rate for %v", jt)
		}
		if v, _ := tp.Isolated("v100", jt); v > 0 && !(r > 0 && !math.IsInf(r, 0)) {
			t.Errorf("%v: H100 rate %v, want finite and positive", jt, r)
		}
		if m, ok := row.Rate(jt.Model); ok && jt.Scale == 1 {
			measured++
			if r != m {
				t.Errorf("%v: H100 rate %v, want the measured %v", jt, r, m)
			}
		}
	}
	want := 0
	for _, j := range row.Jobs {
		if j.Measured() {
			want++
		}
	}
	if measured != want {
		t.Errorf("%d job types at their measured H100 rate, want the row's %d", measured, want)
	}
}

// TestRunH100 compares max-min on Gavel-style jobs with and without two
// H100s added to the cluster: every job finishes either way, and the
// H100s shorten the average JCT.
func TestRunH100(t *testing.T) {
	ms, err := pick("max-min")
	if err != nil {
		t.Fatal(err)
	}
	avgJCT := func(cluster []int) float64 {
		cfg := &config{jobs: 40, rate: 2, seed: 1, cluster: cluster, perServer: 2, round: 360}
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
	cfg := &config{jobs: 10, rate: 2, seed: 1, mechanisms: "max-min", cluster: []int{4, 4, 4, 2}, perServer: 2, round: 360}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"on 4 K80, 4 P100, 4 V100 and 2 H100 GPUs (2 per server)",
		"max-min                         10    10 |")
}

// TestH100Flags: -cluster takes three counts or four, and only
// comparisons and -experiment load take the fourth.
func TestH100Flags(t *testing.T) {
	cfg, err := parseFlags([]string{"-cluster", "1:2:3:4"}, os.Stderr)
	if err != nil || len(cfg.cluster) != 4 || cfg.cluster[3] != 4 {
		t.Fatalf("-cluster 1:2:3:4: %v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"-cluster", "1:2:3:4:5"}, os.Stderr); err == nil {
		t.Error("-cluster 1:2:3:4:5 accepted")
	}
	cfg.experiment = "placement"
	if err := run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "H100") {
		t.Errorf("-experiment placement with H100s: error %v, want one about H100s", err)
	}
}
