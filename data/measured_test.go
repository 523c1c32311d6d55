package data_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/internal/stat"
)

// TestMeasuredRows checks each measured row against Gavel's table: one entry
// for each of Gavel's 26 job types at scale 1 and for nothing else, each at
// the batch size its name gives, all measured but those whose note says why
// not, with the provenance filled in. The H100 row lacks Transformer (batch
// size 128); gpu-probe wrote the H200 row before it took -cuda, so its CUDA
// version is in its software field only.
func TestMeasuredRows(t *testing.T) {
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, gpuType, product string
		notMeasured            []string
	}{
		{"h100.json", "h100", "H100", []string{"Transformer (batch size 128)"}},
		{"h200.json", "h200", "H200", nil},
	} {
		t.Run(tc.gpuType, func(t *testing.T) {
			r, err := data.LoadMeasured(data.Measured(), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			for field, v := range map[string]string{"gpu_type": r.GPUType, "product": r.Product, "driver": r.Driver,
				"software": r.Software, "host": r.Host, "date": r.Date, "unit": r.Unit,
				"command": r.Command, "method": r.Method} {
				if v == "" {
					t.Errorf("no %s", field)
				}
			}
			if r.CUDA == "" && !strings.Contains(r.Software, "CUDA") {
				t.Errorf("no CUDA version in cuda or software %q", r.Software)
			}
			if r.GPUType != tc.gpuType || !strings.Contains(r.Product, tc.product) {
				t.Errorf("GPU type %q, product %q", r.GPUType, r.Product)
			}
			want := map[string]bool{}
			for _, j := range gavel.JobTypes() {
				if j.Scale == 1 {
					want[j.Model] = true
				}
			}
			var notMeasured []string
			for _, j := range r.Jobs {
				if !want[j.JobType] {
					t.Errorf("%q is not one of Gavel's job types at scale 1", j.JobType)
				}
				delete(want, j.JobType)
				if strings.Contains(j.JobType, "batch size") && !strings.Contains(j.JobType, fmt.Sprintf("(batch size %d)", j.Batch)) {
					t.Errorf("%q ran at batch %d", j.JobType, j.Batch)
				}
				rate, ok := r.Rate(j.JobType)
				switch {
				case j.Measured():
					if !ok || rate != j.Rate || rate <= 0 {
						t.Errorf("%q: Rate() = %v, %v; want %v", j.JobType, rate, ok, j.Rate)
					}
				case ok || j.Note == "":
					t.Errorf("%q: not measured, yet Rate() = %v, %v and note %q", j.JobType, rate, ok, j.Note)
				default:
					notMeasured = append(notMeasured, j.JobType)
				}
			}
			if len(want) > 0 {
				t.Errorf("Gavel's job types missing from the row: %v", want)
			}
			if !slices.Equal(notMeasured, tc.notMeasured) {
				t.Errorf("job types not measured: %q, want %q", notMeasured, tc.notMeasured)
			}
		})
	}
}

func TestLoadMeasuredErrors(t *testing.T) {
	row := func(jobs string) string {
		return `{"gpu_type": "h100", "jobs": [` + jobs + `]}`
	}
	for name, tc := range map[string]struct{ file, want string }{
		"not json":        {`{`, "unexpected end"},
		"no type":         {`{"jobs": [{"job_type": "A", "batch": 1, "runs": [1], "rate": 1}]}`, "no gpu_type"},
		"no jobs":         {row(``), "no jobs"},
		"no job type":     {row(`{"batch": 1, "runs": [1], "rate": 1}`), "no job_type"},
		"twice":           {row(`{"job_type": "A", "batch": 1}, {"job_type": "A", "batch": 2}`), "twice"},
		"negative batch":  {row(`{"job_type": "A", "batch": -2}`), "batch -2"},
		"negative run":    {row(`{"job_type": "A", "batch": 1, "runs": [-1], "rate": -1}`), "not a positive number"},
		"zero run":        {row(`{"job_type": "A", "batch": 1, "runs": [0], "rate": 0}`), "not a positive number"},
		"rate, no runs":   {row(`{"job_type": "A", "batch": 1, "rate": 3}`), "without runs"},
		"not the median":  {row(`{"job_type": "A", "batch": 1, "runs": [1, 2, 9], "rate": 4}`), "median"},
		"even, not mean":  {row(`{"job_type": "A", "batch": 1, "runs": [1, 3], "rate": 3}`), "median"},
		"later job wrong": {row(`{"job_type": "A", "batch": 1, "runs": [2], "rate": 2}, {"job_type": "B", "batch": 1, "runs": [1], "rate": 2}`), `job 1 ("B")`},
	} {
		_, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(tc.file)}}, "r.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	if _, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(row(`{"job_type": "A", "batch": 1, "runs": [1, 3], "rate": 2}`))}}, "r.json"); err != nil {
		t.Errorf("even runs with their mean as the rate: %v", err)
	}
	if _, err := data.LoadMeasured(data.Measured(), "a100.json"); err == nil {
		t.Error("a file that is not there was read")
	}
}

