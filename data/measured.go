package data

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/gpufair/gpufair/internal/stat"
)

//go:embed measured
var measured embed.FS

// Measured returns the throughputs gpufair measured itself on real GPUs, as
// a read-only file system rooted at measured/:
//
//	h100.json    Gavel's 26 job types on an NVIDIA H100 80GB HBM3 (2026-11-28)
//	h100.log     gpu-probe's output from those runs, as printed
//	h200.json    the same on an NVIDIA H200 (2026-11-28): h200-part1.json
//	             and h200-part2.json, two gpu-probe -rows runs on one machine
//	             (1 and 2 runs of each job type), merged by MergeMeasured
//	h200.log     gpu-probe's output from those two runs
//
// Read a row with LoadMeasured. Unlike Gavel's files these were measured with
// gpufair's own profiler (examples/gpu-probe) and job loops
// (examples/gpu-probe/gavel_jobs.py), which rebuild Gavel's models on random
// inputs: see docs/benchmarks/gpu.md for how the rates compare.
func Measured() fs.FS { return embedded(measured, "measured") }

// MeasuredRow is one GPU type's training throughputs for Gavel's job types,
// measured on a real device, with what was measured, where and how.
type MeasuredRow struct {
	GPUType  string        `json:"gpu_type"` // gpufair's GPU type, as gpu.DefaultTypes names the product
	Product  string        `json:"product"`  // the product name NVML reported
	Driver   string        `json:"driver"`
	CUDA     string        `json:"cuda"`
	Software string        `json:"software"` // the framework and libraries the jobs ran on
	Host     string        `json:"host"`
	Date     string        `json:"date"` // when it was measured, as YYYY-MM-DD (a merged row's dates joined by "; ")
	Unit     string        `json:"unit"`
	Command  string        `json:"command"` // the profiler's command line
	Method   string        `json:"method"`  // how a rate was taken
	Jobs     []MeasuredJob `json:"jobs"`
}

// MeasuredJob is one job type's rate on the row's GPU type. A job type that
// was not measured has no runs, a zero rate and a note saying why: its rate,
// if a scheduler needs one, is to be estimated (speedup.Complete), never read
// from here.
type MeasuredJob struct {
	// JobType is Gavel's model key at scale factor 1, as in
	// simulation_throughputs.json: "ResNet-18 (batch size 16)".
	JobType string    `json:"job_type"`
	Job     string    `json:"job"`   // gavel_jobs.py's --job
	Batch   int       `json:"batch"` // its batch size (gavel_jobs.py's --batch); 0 where it has none
	Runs    []float64 `json:"runs"`  // each run's rate, in the row's unit
	Rate    float64   `json:"rate"`  // the median of Runs; 0 when there are none
	Note    string    `json:"note,omitempty"`
}

// Measured reports whether j was measured.
func (j MeasuredJob) Measured() bool { return len(j.Runs) > 0 }

// Rate returns the measured rate of Gavel's job type model (at scale 1);
// ok is false when the row does not hold it or it was not measured.
func (r *MeasuredRow) Rate(model string) (rate float64, ok bool) {
	for _, j := range r.Jobs {
		if j.JobType == model && j.Measured() {
			return j.Rate, true
		}
	}
	return 0, false
}

// LoadMeasured reads a measured row from fsys (for example Measured() and
// "h100.json") and checks it: a GPU type, at least one job, job types named
// once, batches not negative, runs finite and positive, and each rate the median
// of its runs (the mean of the middle two for an even count), or 0 with no
// runs. An error names the file and the first fault.
func LoadMeasured(fsys fs.FS, name string) (*MeasuredRow, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var r MeasuredRow
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	if r.GPUType == "" {
		return nil, fmt.Errorf("data: %s: no gpu_type", name)
	}
	if len(r.Jobs) == 0 {
		return nil, fmt.Errorf("data: %s: no jobs", name)
	}
	seen := make(map[string]bool, len(r.Jobs))
	for i, j := range r.Jobs {
		if err := j.check(seen); err != nil {
			return nil, fmt.Errorf("data: %s: job %d (%q): %w", name, i, j.JobType, err)
		}
	}
	return &r, nil
}

