package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/internal/testcases"
)

// TestRun is the smoke test: a small generated workload under max-min and
// its heterogeneity-agnostic variant, with CSV and plots, prints the same
// table twice and writes one CSV line per job and mechanism.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	cfg := &config{jobs: 40, rate: 2, seed: 1, mechanisms: "max-min,max-min-agnostic", cluster: []int{4, 4, 4}, perServer: 4, round: 360,
		csv: filepath.Join(dir, "jobs.csv"), plots: dir}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"40 single-GPU jobs drawn as Gavel does (seed 1, 2 jobs/hour) on 4 K80, 4 P100 and 4 V100 GPUs",
		"max-min                         40    40 |",
		"max-min-agnostic                40    40 |",
		"plot: "+filepath.Join(dir, "rho_cdf.png"),
	)
	csv, err := os.ReadFile(cfg.csv)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(csv), "\n"); n != 1+2*40 {
		t.Errorf("CSV has %d lines, want a header and 80 jobs", n)
	}
}

// TestList checks that -list prints every mechanism, one per line, and
// that -mechanisms all picks them all.
func TestList(t *testing.T) {
	var b strings.Builder
	if err := run(context.Background(), &config{list: true}, &b); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	all, err := pick("all")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(all) || len(got) < 20 {
		t.Errorf("-list printed %d names, -mechanisms all picks %d; want the same, at least 20", len(got), len(all))
	}
	for i, m := range all {
		if i < len(got) && got[i] != m.name {
			t.Errorf("line %d is %q, want %q", i, got[i], m.name)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, args := range [][]string{{"-cluster", "1:2"}, {"-measure", "5"}, {"-cluster", "a:b:c"}, {"extra"},
		{"-profile-noise", "1"}, {"-profile-noise", "-0.1"}, {"-profile-noise", "NaN"}} {
		if _, err := parseFlags(args, os.Stderr); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		}
	}
	if _, err := pick("max-min,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("pick(nope) error = %v", err)
	}
}

// TestPlacement is the smoke test of -experiment placement: multi-GPU jobs
// under agnostic max-min and Themis' arbiter, deterministic.
func TestPlacement(t *testing.T) {
	cfg := &config{jobs: 20, rate: 2, seed: 1, mechanisms: "max-min-agnostic,themis", cluster: []int{8, 8, 8}, perServer: 4, round: 120, experiment: "placement"}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"20 single- and multi-GPU jobs drawn as Gavel does",
		"themis                          20    20 |",
	)
}

// TestLoad is the smoke test of -experiment load on two small rates.
func TestLoad(t *testing.T) {
	cfg := &config{jobs: 20, seed: 1, seeds: 1, rates: []float64{1, 4}, mechanisms: "max-min", cluster: []int{2, 2, 2}, perServer: 2, round: 360, experiment: "load"}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"jobs/hour             max-min",
		"\n4         ",
	)
}

// TestProfileNoiseFlag: with -profile-noise the mechanism is told other
// rates than the jobs run at (settings gives sim.Settings.Profiled), and
// heterogeneity-aware max-min's JCTs move; without it they do not.
func TestProfileNoiseFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"-jobs", "30", "-rate", "6", "-mechanisms", "max-min", "-cluster", "2:2:2", "-per-server", "2"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	out := func(noise float64) string {
		c := *cfg
		c.profileNoise = noise
		var b strings.Builder
		if err := run(context.Background(), &c, &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	exact := out(0)
	noisy := *cfg
	noisy.profileNoise = 0.3
	if settings(cfg, 30).Profiled != nil || settings(&noisy, 30).Profiled == nil {
		t.Error("settings does not follow -profile-noise")
	}
	if exact != out(0) || exact == out(0.5) {
		t.Errorf("output told exact rates twice:\n%s\nand with 50%% noise:\n%s", exact, out(0.5))
	}
}

// TestGandivaFair runs Gandiva_fair with and without trading on multi-GPU
// jobs, the command at a smaller scale: every job finishes, and a
// second run prints the same table.
func TestGandivaFair(t *testing.T) {
	cfg := &config{jobs: 40, rate: 3, seed: 1, multi: true, mechanisms: "gandiva-fair,gandiva-fair-trading", cluster: []int{8, 8, 8}, perServer: 4, round: 360}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) },
		"gandiva-fair                    40    40 |",
		"gandiva-fair-trading            40    40 |",
	)
}