// TestMeasuredH100MatchesLog checks h100.json against the profiler's output
// it was assembled from (h100.log: a "== <job type>" line before each
// profile, then "  h100: <rate> (runs [<runs>])"): every rate and run in the
// row is the one printed, and a job type with no printed rate has none.
func TestMeasuredH100MatchesLog(t *testing.T) {
	r, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		t.Fatal(err)
	}
	log, err := fs.ReadFile(data.Measured(), "h100.log")
	if err != nil {
		t.Fatal(err)
	}
	printed := map[string]data.MeasuredJob{}
	cur := ""
	for _, line := range strings.Split(string(log), "\n") {
		if name, ok := strings.CutPrefix(line, "== "); ok {
			cur = name
			continue
		}
		rest, ok := strings.CutPrefix(line, "  h100: ")
		if !ok || cur == "" {
			continue
		}
		rate, runs, ok := strings.Cut(rest, " (runs [")
		if !ok {
			continue // "no rate: …"
		}
		j := data.MeasuredJob{JobType: cur}
		if j.Rate, err = strconv.ParseFloat(rate, 64); err != nil {
			t.Fatalf("%s: rate %q: %v", cur, rate, err)
		}
		for _, f := range strings.Fields(strings.TrimSuffix(runs, "])")) {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("%s: run %q: %v", cur, f, err)
			}
			j.Runs = append(j.Runs, x)
		}
		printed[cur] = j
	}
	if len(printed) != 25 {
		t.Errorf("the log prints %d rates, want 25", len(printed))
	}
	for _, j := range r.Jobs {
		p, ok := printed[j.JobType]
		if ok != j.Measured() {
			t.Errorf("%s: measured %v in the row, printed %v in the log", j.JobType, j.Measured(), ok)
			continue
		}
		if ok && (p.Rate != j.Rate || !slices.Equal(p.Runs, j.Runs)) {
			t.Errorf("%s: row %v %v, log %v %v", j.JobType, j.Rate, j.Runs, p.Rate, p.Runs)
		}
	}
}

// TestMeasuredH200IsMerged checks that h200.json is what MergeMeasured makes
// of the two rows gpu-probe wrote, and that those rows hold the runs
// gpu-probe printed (h200.log, to the 4 significant digits it prints): three
// runs of each job type, the first from the first command.
func TestMeasuredH200IsMerged(t *testing.T) {
	var parts []*data.MeasuredRow
	for _, name := range []string{"h200-part1.json", "h200-part2.json"} {
		r, err := data.LoadMeasured(data.Measured(), name)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, r)
	}
	merged, err := data.MergeMeasured(parts...)
	if err != nil {
		t.Fatal(err)
	}
	h200, err := data.LoadMeasured(data.Measured(), "h200.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(merged, h200); diff != "" {
		t.Errorf("h200.json is not the merge of its parts (-merged +file):\n%s", diff)
	}
	for _, j := range h200.Jobs {
		if len(j.Runs) != 3 {
			t.Errorf("%s: %d runs, want 3", j.JobType, len(j.Runs))
		}
	}
	log, err := fs.ReadFile(data.Measured(), "h200.log")
	if err != nil {
		t.Fatal(err)
	}
	// The log prints, for each part in turn, "<job type>: profiling …" and
	// then "  h200: <rate> (runs [<runs>])".
	var printed []string
	cur := ""
	for _, line := range strings.Split(string(log), "\n") {
		if name, _, ok := strings.Cut(line, ": profiling "); ok {
			cur = name
		} else if rest, ok := strings.CutPrefix(line, "  h200: "); ok && cur != "" {
			printed = append(printed, cur+": "+rest)
			cur = ""
		}
	}
	var want []string
	for _, p := range parts {
		for _, j := range p.Jobs {
			runs := make([]string, len(j.Runs))
			for i, x := range j.Runs {
				runs[i] = strconv.FormatFloat(x, 'g', 4, 64)
			}
			want = append(want, fmt.Sprintf("%s: %s (runs [%s])", j.JobType, strconv.FormatFloat(j.Rate, 'g', 4, 64), strings.Join(runs, " ")))
		}
	}
	if diff := cmp.Diff(want, printed); diff != "" {
		t.Errorf("the parts' runs are not those printed (-parts +log):\n%s", diff)
	}
}