func (j MeasuredJob) check(seen map[string]bool) error {
	switch {
	case j.JobType == "":
		return fmt.Errorf("no job_type")
	case seen[j.JobType]:
		return fmt.Errorf("job type listed twice")
	case j.Batch < 0:
		return fmt.Errorf("batch %d is negative", j.Batch)
	}
	seen[j.JobType] = true
	for _, x := range j.Runs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return fmt.Errorf("run rate %v is not a positive number", x)
		}
	}
	if len(j.Runs) == 0 {
		if j.Rate != 0 {
			return fmt.Errorf("rate %v without runs", j.Rate)
		}
		return nil
	}
	if m := stat.Median(j.Runs); math.Abs(j.Rate-m) > 1e-9*m {
		return fmt.Errorf("rate %v is not the median of its runs, %v", j.Rate, m)
	}
	return nil
}

// MergeMeasured joins rows measured on the same GPU type, product, driver,
// software, host and unit, for example two profiler runs that one machine's
// time did not fit into one: each job type's runs are those of every row in
// order, and its rate is their median. Job types come in the order the rows
// first list them, and one not measured in any row keeps the first row's note.
// Where the rows differ in date, command or method, the merged row lists each
// distinct value, joined by "; ". The rows are not modified. An error names
// the first row, by its index, that cannot join the first, and why.
func MergeMeasured(rows ...*MeasuredRow) (*MeasuredRow, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("data: no rows to merge")
	}
	for i, r := range rows {
		if r == nil {
			return nil, fmt.Errorf("data: row %d is nil", i)
		}
	}
	first := rows[0]
	out := &MeasuredRow{GPUType: first.GPUType, Product: first.Product, Driver: first.Driver, CUDA: first.CUDA,
		Software: first.Software, Host: first.Host, Unit: first.Unit}
	var dates, commands, methods []string
	at := map[string]int{} // job type → index in out.Jobs
	for i, r := range rows {
		for _, f := range [...]struct{ name, got, want string }{
			{"gpu_type", r.GPUType, first.GPUType}, {"product", r.Product, first.Product},
			{"driver", r.Driver, first.Driver}, {"cuda", r.CUDA, first.CUDA},
			{"software", r.Software, first.Software}, {"host", r.Host, first.Host}, {"unit", r.Unit, first.Unit},
		} {
			if f.got != f.want {
				return nil, fmt.Errorf("data: row %d's %s %q is not row 0's %q: its runs measure something else", i, f.name, f.got, f.want)
			}
		}
		dates, commands, methods = appendNew(dates, r.Date), appendNew(commands, r.Command), appendNew(methods, r.Method)
		for _, j := range r.Jobs {
			k, ok := at[j.JobType]
			if !ok {
				at[j.JobType] = len(out.Jobs)
				j.Runs = slices.Clone(j.Runs)
				out.Jobs = append(out.Jobs, j)
				continue
			}
			m := &out.Jobs[k]
			if j.Job != m.Job || j.Batch != m.Batch {
				return nil, fmt.Errorf("data: row %d runs %q as job %q at batch %d, an earlier row as %q at batch %d",
					i, j.JobType, j.Job, j.Batch, m.Job, m.Batch)
			}
			m.Runs = append(m.Runs, j.Runs...)
		}
	}
	for k := range out.Jobs {
		j := &out.Jobs[k]
		j.Rate = stat.Median(j.Runs)
		if j.Measured() {
			j.Note = ""
		}
	}
	out.Date, out.Command, out.Method = strings.Join(dates, "; "), strings.Join(commands, "; "), strings.Join(methods, "; ")
	return out, nil
}

// appendNew appends s to xs unless xs holds it or it is empty.
func appendNew(xs []string, s string) []string {
	if s == "" || slices.Contains(xs, s) {
		return xs
	}
	return append(xs, s)
}
