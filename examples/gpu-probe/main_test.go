package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/gpu"
)

// TestRun is the smoke test: with or without a driver, with or without cgo,
// probing this machine and the mock both exit 0, and a bad mock exits 2, as
// does -record with a mock. Recording this machine exits 0 too (without a
// driver the transcript holds the failed Init).
// Profiling a command on the mock's targets succeeds when the command
// reports a rate and exits 1 when it does not (no GPU is needed: the command
// runs on this machine with the mock's UUID in CUDA_VISIBLE_DEVICES).
func TestRun(t *testing.T) {
	prof := gpu.Profiler{Repeats: 2}
	transcript := filepath.Join(t.TempDir(), "nvml.json")
	for _, tc := range []struct {
		mock, record string
		argv         []string
		want         int
	}{
		{"", "", nil, 0},
		{"dgxa100", "", nil, 0},
		{"nope", "", nil, 2},
		{"dgxa100", transcript, nil, 2},
		{"", transcript, nil, 0},
		{"dgxa100", "", []string{"sh", "-c", "echo rate: 12.5"}, 0},
		{"dgxa100", "", []string{"sh", "-c", "echo out of memory; exit 1"}, 1},
	} {
		got := run("smoke", tc.mock, tc.record, prof, tc.argv, nil, rowSettings{})
		if tc.argv != nil && !mockAvailable() {
			continue // without cgo the mock cannot be probed, so nothing is profiled
		}
		if got != tc.want {
			t.Errorf("run(-mock %q, %q) = %d, want %d", tc.mock, tc.argv, got, tc.want)
		}
	}
}

// TestProfileRows profiles a workloads file on the mock's one GPU type and
// reads back the row it wrote: the workload that reports a rate is measured,
// the one that fails is not and says why, and the exit status is 1.
func TestProfileRows(t *testing.T) {
	if !mockAvailable() {
		t.Skip("the mock needs cgo")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "w.tsv")
	if err := os.WriteFile(file, []byte("# job type, job, batch, command\nJob A\ta\t16\techo rate: 12.5\n\nJob B\tb\t0\tfalse\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := readWorkloads(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := run("smoke", "dgxa100", "", gpu.Profiler{Repeats: 3}, nil, ws, rowSettings{dir: dir, software: "none", cuda: "13.0", unit: "steps/s"}); got != 1 {
		t.Errorf("exit status %d, want 1 (one workload failed)", got)
	}
	r, err := data.LoadMeasured(os.DirFS(dir), "a100.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUType != "a100" || r.Driver == "" || r.Host != "smoke" || r.Software != "none" || r.CUDA != "13.0" || r.Unit != "steps/s" || len(r.Jobs) != 2 {
		t.Fatalf("row %+v", r)
	}
	if a := r.Jobs[0]; a.JobType != "Job A" || a.Job != "a" || a.Batch != 16 || a.Rate != 12.5 || len(a.Runs) != 3 {
		t.Errorf("measured job %+v", a)
	}
	if b := r.Jobs[1]; b.Measured() || !strings.Contains(b.Note, "not measured") {
		t.Errorf("failed job %+v", b)
	}
}

// TestMergeRows joins two rows that -rows wrote into a third and reads it
// back; no row, a row that is not there, and rows of two GPU types fail.
func TestMergeRows(t *testing.T) {
	dir := t.TempDir()
	write := func(name, row string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(row), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("1.json", `{"gpu_type": "h200", "jobs": [{"job_type": "A", "batch": 1, "runs": [2], "rate": 2}]}`)
	two := write("2.json", `{"gpu_type": "h200", "jobs": [{"job_type": "A", "batch": 1, "runs": [4, 9], "rate": 6.5}]}`)
	other := write("3.json", `{"gpu_type": "h100", "jobs": [{"job_type": "A", "batch": 1, "runs": [4], "rate": 4}]}`)
	out := filepath.Join(dir, "h200.json")
	if got := mergeRows(out, []string{one, two}); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	r, err := data.LoadMeasured(os.DirFS(dir), "h200.json")
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Jobs[0]; len(r.Jobs) != 1 || a.Rate != 4 || len(a.Runs) != 3 {
		t.Errorf("merged row %+v", r)
	}
	for _, tc := range []struct {
		paths []string
		want  int
	}{
		{nil, 2},
		{[]string{one, filepath.Join(dir, "none.json")}, 1},
		{[]string{one, other}, 1},
	} {
		if got := mergeRows(filepath.Join(dir, "bad.json"), tc.paths); got != tc.want {
			t.Errorf("merge %q: exit status %d, want %d", tc.paths, got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.json")); err == nil {
		t.Error("a failed merge wrote a row")
	}
}

func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"gpu-probe", "-repeats", "2", "-software", "PyTorch 2.11 (CUDA 13.0)", "-cuda", "", "it's"})
	want := `gpu-probe -repeats 2 -software 'PyTorch 2.11 (CUDA 13.0)' -cuda '' 'it'\''s'`
	if got != want {
		t.Errorf("commandLine = %s, want %s", got, want)
	}
}

func TestReadWorkloadsErrors(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"three fields":   "A\ta\techo rate: 1\n",
		"bad batch":      "A\ta\tx\techo rate: 1\n",
		"negative batch": "A\ta\t-1\techo rate: 1\n",
		"no command":     "A\ta\t1\t \n",
		"no job type":    "\ta\t1\techo\n",
		"empty":          "# nothing\n\n",
	} {
		file := filepath.Join(dir, "w.tsv")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readWorkloads(file); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := readWorkloads(filepath.Join(dir, "absent.tsv")); err == nil {
		t.Error("a missing file read")
	}
}

// TestProfilePairRows profiles two workloads and their three pairs on the
// mock's GPU type, the workloads being colocate.py's stand-in (it keeps the
// co-location barrier, as gavel_jobs.py does, around steps of sleeping), and
// reads back the row: both jobs measured, and each pair, with itself too.
func TestProfilePairRows(t *testing.T) {
	if !mockAvailable() {
		t.Skip("the mock needs cgo")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on PATH")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "w.tsv")
	if err := os.WriteFile(file, []byte("Fast\tf\t0\tpython3 colocate.py 0.002\nSlow\ts\t0\tpython3 colocate.py 0.005\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := readWorkloads(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := run("smoke", "dgxa100", "", gpu.Profiler{Repeats: 1, Timeout: time.Minute}, nil, ws, rowSettings{dir: dir, unit: "steps/s", pairs: true}); got != 0 {
		t.Fatalf("exit status %d", got)
	}
	r, err := data.LoadMeasured(os.DirFS(dir), "a100.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 2 || len(r.Pairs) != 3 || !strings.Contains(r.Method, "ProfilePairs") {
		t.Fatalf("row with %d jobs and pairs %+v, method %q", len(r.Jobs), r.Pairs, r.Method)
	}
	for _, ab := range [][2]string{{"Fast", "Fast"}, {"Fast", "Slow"}, {"Slow", "Slow"}} {
		ra, rb, ok := r.Pair(ab[0], ab[1])
		// 20 steps of sleeping 2 or 5 ms: at most 500 or 200 steps per second.
		limit := map[string]float64{"Fast": 500, "Slow": 200}
		if !ok || ra <= 0 || rb <= 0 || ra > limit[ab[0]] || rb > limit[ab[1]] {
			t.Errorf("pair %q: rates %v and %v, %v", ab, ra, rb, ok)
		}
	}
}
