package data

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/jsonkeys"
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
//	h200-pairs.json  seven of the job types on another H200 (2026-11-28),
//	             alone and in all 28 pairs, two at once on the device
//	             (gpu-probe -pairs, one run each): MeasuredRow.Pairs
//	h200-pairs.log   gpu-probe's output from that run
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
	// Pairs are job types measured two at a time on one device (Gavel
	// §3.1, space sharing); none where only single jobs were measured.
	Pairs []MeasuredPair `json:"pairs,omitempty"`
}

// MeasuredPair is two job types of the row trained at once on one device of
// its GPU type (gpu.Profiler.ProfilePairs), each one's rate taken while the
// other ran beside it. A may equal B: two jobs of one type. Each run
// measures both, so RunsA and RunsB are as long as each other. A pair that
// was not measured has no runs, zero rates and a note saying why; a pair
// that does not fit on one device would be measured as failed, not as
// rates of zero.
type MeasuredPair struct {
	A     string    `json:"a"` // a job type of the row's Jobs
	B     string    `json:"b"`
	RunsA []float64 `json:"runs_a"` // A's rate in each run, in the row's unit
	RunsB []float64 `json:"runs_b"`
	RateA float64   `json:"rate_a"` // the median of RunsA; 0 when there are none
	RateB float64   `json:"rate_b"`
	Note  string    `json:"note,omitempty"`
}

// Pair returns the rates of job types a and b trained at once on one device
// of the row's GPU type: a's, then b's, whichever order the row lists them
// in; ok is false when the row does not hold the pair or it was not
// measured (by a nil r, nothing was).
func (r *MeasuredRow) Pair(a, b string) (rateA, rateB float64, ok bool) {
	if r == nil {
		return 0, 0, false
	}
	for _, p := range r.Pairs {
		if len(p.RunsA) == 0 {
			continue
		}
		switch {
		case p.A == a && p.B == b:
			return p.RateA, p.RateB, true
		case p.A == b && p.B == a:
			return p.RateB, p.RateA, true
		}
	}
	return 0, 0, false
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
// ok is false when the row does not hold it or it was not measured (by a nil
// r, nothing was).
func (r *MeasuredRow) Rate(model string) (rate float64, ok bool) {
	if r == nil {
		return 0, false
	}
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
// runs; pairs of the row's job types, each listed once, with as many runs of
// one job as of the other, held to the same rules. An error names the file
// and the first fault. It is a
// *gpufair.InputError on Field "fsys" wrapping gpufair.ErrEmpty for a nil
// fsys, fsys's error if the file cannot be read, encoding/json's if it is
// not a row, and otherwise a *gpufair.InputError: Field "MeasuredRow"
// wrapping gpufair.ErrDuplicate for a key listed twice in one object, in
// the same case or another (encoding/json would keep the last without a
// word); "MeasuredRow.GPUType"
// or "MeasuredRow.Jobs"
// wrapping gpufair.ErrEmpty for a row without a GPU type or jobs; for a job,
// "MeasuredJob.JobType" wrapping ErrEmpty or ErrDuplicate, "MeasuredJob.Batch",
// "MeasuredJob.Runs" or "MeasuredJob.Rate" wrapping ErrValue; for a pair,
// "MeasuredPair.JobType" wrapping ErrValue (a job type the row's jobs do not
// list) or ErrDuplicate (a pair listed twice, in either order),
// "MeasuredPair.Runs" wrapping ErrShape (unequal counts of runs) or ErrValue,
// and "MeasuredPair.Rate" wrapping ErrValue.
func LoadMeasured(fsys fs.FS, name string) (*MeasuredRow, error) {
	if err := checkFS(fsys); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	var r MeasuredRow
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	// Unmarshal took b, so it is JSON no deeper than encoding/json allows.
	// encoding/json fills a field from a key of any case, the last it meets.
	if err := jsonkeys.Check(b); err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, gpufair.Invalid("MeasuredRow", "", gpufair.ErrDuplicate, "%v", err))
	}
	if r.GPUType == "" {
		return nil, fmt.Errorf("data: %s: %w", name, gpufair.Invalid("MeasuredRow.GPUType", "", gpufair.ErrEmpty, "no gpu_type"))
	}
	if len(r.Jobs) == 0 {
		return nil, fmt.Errorf("data: %s: %w", name, gpufair.Invalid("MeasuredRow.Jobs", "", gpufair.ErrEmpty, "no jobs"))
	}
	seen := make(map[string]bool, len(r.Jobs))
	for i, j := range r.Jobs {
		if err := j.check(seen); err != nil {
			return nil, fmt.Errorf("data: %s: job %d (%q): %w", name, i, j.JobType, err)
		}
	}
	pairs := make(map[[2]string]bool, len(r.Pairs))
	for i, p := range r.Pairs {
		if err := p.check(seen, pairs); err != nil {
			return nil, fmt.Errorf("data: %s: pair %d (%q, %q): %w", name, i, p.A, p.B, err)
		}
	}
	return &r, nil
}