func TestMergeMeasured(t *testing.T) {
	a := &data.MeasuredRow{GPUType: "h200", Product: "P", Driver: "1", Software: "S", Host: "vm", Unit: "steps/s",
		Date: "2026-11-28", Command: "run 1", Method: "m", Jobs: []data.MeasuredJob{
			{JobType: "A", Job: "a", Batch: 16, Runs: []float64{4}, Rate: 4},
			{JobType: "B", Job: "b", Runs: []float64{}, Note: "not measured: timeout"},
			{JobType: "C", Job: "c", Runs: []float64{}, Note: "not measured: out of memory"},
		}}
	b := *a
	b.Date, b.Command = "2026-11-29", "run 2"
	b.Jobs = []data.MeasuredJob{
		{JobType: "C", Job: "c", Runs: []float64{}, Note: "not measured: out of memory again"},
		{JobType: "A", Job: "a", Batch: 16, Runs: []float64{1, 2}, Rate: 1.5},
		{JobType: "B", Job: "b", Runs: []float64{7}, Rate: 7},
		{JobType: "D", Job: "d", Runs: []float64{3}, Rate: 3},
	}
	before := fmt.Sprint(a, b)
	got, err := data.MergeMeasured(a, &b, a)
	if err != nil {
		t.Fatal(err)
	}
	want := &data.MeasuredRow{GPUType: "h200", Product: "P", Driver: "1", Software: "S", Host: "vm", Unit: "steps/s",
		Date: "2026-11-28; 2026-11-29", Command: "run 1; run 2", Method: "m", Jobs: []data.MeasuredJob{
			{JobType: "A", Job: "a", Batch: 16, Runs: []float64{4, 1, 2, 4}, Rate: 3},
			{JobType: "B", Job: "b", Runs: []float64{7}, Rate: 7},
			{JobType: "C", Job: "c", Runs: []float64{}, Note: "not measured: out of memory"},
			{JobType: "D", Job: "d", Runs: []float64{3}, Rate: 3},
		}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged row (-want +got):\n%s", diff)
	}
	if after := fmt.Sprint(a, b); after != before {
		t.Errorf("the rows changed: %s, then %s", before, after)
	}

	other := b
	other.Software = "T"
	batch := b
	batch.Jobs = []data.MeasuredJob{{JobType: "A", Job: "a", Batch: 32, Runs: []float64{1}, Rate: 1}}
	for name, tc := range map[string]struct {
		rows []*data.MeasuredRow
		want string
	}{
		"none":           {nil, "no rows"},
		"nil":            {[]*data.MeasuredRow{a, nil}, "row 1 is nil"},
		"other software": {[]*data.MeasuredRow{a, a, &other}, `row 2's software "T"`},
		"other batch":    {[]*data.MeasuredRow{a, &batch}, `row 1 runs "A" as job "a" at batch 32`},
	} {
		if _, err := data.MergeMeasured(tc.rows...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// TestMergeMeasuredProperties merges random rows of one GPU type: each job
// type's runs are the rows' runs in order, its rate their median, the job
// types come in the order first listed, and the merged row, written as JSON,
// reads back through LoadMeasured unchanged.
func TestMergeMeasuredProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		names := []string{"A", "B", "C", "D"}
		rows := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) *data.MeasuredRow {
			r := &data.MeasuredRow{GPUType: "h200", Command: rapid.SampledFrom([]string{"one", "two"}).Draw(t, "command")}
			for _, n := range rapid.Permutation(names).Draw(t, "order")[:rapid.IntRange(1, 4).Draw(t, "jobs")] {
				runs := rapid.SliceOfN(rapid.Float64Range(0.5, 500), 0, 3).Draw(t, "runs")
				j := data.MeasuredJob{JobType: n, Job: strings.ToLower(n), Batch: 8, Runs: runs, Rate: stat.Median(runs)}
				if len(runs) == 0 {
					j.Note = "not measured: " + n
				}
				r.Jobs = append(r.Jobs, j)
			}
			return r
		}), 1, 4).Draw(t, "rows")
		m, err := data.MergeMeasured(rows...)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		runs := map[string][]float64{}
		for _, r := range rows {
			for _, j := range r.Jobs {
				if _, ok := runs[j.JobType]; !ok {
					order = append(order, j.JobType)
				}
				runs[j.JobType] = append(runs[j.JobType], j.Runs...)
			}
		}
		if len(m.Jobs) != len(order) {
			t.Fatalf("%d job types merged, want %d", len(m.Jobs), len(order))
		}
		for k, j := range m.Jobs {
			want := runs[j.JobType]
			if j.JobType != order[k] || !slices.Equal(j.Runs, want) || j.Rate != stat.Median(want) || (j.Note != "") == (len(want) > 0) {
				t.Fatalf("job %d: %+v; want %s with runs %v", k, j, order[k], want)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := data.LoadMeasured(fstest.MapFS{"m.json": {Data: b}}, "m.json")
		if err != nil {
			t.Fatalf("the merged row does not read back: %v", err)
		}
		if diff := cmp.Diff(m, back, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("read back (-merged +read):\n%s", diff)
		}
	})
}

