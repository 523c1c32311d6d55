package data_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
)

// pairRow is a row of two job types, A and B, with pairs.
func pairRow(pairs string) string {
	return `{"gpu_type": "h200", "jobs": [{"job_type": "A", "batch": 1, "runs": [10], "rate": 10},
		{"job_type": "B", "batch": 1, "runs": [4], "rate": 4}], "pairs": [` + pairs + `]}`
}

func TestMeasuredPairs(t *testing.T) {
	r, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(pairRow(
		`{"a": "A", "b": "B", "runs_a": [6, 7, 5], "runs_b": [3, 2, 2.5], "rate_a": 6, "rate_b": 2.5},
		 {"a": "B", "b": "B", "runs_a": [], "runs_b": [], "rate_a": 0, "rate_b": 0, "note": "not measured: out of memory"}`))}}, "r.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a, b         string
		rateA, rateB float64
		ok           bool
	}{
		{"A", "B", 6, 2.5, true},
		{"B", "A", 2.5, 6, true},
		{"B", "B", 0, 0, false}, // listed, not measured
		{"A", "A", 0, 0, false}, // not listed
	} {
		ra, rb, ok := r.Pair(tc.a, tc.b)
		if ra != tc.rateA || rb != tc.rateB || ok != tc.ok {
			t.Errorf("Pair(%q, %q) = %v, %v, %v; want %v, %v, %v", tc.a, tc.b, ra, rb, ok, tc.rateA, tc.rateB, tc.ok)
		}
	}
	var none *data.MeasuredRow
	if _, _, ok := none.Pair("A", "B"); ok {
		t.Error("a nil row holds a pair")
	}
}

func TestLoadMeasuredPairErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		pairs string
		field string
		kind  error
	}{
		"unknown job type": {`{"a": "A", "b": "C", "runs_a": [1], "runs_b": [1], "rate_a": 1, "rate_b": 1}`, "MeasuredPair.JobType", gpufair.ErrValue},
		"twice, reversed": {`{"a": "A", "b": "B", "runs_a": [1], "runs_b": [2], "rate_a": 1, "rate_b": 2},
			{"a": "B", "b": "A", "runs_a": [2], "runs_b": [1], "rate_a": 2, "rate_b": 1}`, "MeasuredPair.JobType", gpufair.ErrDuplicate},
		"unequal runs":   {`{"a": "A", "b": "B", "runs_a": [1, 2], "runs_b": [1], "rate_a": 1.5, "rate_b": 1}`, "MeasuredPair.Runs", gpufair.ErrShape},
		"zero run":       {`{"a": "A", "b": "A", "runs_a": [0], "runs_b": [1], "rate_a": 0, "rate_b": 1}`, "MeasuredPair.Runs", gpufair.ErrValue},
		"not the median": {`{"a": "A", "b": "B", "runs_a": [1, 2, 9], "runs_b": [1, 1, 1], "rate_a": 4, "rate_b": 1}`, "MeasuredPair.Rate", gpufair.ErrValue},
		"rate, no runs":  {`{"a": "A", "b": "B", "runs_a": [], "runs_b": [], "rate_a": 0, "rate_b": 3}`, "MeasuredPair.Rate", gpufair.ErrValue},
	} {
		_, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: []byte(pairRow(tc.pairs))}}, "r.json")
		var ie *gpufair.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), "pair ") {
			t.Errorf("%s: error %v, want a %s error wrapping %v that names the pair", name, err, tc.field, tc.kind)
		}
	}
}