// check checks p as a pair of a row read whole: its runs (checkRuns), and
// its rates the medians of its runs, or 0 with none.
func (p MeasuredPair) check(jobTypes map[string]bool, seen map[[2]string]bool) error {
	if err := p.checkRuns(jobTypes, seen); err != nil {
		return err
	}
	for _, x := range [...]struct {
		rate float64
		runs []float64
	}{{p.RateA, p.RunsA}, {p.RateB, p.RunsB}} {
		if m := stat.Median(x.runs); math.Abs(x.rate-m) > 1e-9*m || (len(x.runs) == 0 && x.rate != 0) {
			return gpufair.Invalid("MeasuredPair.Rate", p.A+" + "+p.B, gpufair.ErrValue, "rate %v is not the median of its runs %v", x.rate, x.runs)
		}
	}
	return nil
}

// checkRuns checks what a row read whole and a row to merge both need of a
// pair: job types of the row (jobTypes), a pair not in seen in either order
// (which it joins), as many runs of A as of B, and runs finite and
// positive.
func (p MeasuredPair) checkRuns(jobTypes map[string]bool, seen map[[2]string]bool) error {
	id := p.A + " + " + p.B
	switch {
	case !jobTypes[p.A] || !jobTypes[p.B]:
		return gpufair.Invalid("MeasuredPair.JobType", id, gpufair.ErrValue, "a job type the row's jobs do not list")
	case seen[[2]string{p.A, p.B}] || seen[[2]string{p.B, p.A}]:
		return gpufair.Invalid("MeasuredPair.JobType", id, gpufair.ErrDuplicate, "pair listed twice")
	case len(p.RunsA) != len(p.RunsB):
		return gpufair.Invalid("MeasuredPair.Runs", id, gpufair.ErrShape, "%d runs of %q and %d of %q: each run measures both", len(p.RunsA), p.A, len(p.RunsB), p.B)
	}
	seen[[2]string{p.A, p.B}] = true
	for _, x := range slices.Concat(p.RunsA, p.RunsB) {
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return gpufair.Invalid("MeasuredPair.Runs", id, gpufair.ErrValue, "run rate %v is not a positive number", x)
		}
	}
	return nil
}

// check checks j as a job of a row read whole: its runs (checkRuns), and its
// rate the median of its runs, or 0 with none.
func (j MeasuredJob) check(seen map[string]bool) error {
	if err := j.checkRuns(seen); err != nil {
		return err
	}
	if len(j.Runs) == 0 {
		if j.Rate != 0 {
			return gpufair.Invalid("MeasuredJob.Rate", j.JobType, gpufair.ErrValue, "rate %v without runs", j.Rate)
		}
		return nil
	}
	if m := stat.Median(j.Runs); math.Abs(j.Rate-m) > 1e-9*m {
		return gpufair.Invalid("MeasuredJob.Rate", j.JobType, gpufair.ErrValue, "rate %v is not the median of its runs, %v", j.Rate, m)
	}
	return nil
}

// checkRuns checks what a row read whole and a row to merge both need of a
// job: a job type, not one of seen (the row's job types before it, which it
// joins), a batch not negative, and runs finite and positive.
func (j MeasuredJob) checkRuns(seen map[string]bool) error {
	switch {
	case j.JobType == "":
		return gpufair.Invalid("MeasuredJob.JobType", "", gpufair.ErrEmpty, "no job_type")
	case seen[j.JobType]:
		return gpufair.Invalid("MeasuredJob.JobType", j.JobType, gpufair.ErrDuplicate, "job type listed twice")
	case j.Batch < 0:
		return gpufair.Invalid("MeasuredJob.Batch", j.JobType, gpufair.ErrValue, "batch %d is negative", j.Batch)
	}
	seen[j.JobType] = true
	for _, x := range j.Runs {
		if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
			return gpufair.Invalid("MeasuredJob.Runs", j.JobType, gpufair.ErrValue, "run rate %v is not a positive number", x)
		}
	}
	return nil
}

