package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// TestWorkloadWithType adds a type to a workload: each job gains its rate
// there (and its spread rate, where it has spread rates), the original is
// left as it was, and FIFO on a server of the new type runs a job at its
// new rate.
func TestWorkloadWithType(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{
		{Job: alloc.Job{ID: "j", Gang: 2, Rates: []float64{4}}, Steps: 30, Spread: []float64{2}},
		{Job: alloc.Job{ID: "k", Gang: 1, Rates: []float64{1}}, Steps: 10, Kind: "fast"},
	}}
	before := cloneWorkload(w)
	got, err := w.WithType("b", func(j *Job) (float64, float64) {
		if j.Kind == "fast" {
			return 5, 7 // k has no spread rates: 7 is not kept
		}
		return 0, 1
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, w); diff != "" {
		t.Errorf("WithType changed its receiver (-before +after):\n%s", diff)
	}
	want := &Workload{Types: []topology.GPUType{"a", "b"}, Jobs: []Job{
		{Job: alloc.Job{ID: "j", Gang: 2, Rates: []float64{4, 0}}, Steps: 30, Spread: []float64{2, 1}},
		{Job: alloc.Job{ID: "k", Gang: 1, Rates: []float64{1, 5}}, Steps: 10, Kind: "fast"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithType (-want +got):\n%s", diff)
	}

	// A workload of no types gains its first; it runs at the new rate.
	only, err := (&Workload{Jobs: []Job{{Job: alloc.Job{ID: "k", Gang: 1}, Steps: 10}}}).WithType("b", func(*Job) (float64, float64) { return 5, 5 })
	if err != nil {
		t.Fatal(err)
	}
	c := servers(topology.Server{Name: "s", Type: "b", GPUs: 1})
	res, err := Run(context.Background(), only, c, newFIFO(c, only.Types, 1), &Settings{Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Jobs[0].Finish; f != 2 {
		t.Errorf("job k finished at %v on the new type, want 10 steps / 5 per second = 2", f)
	}
}

// TestWorkloadWithTypeErrors: a type without a name, one the workload
// has, rates that are not finite and non-negative, and nil inputs are
// refused with an error naming them.
func TestWorkloadWithTypeErrors(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a"}, Jobs: []Job{{Job: alloc.Job{ID: "j", Gang: 1, Rates: []float64{1}}, Steps: 1}}}
	w.Jobs[0].Spread = []float64{0.5}
	for _, c := range []struct {
		name         string
		t            topology.GPUType
		rate, spread float64
		sentinel     error
		field        string
	}{
		{"no name", "", 1, 1, gpufair.ErrEmpty, "GPUType"},
		{"a type it has", "a", 1, 1, gpufair.ErrDuplicate, "GPUType"},
		{"NaN", "b", math.NaN(), 1, gpufair.ErrValue, "Rates"},
		{"+Inf", "b", math.Inf(1), 1, gpufair.ErrValue, "Rates"},
		{"negative", "b", -1, 1, gpufair.ErrValue, "Rates"},
		{"NaN spread", "b", 1, math.NaN(), gpufair.ErrValue, "Spread"},
		{"negative spread", "b", 1, -1, gpufair.ErrValue, "Spread"},
	} {
		_, err := w.WithType(c.t, func(*Job) (float64, float64) { return c.rate, c.spread })
		var ie *gpufair.InputError
		if !errors.Is(err, c.sentinel) || !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s: error %v, want %v on %s", c.name, err, c.sentinel, c.field)
		}
	}
	var none *Workload
	if _, err := none.WithType("b", func(*Job) (float64, float64) { return 1, 1 }); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("nil workload: error %v, want %v", err, gpufair.ErrEmpty)
	}
	if _, err := w.WithType("b", nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("nil rate: error %v, want %v", err, gpufair.ErrEmpty)
	}
}

// cloneWorkload copies w deeply.
func cloneWorkload(w *Workload) *Workload {
	out := &Workload{Types: append([]topology.GPUType(nil), w.Types...)}
	for _, j := range w.Jobs {
		j.Rates = append([]float64(nil), j.Rates...)
		if j.Spread != nil {
			j.Spread = append([]float64(nil), j.Spread...)
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out
}

// TestPropertyUnusableTypeChangesNothing: a type that no job runs on,
// added to the workload and, with servers of its own, to the cluster,
// leaves every job's start and finish under FIFO as they were.
func TestPropertyUnusableTypeChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := genInstance().Draw(t, "instance")
		L := rapid.Float64Range(1, 30).Draw(t, "round")
		set := &Settings{Round: L, Horizon: 1e5}
		before, err := Run(context.Background(), in.w, in.c, newFIFO(in.c, in.w.Types, L), set)
		if err != nil {
			t.Fatal(err)
		}
		w, err := in.w.WithType("new", func(*Job) (float64, float64) { return 0, 0 })
		if err != nil {
			t.Fatal(err)
		}
		c := topology.Cluster{Servers: append(slices.Clone(in.c.Servers),
			topology.Server{Name: "new-0", Type: "new", GPUs: rapid.IntRange(1, 8).Draw(t, "new GPUs")})}
		after, err := Run(context.Background(), w, c, newFIFO(c, w.Types, L), set)
		if err != nil {
			t.Fatal(err)
		}
		for i, j := range before.Jobs {
			a := after.Jobs[i]
			if a.ID != j.ID || a.Start != j.Start || a.Finish != j.Finish {
				t.Fatalf("job %s: start %v, finish %v; with an unusable type %s: %v, %v", j.ID, j.Start, j.Finish, a.ID, a.Start, a.Finish)
			}
		}
	})
}
