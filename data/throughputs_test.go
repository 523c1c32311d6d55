package data_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
)

func TestLoadThroughputs(t *testing.T) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tp.GPUs()), 6; got != want {
		t.Errorf("GPUs() = %v, want %d keys", tp.GPUs(), want)
	}
	jobs := tp.JobTypes()
	models := map[string]bool{}
	for _, j := range jobs {
		models[j.Model] = true
	}
	if len(models) != 26 {
		t.Errorf("%d models, want 26", len(models))
	}
	r18 := data.JobType{Model: "ResNet-18 (batch size 16)", Scale: 1}
	// Faster GPUs train faster: the measured ordering K80 < P100 < V100.
	k80, ok1 := tp.Isolated("k80", r18)
	v100, ok2 := tp.Isolated("v100", r18)
	if !ok1 || !ok2 || !(0 < k80 && k80 < v100) {
		t.Errorf("Isolated(%v) = k80 %v (%v), v100 %v (%v); want 0 < k80 < v100", r18, k80, ok1, v100, ok2)
	}
	a, b, ok := tp.Pair("v100", r18, r18)
	if !ok || !(a > 0 && a == b && a <= v100) {
		t.Errorf("Pair(v100, %v, itself) = %v, %v, %v; want equal rates, at most the isolated %v", r18, a, b, ok, v100)
	}
}

func TestLoadThroughputsErrors(t *testing.T) {
	for name, body := range map[string]string{
		"notjson":  `{`,
		"badkey":   `{"v100": {"ResNet": {"null": 1}}}`,
		"badscale": `{"v100": {"('ResNet', x)": {"null": 1}}}`,
		"badrate":  `{"v100": {"('ResNet', 1)": {"null": "fast"}}}`,
		"badpair":  `{"v100": {"('ResNet', 1)": {"('A', 1)": 3}}}`,
		"negative": `{"v100": {"('ResNet', 1)": {"null": -1}}}`,
		"negpair":  `{"v100": {"('ResNet', 1)": {"('A', 1)": [3, -2]}}}`,
	} {
		fsys := fstest.MapFS{"t.json": {Data: []byte(body)}}
		if _, err := data.LoadThroughputs(fsys, "t.json"); err == nil {
			t.Errorf("%s: LoadThroughputs(%s) = nil error", name, body)
		}
	}
	// Two faults: the error names the first in sorted order, every time
	// (it was whichever the map's order gave first).
	two := fstest.MapFS{"t.json": {Data: []byte(`{"v100": {"('B', 1)": {"null": -1}}, "k80": {"('A', 1)": {"null": -2}}}`)}}
	for range 20 {
		if _, err := data.LoadThroughputs(two, "t.json"); err == nil || !strings.Contains(err.Error(), "k80") {
			t.Fatalf("LoadThroughputs(two faults) = %v, want the k80 one", err)
		}
	}
	if _, err := data.LoadThroughputs(fstest.MapFS{}, "missing.json"); err == nil {
		t.Error("LoadThroughputs(missing file) = nil error")
	}
}

// TestNilThroughputs: a nil *Throughputs has measured nothing (its
// lookups dereferenced nil, and sim.Rates and sim.GavelColocation with it
// panicked).
func TestNilThroughputs(t *testing.T) {
	var tp *data.Throughputs
	j := data.JobType{Model: "ResNet-18 (batch size 64)", Scale: 1}
	if _, ok := tp.Isolated("v100", j); ok {
		t.Error("Isolated on nil: ok")
	}
	if _, _, ok := tp.Pair("v100", j, j); ok {
		t.Error("Pair on nil: ok")
	}
	if tp.GPUs() != nil || tp.JobTypes() != nil {
		t.Errorf("GPUs, JobTypes on nil = %v, %v", tp.GPUs(), tp.JobTypes())
	}
}

