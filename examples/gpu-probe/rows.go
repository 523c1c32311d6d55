package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/topology"
)

// workload is one line of a -workloads file.
type workload struct {
	jobType string // the job_type of its entry in a measured row
	job     string
	batch   int
	argv    []string
}

// readWorkloads reads a -workloads file: a workload a line, in four fields
// separated by tabs: the job type (as the throughput table names it), the
// job's short name, its batch size (0 where it has none), and the command,
// split at spaces (no quoting). Blank lines and lines starting with # are
// skipped.
func readWorkloads(path string) ([]workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ws []workload
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("%s:%d: %d tab-separated fields, want 4 (job type, job, batch, command)", path, n, len(f))
		}
		batch, err := strconv.Atoi(f[2])
		if err != nil || batch < 0 {
			return nil, fmt.Errorf("%s:%d: batch %q is not a whole number of at least 0", path, n, f[2])
		}
		argv := strings.Fields(f[3])
		if f[0] == "" || len(argv) == 0 {
			return nil, fmt.Errorf("%s:%d: no job type or no command", path, n)
		}
		ws = append(ws, workload{jobType: f[0], job: f[1], batch: batch, argv: argv})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, fmt.Errorf("%s: no workloads", path)
	}
	return ws, nil
}

// rowSettings is what a measured row says of how it was measured, beside
// what the probe found.
type rowSettings struct {
	dir      string // where <type>.json goes; "" writes none
	software string
	cuda     string
	unit     string
	pairs    bool // also profile every pair of the workloads at once on one device
}

// profileRows profiles each workload on every target, one workload after the
// other, then, with set.pairs, every pair of them (a workload with itself
// too, in file order), prints the rates, and, when set.dir is given, writes
// after each workload and pair set.dir/<type>.json, a data.MeasuredRow per GPU type, so that a run
// stopped part way leaves what it measured. A cell that failed is in the row
// as not measured, with the error as its note.
func profileRows(prof gpu.Profiler, ws []workload, h *gpu.Host, set rowSettings) int {
	targets := gpu.Targets(h)
	rows := make(map[topology.GPUType]*data.MeasuredRow, len(targets))
	for _, t := range targets {
		rows[t.Type] = &data.MeasuredRow{
			GPUType: string(t.Type), Product: productOf(h, t.UUID), Driver: h.Driver,
			CUDA: set.cuda, Software: set.software, Host: h.Name, Date: time.Now().UTC().Format(time.DateOnly), Unit: set.unit,
			Command: commandLine(os.Args),
			Method: fmt.Sprintf("gpu.Profiler: %d runs of each command with CUDA_VISIBLE_DEVICES set to one device of the type, "+
				"each run's rate its last \"rate:\" line; the rate is the median of the runs", prof.RunsPerCell()),
		}
		if set.pairs {
			rows[t.Type].Method += "; pairs: gpu.Profiler.ProfilePairs, both commands started together on the one device, " +
				"each timing its steps between the co-location barrier's ready and done points"
		}
	}
	status := 0
	for _, w := range ws {
		fmt.Printf("\n%s: profiling %q, %d runs per GPU type:\n", w.jobType, w.argv, prof.RunsPerCell())
		p, err := prof.Profile(context.Background(), []gpu.Workload{{Name: w.jobType, Argv: w.argv}}, targets)
		if err != nil {
			fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
			return 1
		}
		for k, c := range p.Cells[0] {
			printCell(p.Types[k], c)
			j := data.MeasuredJob{JobType: w.jobType, Job: w.job, Batch: w.batch, Runs: []float64{}}
			if c.Err != nil {
				j.Note = "not measured: " + c.Err.Error()
				status = 1
			} else {
				j.Runs, j.Rate = c.Runs, c.Rate
			}
			r := rows[p.Types[k]]
			r.Jobs = append(r.Jobs, j)
		}
		if err := writeRows(set.dir, rows); err != nil {
			fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
			return 1
		}
	}
	if !set.pairs {
		return status
	}
	for i, a := range ws {
		for _, b := range ws[i:] {
			fmt.Printf("\n%s + %s: profiling both at once on one device, %d runs per GPU type:\n", a.jobType, b.jobType, prof.RunsPerCell())
			gws := []gpu.Workload{{Name: a.jobType, Argv: a.argv}}
			if b.jobType != a.jobType {
				gws = append(gws, gpu.Workload{Name: b.jobType, Argv: b.argv})
			}
			p, err := prof.ProfilePairs(context.Background(), gws, []gpu.Pair{{A: a.jobType, B: b.jobType}}, targets)
			if err != nil {
				fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
				return 1
			}
			for k, c := range p.Cells[0] {
				mp := data.MeasuredPair{A: a.jobType, B: b.jobType, RunsA: []float64{}, RunsB: []float64{}}
				if c.Err != nil {
					fmt.Printf("  %s: no rates: %v\n", p.Types[k], c.Err)
					mp.Note = "not measured: " + c.Err.Error()
					status = 1
				} else {
					fmt.Printf("  %s: %.4g + %.4g (runs %.4g and %.4g)\n", p.Types[k], c.RateA, c.RateB, c.RunsA, c.RunsB)
					mp.RunsA, mp.RunsB, mp.RateA, mp.RateB = c.RunsA, c.RunsB, c.RateA, c.RateB
				}
				r := rows[p.Types[k]]
				r.Pairs = append(r.Pairs, mp)
			}
			if err := writeRows(set.dir, rows); err != nil {
				fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
				return 1
			}
		}
	}
	return status
}

// writeRows writes each row to dir/<type>.json; nothing when dir is "".
func writeRows(dir string, rows map[topology.GPUType]*data.MeasuredRow) error {
	if dir == "" {
		return nil
	}
	for _, r := range rows {
		if err := writeRow(filepath.Join(dir, r.GPUType+".json"), r); err != nil {
			return err
		}
	}
	return nil
}

// commandLine joins args as a shell would read them back: an argument that
// is empty or holds anything but letters, digits and -_./=:,+ is single-quoted.
func commandLine(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// productOf returns the product name of the device with UUID uuid.
func productOf(h *gpu.Host, uuid string) string {
	for _, d := range h.Devices {
		if d.UUID == uuid {
			return d.Name
		}
	}
	return ""
}

// writeRow writes r as indented JSON through a temporary file, so that a
// reader never sees half a row.
func writeRow(path string, r *data.MeasuredRow) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// mergeRows reads the measured rows at paths, joins them
// (data.MergeMeasured) and writes the result to out; it returns the exit
// status, 2 when no row is given.
func mergeRows(out string, paths []string) int {
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "gpu-probe: -merge needs the rows to join as arguments")
		return 2
	}
	rows := make([]*data.MeasuredRow, len(paths))
	for i, p := range paths {
		r, err := data.LoadMeasured(os.DirFS(filepath.Dir(p)), filepath.Base(p))
		if err != nil {
			fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
			return 1
		}
		rows[i] = r
	}
	m, err := data.MergeMeasured(rows...)
	if err == nil {
		err = writeRow(out, m)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
		return 1
	}
	return 0
}