// TestLoadMeasuredTypedErrors: a row LoadMeasured refuses gets a
// *gpufair.InputError naming the field and the job type. Two runs of
// 1.7e308 were taken with any rate at all: their median, the mean of the
// two, overflowed to +Inf, and every rate is within 1e-9 times +Inf of it
// (stat.Median now halves first there).
func TestLoadMeasuredTypedErrors(t *testing.T) {
	row := func(jobs string) string {
		return `{"gpu_type": "h100", "jobs": [` + jobs + `]}`
	}
	for _, tc := range []struct {
		name, file, field, id string
		want                  error
	}{
		{"not the median of large runs", row(`{"job_type": "A", "runs": [1.7e308, 1.7e308], "rate": 5}`), "MeasuredJob.Rate", "A", gpufair.ErrValue},
		{"no type", `{"jobs": [{"job_type": "A", "runs": [1], "rate": 1}]}`, "MeasuredRow.GPUType", "", gpufair.ErrEmpty},
		{"no jobs", row(``), "MeasuredRow.Jobs", "", gpufair.ErrEmpty},
		{"no job type", row(`{"runs": [1], "rate": 1}`), "MeasuredJob.JobType", "", gpufair.ErrEmpty},
		{"twice", row(`{"job_type": "A"}, {"job_type": "A"}`), "MeasuredJob.JobType", "A", gpufair.ErrDuplicate},
		{"negative batch", row(`{"job_type": "A", "batch": -2}`), "MeasuredJob.Batch", "A", gpufair.ErrValue},
		{"zero run", row(`{"job_type": "A", "runs": [0], "rate": 0}`), "MeasuredJob.Runs", "A", gpufair.ErrValue},
		{"rate, no runs", row(`{"job_type": "A", "rate": 3}`), "MeasuredJob.Rate", "A", gpufair.ErrValue},
		{"not the median", row(`{"job_type": "A", "runs": [1, 2, 9], "rate": 4}`), "MeasuredJob.Rate", "A", gpufair.ErrValue},
		// encoding/json kept the last of a key listed twice: runs [5], not
		// [1], taken without a word.
		{"runs twice", row(`{"job_type": "A", "runs": [1], "runs": [5], "rate": 5}`), "MeasuredRow", "", gpufair.ErrDuplicate},
		{"gpu_type twice", `{"gpu_type": "a100", "gpu_type": "h100", "jobs": [{"job_type": "A", "runs": [1], "rate": 1}]}`, "MeasuredRow", "", gpufair.ErrDuplicate},
		{"rate twice, in two cases", row(`{"job_type": "A", "runs": [1], "rate": 1, "RATE": 1}`), "MeasuredRow", "", gpufair.ErrDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(tc.file)}}, "r.json")
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != tc.id {
				t.Fatalf("LoadMeasured(%s) = %+v, error %v; want a %s[%s] error wrapping %v", tc.file, r, err, tc.field, tc.id, tc.want)
			}
		})
	}
	// Runs as large as float64 holds are taken, with their median.
	big := row(`{"job_type": "A", "runs": [1.7e308, 1.7e308], "rate": 1.7e308}`)
	if _, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(big)}}, "r.json"); err != nil {
		t.Errorf("LoadMeasured(%s): %v", big, err)
	}
}

