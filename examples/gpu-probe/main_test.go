package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	if got := run("smoke", "dgxa100", "", gpu.Profiler{Repeats: 3}, nil, ws, rowSettings{dir: dir, software: "none", unit: "steps/s"}); got != 1 {
		t.Errorf("exit status %d, want 1 (one workload failed)", got)
	}
	r, err := data.LoadMeasured(os.DirFS(dir), "a100.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.GPUType != "a100" || r.Driver == "" || r.Host != "smoke" || r.Software != "none" || r.Unit != "steps/s" || len(r.Jobs) != 2 {
		t.Fatalf("row %+v", r)
	}
	if a := r.Jobs[0]; a.JobType != "Job A" || a.Job != "a" || a.Batch != 16 || a.Rate != 12.5 || len(a.Runs) != 3 {
		t.Errorf("measured job %+v", a)
	}
	if b := r.Jobs[1]; b.Measured() || !strings.Contains(b.Note, "not measured") {
		t.Errorf("failed job %+v", b)
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
