package data_test

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufair/gpufair/data"
)

// TestMeasuredH100 checks the H100 row against Gavel's table: one entry for
// each of Gavel's 26 job types at scale 1 and for nothing else, each at the
// batch size its name gives, all measured but the one whose note says why
// not, with the provenance filled in.
func TestMeasuredH100(t *testing.T) {
	r, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		t.Fatal(err)
	}
	for field, v := range map[string]string{"gpu_type": r.GPUType, "product": r.Product, "driver": r.Driver,
		"cuda": r.CUDA, "software": r.Software, "host": r.Host, "date": r.Date, "unit": r.Unit,
		"command": r.Command, "method": r.Method} {
		if v == "" {
			t.Errorf("no %s", field)
		}
	}
	if r.GPUType != "h100" || !strings.Contains(r.Product, "H100") {
		t.Errorf("GPU type %q, product %q", r.GPUType, r.Product)
	}
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, j := range gavel.JobTypes() {
		if j.Scale == 1 {
			want[j.Model] = true
		}
	}
	measured := 0
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
			measured++
			if !ok || rate != j.Rate || rate <= 0 {
				t.Errorf("%q: Rate() = %v, %v; want %v", j.JobType, rate, ok, j.Rate)
			}
		case ok || j.Note == "":
			t.Errorf("%q: not measured, yet Rate() = %v, %v and note %q", j.JobType, rate, ok, j.Note)
		}
	}
	if len(want) > 0 {
		t.Errorf("Gavel's job types missing from the row: %v", want)
	}
	if measured != 25 {
		t.Errorf("%d job types measured, want 25 (all but Transformer (batch size 128))", measured)
	}
	if _, ok := r.Rate("Transformer (batch size 128)"); ok {
		t.Error("Transformer (batch size 128) was not measured, yet has a rate")
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