// TestLoadThroughputsRefusesMalformed: what encoding/json reads without a
// word into a wrong table is refused with a typed error naming the field and
// the entry. A null rate or pair read as 0 (a job that "does not fit"), a
// pair of one rate as [r, 0], a pair of three dropped the third, a repeated
// key or a second key of the same job type ("('A', 01)") kept one of the
// rates, and a job type or GPU with nothing measured was listed as measured.
func TestLoadThroughputsRefusesMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, body, field, id string
		want                  error
	}{
		{"null rate", `{"v100": {"('A', 1)": {"null": null}}}`, "Throughputs.Isolated", "v100 ('A', 1)", gpufair.ErrValue},
		{"null pair", `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": null}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrShape},
		{"null in pair", `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1, null]}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrValue},
		{"short pair", `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1]}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrShape},
		{"long pair", `{"v100": {"('A', 1)": {"null": 1, "('B', 1)": [1, 2, 3]}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrShape},
		{"bad pair key", `{"v100": {"('A', 1)": {"null": 1, "B": [1, 2]}}}`, "Throughputs.Pair", "v100 ('A', 1) with B", gpufair.ErrValue},
		{"negative", `{"v100": {"('A', 1)": {"null": -1}}}`, "Throughputs.Isolated", "v100 ('A', 1)", gpufair.ErrValue},
		{"negative pair", `{"v100": {"('A', 1)": {"('B', 1)": [3, -2]}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrValue},
		{"rate not a number", `{"v100": {"('A', 1)": {"null": "fast"}}}`, "Throughputs.Isolated", "v100 ('A', 1)", gpufair.ErrValue},
		{"rate overflows", `{"v100": {"('A', 1)": {"null": 1e400}}}`, "Throughputs.Isolated", "v100 ('A', 1)", gpufair.ErrValue},
		{"bad job key", `{"v100": {"ResNet": {"null": 1}}}`, "Throughputs.JobType", "v100 ResNet", gpufair.ErrValue},
		{"repeated job key", `{"v100": {"('A', 1)": {"null": 5}, "('A', 1)": {"null": 7}}}`, "Throughputs.GPU", "v100", gpufair.ErrDuplicate},
		{"job type keyed twice", `{"v100": {"('A', 1)": {"null": 5}, "('A', 01)": {"null": 7}}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrDuplicate},
		{"job type keyed +1", `{"v100": {"('A', 1)": {"null": 5}, "('A', +1)": {"null": 7}}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrDuplicate},
		{"repeated rate", `{"v100": {"('A', 1)": {"null": 5, "null": 7}}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrDuplicate},
		{"other job keyed twice", `{"v100": {"('A', 1)": {"('B', 1)": [1, 2], "('B', 01)": [3, 4]}}}`, "Throughputs.Pair", "v100 ('A', 1) with ('B', 1)", gpufair.ErrDuplicate},
		{"repeated GPU", `{"v100": {"('A', 1)": {"null": 5}}, "v100": {"('A', 1)": {"null": 7}}}`, "Throughputs", "", gpufair.ErrDuplicate},
		{"job, nothing measured", `{"v100": {"('A', 1)": {}}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrEmpty},
		{"job, null", `{"v100": {"('A', 1)": null}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrEmpty},
		{"job, not an object", `{"v100": {"('A', 1)": [1]}}`, "Throughputs.JobType", "v100 ('A', 1)", gpufair.ErrValue},
		{"GPU, no jobs", `{"v100": {}}`, "Throughputs.GPU", "v100", gpufair.ErrEmpty},
		{"GPU, null", `{"v100": null}`, "Throughputs.GPU", "v100", gpufair.ErrEmpty},
		{"GPU, no name", `{"": {"('A', 1)": {"null": 5}}}`, "Throughputs.GPU", "", gpufair.ErrEmpty},
		{"no GPUs", `{}`, "Throughputs", "", gpufair.ErrEmpty},
		{"null", `null`, "Throughputs", "", gpufair.ErrEmpty},
		{"not an object", `[1, 2]`, "Throughputs", "", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := data.LoadThroughputs(fstest.MapFS{"t.json": {Data: []byte(tc.body)}}, "t.json")
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field || ie.ID != tc.id {
				t.Fatalf("LoadThroughputs(%s) = %v, error %v; want a %s[%s] error wrapping %v", tc.body, tp, err, tc.field, tc.id, tc.want)
			}
		})
	}
}

// TestLoadNilFS: a nil fs.FS made LoadThroughputs and LoadMeasured panic
// inside fs.ReadFile; it is an input error on "fsys".
func TestLoadNilFS(t *testing.T) {
	for name, load := range map[string]func() error{
		"LoadThroughputs": func() error { _, err := data.LoadThroughputs(nil, "x"); return err },
		"LoadMeasured":    func() error { _, err := data.LoadMeasured(nil, "x"); return err },
	} {
		err := load()
		var in *gpufair.InputError
		if !errors.As(err, &in) || in.Field != "fsys" || !errors.Is(err, gpufair.ErrEmpty) {
			t.Errorf("%s(nil) error = %v, want an *gpufair.InputError on fsys wrapping gpufair.ErrEmpty", name, err)
		}
	}
}
