package data_test

import (
	"math"
	"testing"
	"testing/fstest"

	"github.com/gpufair/gpufair/data"
)

// FuzzLoadThroughputs reads arbitrary bytes as a throughput file:
// LoadThroughputs must not panic, and what it takes must hold only job
// types of a model and a scale of at least 1, and throughputs that are
// finite and not negative (a negative one was once taken).
func FuzzLoadThroughputs(f *testing.F) {
	f.Add([]byte(`{"v100": {"('ResNet', 1)": {"null": 1, "('A', 1)": [3, 2]}}}`))
	f.Add([]byte(`{"k80": {"('A', 2)": {"null": 0}}, "v100": {"('B', 1)": {"null": 1e308}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tp, err := data.LoadThroughputs(fstest.MapFS{"t.json": {Data: b}}, "t.json")
		if err != nil {
			return
		}
		for _, gpu := range tp.GPUs() {
			for _, j := range tp.JobTypes() {
				if j.Model == "" || j.Scale < 1 {
					t.Fatalf("job type %v taken", j)
				}
				if r, ok := tp.Isolated(gpu, j); ok && !(r >= 0 && !math.IsInf(r, 0)) {
					t.Fatalf("%s %v: throughput %v taken", gpu, j, r)
				}
				for _, o := range tp.JobTypes() {
					if a, b, ok := tp.Pair(gpu, j, o); ok && !(a >= 0 && b >= 0) {
						t.Fatalf("%s %v with %v: throughputs %v, %v taken", gpu, j, o, a, b)
					}
				}
			}
		}
	})
}

// FuzzLoadMeasured reads arbitrary bytes as a measured row: LoadMeasured
// must not panic, and a row it takes has a GPU type and only measured jobs
// with positive rates.
func FuzzLoadMeasured(f *testing.F) {
	f.Add([]byte(`{"gpu_type": "h100", "jobs": [{"job_type": "A", "batch": 4, "runs": [2, 1, 3], "rate": 2}]}`))
	f.Add([]byte(`{"gpu_type": "x", "jobs": [{"job_type": "A", "batch": 1, "runs": [], "rate": 0, "note": "n"}]}`))
	f.Add([]byte(`{"gpu_type": "x", "jobs": [{"job_type": "A", "runs": [4], "rate": 4}, {"job_type": "B", "runs": [2], "rate": 2}],
		"pairs": [{"a": "A", "b": "B", "runs_a": [3, 1], "runs_b": [1, 2], "rate_a": 2, "rate_b": 1.5}, {"a": "B", "b": "B", "runs_a": [], "runs_b": []}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := data.LoadMeasured(fstest.MapFS{"r.json": {Data: b}}, "r.json")
		if err != nil {
			return
		}
		if r.GPUType == "" || len(r.Jobs) == 0 {
			t.Fatalf("row %+v taken", r)
		}
		for _, j := range r.Jobs {
			if rate, ok := r.Rate(j.JobType); ok && !(rate > 0 && !math.IsInf(rate, 0)) {
				t.Fatalf("%q: rate %v taken", j.JobType, rate)
			}
		}
		for _, p := range r.Pairs {
			ra, rb, ok := r.Pair(p.A, p.B)
			ba, bb, bok := r.Pair(p.B, p.A)
			// A pair of a job type with itself reads the same either way.
			if ok != bok || (p.A != p.B && (ra != bb || rb != ba)) {
				t.Fatalf("pair %q + %q: %v, %v, %v one way and %v, %v, %v the other", p.A, p.B, ra, rb, ok, ba, bb, bok)
			}
			if ok && !(ra > 0 && rb > 0 && !math.IsInf(ra, 0) && !math.IsInf(rb, 0)) {
				t.Fatalf("pair %q + %q: rates %v and %v taken", p.A, p.B, ra, rb)
			}
		}
	})
}
