package main

import (
	"context"
	"encoding/csv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
)

// TestThemisExperiments is the smoke run of Themis' reproduction: each
// experiment of docs/reproduction.md on a few apps, checking the table it
// prints.
func TestThemisExperiments(t *testing.T) {
	for _, tc := range []struct {
		experiment string
		seeds      int
		want       []string
	}{
		{"themis-fig9", 1, []string{"Workload 1: 6 apps", "max rho of each baseline over Themis'", "tiresias"}},
		{"themis-fig10", 2, []string{"Workload 2: 6 apps", "GPU hours", "(seed 2)", "Mean ± standard deviation over 2 seeds", "max rho/Themis'"}},
		{"themis-fig14", 1, []string{"Themis Figure 14, workload 1: max rho", "\n4 "}},
		{"themis-fig15", 1, []string{"Themis Figures 15-16, workload 2: GPU hours", "\n100 "}},
	} {
		t.Run(tc.experiment, func(t *testing.T) {
			cfg := &config{experiment: tc.experiment, mechanisms: "themis,tiresias", jobs: 6, seed: 1, seeds: tc.seeds, round: 360, appScale: "small"}
			testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) }, tc.want...)
		})
	}
	cfg := &config{experiment: "themis-fig14", mechanisms: "themis", jobs: 6, seed: 1, seeds: 1, round: 360, appScale: "small", contentions: []float64{2}}
	testcases.CheckRun(t, func(w io.Writer) error { return run(context.Background(), cfg, w) }, "\n2 ")
	cfg.contentions = []float64{2.5}
	if err := run(context.Background(), cfg, io.Discard); err == nil {
		t.Error("-contentions 2.5: no error")
	}
}

// TestThemisTrace runs workload 2 with -themis-trace and -csv: the trace
// has a line per app ranked in each of Themis' rounds, only Themis' runs
// are traced, a won grant comes with c_i in (0, 1] and a bid's best row
// never prices above its rho without one; the app CSV has a line per app
// and mechanism, with rho = JCT / T_id.
func TestThemisTrace(t *testing.T) {
	dir := t.TempDir()
	cfg := &config{experiment: "themis-fig10", mechanisms: "themis,tiresias", jobs: 6, seed: 1, seeds: 1, round: 360, appScale: "small",
		themisTracePath: filepath.Join(dir, "trace.csv"), csv: filepath.Join(dir, "apps.csv")}
	if err := run(context.Background(), cfg, io.Discard); err != nil {
		t.Fatal(err)
	}
	trace := readCSV(t, cfg.themisTracePath)
	if !slices.Equal(trace[0], themisTraceHeader) {
		t.Fatalf("header %q", trace[0])
	}
	col := func(name string) int { return slices.Index(themisTraceHeader, name) }
	won := 0
	for _, line := range trace[1:] {
		if line[col("run")] != "1:themis" {
			t.Fatalf("run %q traced", line[col("run")])
		}
		if n, _ := strconv.Atoi(line[col("won")]); n > 0 {
			won++
			if c, err := strconv.ParseFloat(line[col("keep")], 64); err != nil || !(c > 0 && c <= 1) {
				t.Errorf("won %d GPUs with c_i %q", n, line[col("keep")])
			}
		}
		if line[col("rows")] != "" && line[col("rows")] != "0" {
			best, _ := strconv.ParseFloat(line[col("rho_best")], 64)
			none, _ := strconv.ParseFloat(line[col("rho_none")], 64)
			if best > none*(1+1e-4) {
				t.Errorf("best row's rho %v above rho without a row %v", best, none)
			}
		}
	}
	if won == 0 {
		t.Error("no app won GPUs in any round")
	}
	apps := readCSV(t, cfg.csv)
	if len(apps) != 1+2*6 {
		t.Fatalf("%d lines, want a header and 12", len(apps))
	}
	for _, a := range apps[1:] {
		jct, _ := strconv.ParseFloat(a[10], 64)
		tid, _ := strconv.ParseFloat(a[9], 64)
		rho, _ := strconv.ParseFloat(a[11], 64)
		if math.Abs(jct/tid-rho) > 2e-3*max(1, rho) {
			t.Errorf("%v: JCT %v / T_id %v != rho %v", a[:3], jct, tid, rho)
		}
	}
}

// readCSV reads a whole CSV file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestThemisWorkloads: workload 1's apps have one job (10%) or 4 to 24 of
// 1 or 2 GPUs, all in phase 0; workload 2's apps are successive halving
// over n = 8 or 16 trials, phase i holding n/2^i trials of 2^i GPUs (so
// 2n−1 jobs, every phase's demand n, the last trial on all n); every job
// is elastic and belongs to its app.
//
// At the trace's scale, workload 1's apps have 50 to 100 jobs (or one) and
// workload 2's 32 or 64 trials. An unknown scale is an error.
func TestThemisWorkloads(t *testing.T) {
	for _, kind := range []int{1, 2} {
		w := themisWorkload(kind, 40, -1, 168, 1, traceApps)
		jobs := map[alloc.TenantID]int{}
		for _, j := range w.Jobs {
			jobs[j.Owner]++
		}
		for app, n := range jobs {
			if kind == 1 && n != 1 && (n < 50 || n > 100) || kind == 2 && n != 2*32-1 && n != 2*64-1 {
				t.Errorf("trace scale, workload %d: %s has %d jobs", kind, app, n)
			}
		}
	}
	if _, err := themisScale("huge"); err == nil {
		t.Error(`themisScale("huge"): no error`)
	}
	for kind := 1; kind <= 2; kind++ {
		w := themisWorkload(kind, 40, -1, 168, 1, smallApps)
		if err := w.Validate(); err != nil {
			t.Fatal(err)
		}
		jobs := map[string]int{}
		most := map[string]int{}
		phase := map[string]map[int]int{} // GPUs of each phase
		for _, j := range w.Jobs {
			if !j.Elastic || j.Owner == "" {
				t.Fatalf("workload %d: job %s elastic %v, owner %q", kind, j.ID, j.Elastic, j.Owner)
			}
			if j.Gang != 1<<j.Phase && kind == 2 || j.Phase != 0 && kind == 1 {
				t.Fatalf("workload %d: job %s of phase %d has a gang of %d", kind, j.ID, j.Phase, j.Gang)
			}
			app := string(j.Owner)
			jobs[app]++
			most[app] = max(most[app], j.Gang)
			if phase[app] == nil {
				phase[app] = map[int]int{}
			}
			phase[app][j.Phase] += j.Gang
		}
		for app, n := range jobs {
			switch {
			case kind == 1 && !(n == 1 || (n >= 4 && n <= 24)) || kind == 1 && most[app] > 2:
				t.Errorf("workload 1: %s has %d jobs of up to %d GPUs", app, n, most[app])
			case kind == 2 && !(n == 2*8-1 && most[app] == 8 || n == 2*16-1 && most[app] == 16):
				t.Errorf("workload 2: %s has %d jobs of up to %d GPUs", app, n, most[app])
			case kind == 2:
				for p, g := range phase[app] {
					if g != most[app] {
						t.Errorf("workload 2: %s's phase %d uses %d GPUs, want %d", app, p, g, most[app])
					}
				}
			}
		}
	}
}