// MergeMeasured joins rows measured on the same GPU type, product, driver,
// software, host and unit, for example two profiler runs that one machine's
// time did not fit into one: each job type's runs are those of every row in
// order, and its rate is their median. Job types come in the order the rows
// first list them, and one not measured in any row keeps the first row's note.
// Pairs join the same way, whichever order of their two job types a row
// gives: the first row to list a pair sets its order.
// Where the rows differ in date, command or method, the merged row lists each
// distinct value, joined by "; ". The rows are not modified. An error names
// the first row, by its index, that cannot join the first, and why.
//
// The rows' rates are not read, but each row must hold what LoadMeasured
// takes of its runs: a GPU type, and jobs each with a job type listed once in
// the row, a batch not negative and runs finite and positive. The errors are
// *gpufair.InputError values: Field "rows" wrapping gpufair.ErrEmpty for no
// rows or a nil one; "MeasuredRow.<Field>" wrapping ErrEmpty for no GPU type
// or ErrValue for a field that differs from row 0's; the "MeasuredJob.*"
// errors of LoadMeasured for a job, and "MeasuredJob.Job" or
// "MeasuredJob.Batch" wrapping ErrValue for a job type run as another job or
// batch than in an earlier row; the "MeasuredPair.JobType" and
// "MeasuredPair.Runs" errors of LoadMeasured for a pair, its job types
// checked against its own row's; and "MeasuredRow.Jobs" wrapping
// ErrEmpty when no row has a job.
func MergeMeasured(rows ...*MeasuredRow) (*MeasuredRow, error) {
	if len(rows) == 0 {
		return nil, fmt.Errorf("data: %w", gpufair.Invalid("rows", "", gpufair.ErrEmpty, "no rows to merge"))
	}
	for i, r := range rows {
		if r == nil {
			return nil, fmt.Errorf("data: %w", gpufair.Invalid("rows", "", gpufair.ErrEmpty, "row %d is nil", i))
		}
	}
	first := rows[0]
	if first.GPUType == "" {
		return nil, fmt.Errorf("data: row 0: %w", gpufair.Invalid("MeasuredRow.GPUType", "", gpufair.ErrEmpty, "no gpu_type"))
	}
	out := &MeasuredRow{GPUType: first.GPUType, Product: first.Product, Driver: first.Driver, CUDA: first.CUDA,
		Software: first.Software, Host: first.Host, Unit: first.Unit}
	var dates, commands, methods []string
	at := map[string]int{}        // job type → index in out.Jobs
	pairAt := map[[2]string]int{} // pair, in the order first met → index in out.Pairs
	for i, r := range rows {
		for _, f := range [...]struct{ name, field, got, want string }{
			{"gpu_type", "GPUType", r.GPUType, first.GPUType}, {"product", "Product", r.Product, first.Product},
			{"driver", "Driver", r.Driver, first.Driver}, {"cuda", "CUDA", r.CUDA, first.CUDA},
			{"software", "Software", r.Software, first.Software}, {"host", "Host", r.Host, first.Host},
			{"unit", "Unit", r.Unit, first.Unit},
		} {
			if f.got != f.want {
				return nil, fmt.Errorf("data: %w", gpufair.Invalid("MeasuredRow."+f.field, "", gpufair.ErrValue,
					"row %d's %s %q is not row 0's %q: its runs measure something else", i, f.name, f.got, f.want))
			}
		}
		dates, commands, methods = appendNew(dates, r.Date), appendNew(commands, r.Command), appendNew(methods, r.Method)
		seen := make(map[string]bool, len(r.Jobs))
		for n, j := range r.Jobs {
			if err := j.checkRuns(seen); err != nil {
				return nil, fmt.Errorf("data: row %d: job %d (%q): %w", i, n, j.JobType, err)
			}
			k, ok := at[j.JobType]
			if !ok {
				at[j.JobType] = len(out.Jobs)
				j.Runs = slices.Clone(j.Runs)
				out.Jobs = append(out.Jobs, j)
				continue
			}
			m := &out.Jobs[k]
			if j.Job != m.Job || j.Batch != m.Batch {
				field := "MeasuredJob.Job"
				if j.Job == m.Job {
					field = "MeasuredJob.Batch"
				}
				return nil, fmt.Errorf("data: %w", gpufair.Invalid(field, j.JobType, gpufair.ErrValue,
					"row %d runs %q as job %q at batch %d, an earlier row as %q at batch %d",
					i, j.JobType, j.Job, j.Batch, m.Job, m.Batch))
			}
			m.Runs = append(m.Runs, j.Runs...)
		}
		pairs := make(map[[2]string]bool, len(r.Pairs))
		for n, pr := range r.Pairs {
			if err := pr.checkRuns(seen, pairs); err != nil {
				return nil, fmt.Errorf("data: row %d: pair %d (%q, %q): %w", i, n, pr.A, pr.B, err)
			}
			k, ok := pairAt[[2]string{pr.A, pr.B}]
			if !ok {
				if k, ok = pairAt[[2]string{pr.B, pr.A}]; ok {
					pr.A, pr.B, pr.RunsA, pr.RunsB = pr.B, pr.A, pr.RunsB, pr.RunsA
				}
			}
			if !ok {
				pairAt[[2]string{pr.A, pr.B}] = len(out.Pairs)
				pr.RunsA, pr.RunsB = slices.Clone(pr.RunsA), slices.Clone(pr.RunsB)
				out.Pairs = append(out.Pairs, pr)
				continue
			}
			m := &out.Pairs[k]
			m.RunsA, m.RunsB = append(m.RunsA, pr.RunsA...), append(m.RunsB, pr.RunsB...)
		}
	}
	if len(out.Jobs) == 0 {
		return nil, fmt.Errorf("data: %w", gpufair.Invalid("MeasuredRow.Jobs", "", gpufair.ErrEmpty, "no jobs in any row"))
	}
	for k := range out.Jobs {
		j := &out.Jobs[k]
		j.Rate = stat.Median(j.Runs)
		if j.Measured() {
			j.Note = ""
		}
	}
	for k := range out.Pairs {
		p := &out.Pairs[k]
		p.RateA, p.RateB = stat.Median(p.RunsA), stat.Median(p.RunsB)
		if len(p.RunsA) > 0 {
			p.Note = ""
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