// TestMergeMeasuredRefusesBadRows: MergeMeasured took rows it had not read
// (a caller's own, or LoadMeasured's changed) without a look at their runs,
// and gave NaN and negative rates: [NaN, 1] and [-3] merged to a rate of -3;
// a job type listed twice in one row was
// merged into one; a row without a GPU type, or rows without jobs, made a row
// LoadMeasured refuses.
func TestMergeMeasuredRefusesBadRows(t *testing.T) {
	row := func(jobs ...data.MeasuredJob) *data.MeasuredRow {
		return &data.MeasuredRow{GPUType: "h200", Jobs: jobs}
	}
	job := func(jt string, runs ...float64) data.MeasuredJob {
		return data.MeasuredJob{JobType: jt, Runs: runs, Rate: stat.Median(runs)}
	}
	for _, tc := range []struct {
		name      string
		rows      []*data.MeasuredRow
		field, id string
		want      error
	}{
		{"NaN run", []*data.MeasuredRow{row(job("A", 1)), row(job("A", math.NaN(), 1))}, "MeasuredJob.Runs", "A", gpufair.ErrValue},
		{"negative run", []*data.MeasuredRow{row(job("A", -3))}, "MeasuredJob.Runs", "A", gpufair.ErrValue},
		{"+Inf run", []*data.MeasuredRow{row(job("A", math.Inf(1)))}, "MeasuredJob.Runs", "A", gpufair.ErrValue},
		{"zero run", []*data.MeasuredRow{row(job("A", 0))}, "MeasuredJob.Runs", "A", gpufair.ErrValue},
		{"twice in a row", []*data.MeasuredRow{row(job("A", 1), job("A", 2))}, "MeasuredJob.JobType", "A", gpufair.ErrDuplicate},
		{"no job type", []*data.MeasuredRow{row(job("", 1))}, "MeasuredJob.JobType", "", gpufair.ErrEmpty},
		{"negative batch", []*data.MeasuredRow{row(data.MeasuredJob{JobType: "A", Batch: -1})}, "MeasuredJob.Batch", "A", gpufair.ErrValue},
		{"no GPU type", []*data.MeasuredRow{{Jobs: []data.MeasuredJob{job("A", 1)}}}, "MeasuredRow.GPUType", "", gpufair.ErrEmpty},
		{"no jobs", []*data.MeasuredRow{row(), row()}, "MeasuredRow.Jobs", "", gpufair.ErrEmpty},
		{"no rows", nil, "rows", "", gpufair.ErrEmpty},
		{"nil row", []*data.MeasuredRow{row(job("A", 1)), nil}, "rows", "", gpufair.ErrEmpty},
		{"other unit", []*data.MeasuredRow{row(job("A", 1)), {GPUType: "h200", Unit: "x"}}, "MeasuredRow.Unit", "", gpufair.ErrValue},
		{"other batch", []*data.MeasuredRow{row(job("A", 1)), row(data.MeasuredJob{JobType: "A", Batch: 2})}, "MeasuredJob.Batch", "A", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := data.MergeMeasured(tc.rows...)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != tc.id {
				t.Fatalf("MergeMeasured() = %+v, error %v; want a %s[%s] error wrapping %v", m, err, tc.field, tc.id, tc.want)
			}
		})
	}
}

// TestNilMeasuredRow: a nil *MeasuredRow has measured nothing (Rate
// dereferenced nil).
func TestNilMeasuredRow(t *testing.T) {
	var r *data.MeasuredRow
	if rate, ok := r.Rate("ResNet-18 (batch size 16)"); ok || rate != 0 {
		t.Errorf("Rate on nil = %v, %v; want 0, false", rate, ok)
	}
}