// TestMergeMeasuredPairs: a pair's runs join across rows whichever order a
// row lists its job types in, the first row's order kept; a pair measured
// nowhere keeps its note.
func TestMergeMeasuredPairs(t *testing.T) {
	jobs := []data.MeasuredJob{{JobType: "A", Runs: []float64{10}, Rate: 10}, {JobType: "B", Runs: []float64{4}, Rate: 4}}
	a := &data.MeasuredRow{GPUType: "h200", Jobs: jobs, Pairs: []data.MeasuredPair{
		{A: "A", B: "B", RunsA: []float64{6}, RunsB: []float64{2}, RateA: 6, RateB: 2},
		{A: "B", B: "B", RunsA: []float64{}, RunsB: []float64{}, Note: "not measured: timeout"},
	}}
	b := &data.MeasuredRow{GPUType: "h200", Jobs: jobs, Pairs: []data.MeasuredPair{
		{A: "B", B: "A", RunsA: []float64{3, 2.5}, RunsB: []float64{7, 5}, RateA: 2.75, RateB: 6},
		{A: "A", B: "A", RunsA: []float64{5}, RunsB: []float64{5.5}, RateA: 5, RateB: 5.5},
	}}
	got, err := data.MergeMeasured(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []data.MeasuredPair{
		{A: "A", B: "B", RunsA: []float64{6, 7, 5}, RunsB: []float64{2, 3, 2.5}, RateA: 6, RateB: 2.5},
		{A: "B", B: "B", RunsA: []float64{}, RunsB: []float64{}, Note: "not measured: timeout"},
		{A: "A", B: "A", RunsA: []float64{5}, RunsB: []float64{5.5}, RateA: 5, RateB: 5.5},
	}
	if diff := cmp.Diff(want, got.Pairs); diff != "" {
		t.Errorf("merged pairs (-want +got):\n%s", diff)
	}
	if a.Pairs[0].RunsA[0] != 6 || len(a.Pairs[0].RunsA) != 1 {
		t.Errorf("the first row's pair changed: %+v", a.Pairs[0])
	}
	bad := &data.MeasuredRow{GPUType: "h200", Jobs: jobs[:1], Pairs: b.Pairs[:1]}
	if _, err := data.MergeMeasured(a, bad); !errors.Is(err, gpufair.ErrValue) || !strings.Contains(err.Error(), "row 1: pair 0") {
		t.Errorf("a pair of a job type its row lacks: %v", err)
	}
}

// TestMeasuredH200Pairs checks h200-pairs.json against gpu-probe's output it
// was written with (h200-pairs.log, 4 significant digits): seven of Gavel's
// job types, each measured alone and in every pair, itself included, with
// the rates printed; Gavel's table holds every one of those pairs on a V100,
// so the two can be compared.
func TestMeasuredH200Pairs(t *testing.T) {
	r, err := data.LoadMeasured(data.Measured(), "h200-pairs.json")
	if err != nil {
		t.Fatal(err)
	}
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	log, err := fs.ReadFile(data.Measured(), "h200-pairs.log")
	if err != nil {
		t.Fatal(err)
	}
	printed := map[string]string{} // "A + B" or "A" → what the log printed for h200
	cur := ""
	for _, line := range strings.Split(string(log), "\n") {
		if head, _, ok := strings.Cut(line, ": profiling "); ok && !strings.HasPrefix(line, " ") {
			cur = head
		} else if rest, ok := strings.CutPrefix(line, "  h200: "); ok && cur != "" {
			printed[cur] = rest
		}
	}
	four := func(xs []float64) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = strconv.FormatFloat(x, 'g', 4, 64)
		}
		return strings.Join(s, " ")
	}
	if len(r.Jobs) != 7 || len(r.Pairs) != 28 {
		t.Fatalf("%d jobs and %d pairs, want 7 and 28", len(r.Jobs), len(r.Pairs))
	}
	for _, j := range r.Jobs {
		if want := four([]float64{j.Rate}) + " (runs [" + four(j.Runs) + "])"; printed[j.JobType] != want {
			t.Errorf("%s: row %q, log %q", j.JobType, want, printed[j.JobType])
		}
	}
	for _, p := range r.Pairs {
		want := fmt.Sprintf("%s + %s (runs [%s] and [%s])", four([]float64{p.RateA}), four([]float64{p.RateB}), four(p.RunsA), four(p.RunsB))
		if got := printed[p.A+" + "+p.B]; got != want {
			t.Errorf("%s + %s: row %q, log %q", p.A, p.B, want, got)
		}
		a, b := data.JobType{Model: p.A, Scale: 1}, data.JobType{Model: p.B, Scale: 1}
		if _, _, ok := gavel.Pair("v100", a, b); !ok {
			t.Errorf("Gavel's table has no V100 pair %s + %s", p.A, p.B)
		}
	}
}
