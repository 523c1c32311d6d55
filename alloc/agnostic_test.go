package alloc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Gavel's baselines solve a policy blind to GPU speeds: in X_het's setting
// (three jobs, one V100, one K80) max-min over unit rates gives every job
// two thirds of a GPU's time in all, however fast it is on either.
func ExampleAgnostic() {
	a, err := alloc.Agnostic{Policy: alloc.MaxMin{}}.Allocate(context.Background(), xhetProblem())
	if err != nil {
		panic(err)
	}
	for i, r := range a.Rows {
		fmt.Printf("%s: %.3g GPUs\n", r, a.GPUs[i][0]+a.GPUs[i][1])
	}
	// Output:
	// job0: 0.667 GPUs
	// job1: 0.667 GPUs
	// job2: 0.667 GPUs
}

// TestAgnosticKeepsZeros checks that a type a job cannot run on stays
// closed to it, that the allocation is the policy's over unit rates, and
// that a nil policy or problem is an input error.
func TestAgnosticKeepsZeros(t *testing.T) {
	types := []topology.GPUType{"k80", "v100"}
	jobs := []alloc.Job{
		{ID: "a", Gang: 1, Weight: 1, Rates: []float64{0, 8}},
		{ID: "b", Gang: 1, Weight: 1, Rates: []float64{3, 9}},
		{ID: "c", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
	}
	p, err := alloc.NewJobProblem(alloc.Capacity{Types: types, Count: []float64{2, 1}}, nil, jobs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := alloc.Agnostic{Policy: alloc.MaxTotalThroughput{}}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if a.GPUs[0][0] != 0 {
		t.Errorf("job a got %v of a k80, where its rate is 0", a.GPUs[0][0])
	}
	// With unit rates the total throughput is the GPU time used: all 3 GPUs.
	used := 0.0
	for _, row := range a.GPUs {
		used += row[0] + row[1]
	}
	if math.Abs(used-3) > 1e-7 {
		t.Errorf("agnostic max total throughput uses %v GPUs, want all 3", used)
	}
	if got := (alloc.Agnostic{Policy: alloc.FIFO{}}).Name(); got != "fifo-agnostic" {
		t.Errorf("Name() = %q", got)
	}
	var in *gpufair.InputError
	if _, err := (alloc.Agnostic{}).Allocate(context.Background(), p); !errors.As(err, &in) {
		t.Errorf("nil policy: error %v, want an InputError", err)
	}
	if _, err := (alloc.Agnostic{Policy: alloc.MaxMin{}}).Allocate(context.Background(), nil); !errors.As(err, &in) {
		t.Errorf("nil problem: error %v, want an InputError", err)
	}
}
