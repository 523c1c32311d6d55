package alloc

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
)

func TestPlacementSensitive(t *testing.T) {
	// Four GPUs of one type, two of them in a free server. Two gang-2 jobs
	// run 10 steps/s consolidated; spread out, job 0 drops to 6 and job 1 to
	// 9. The throughput-maximising split consolidates job 0: 10 + 9.
	p := gavelProblem(t, []float64{4}, []int{2, 2}, [][]float64{{10}, {10}})
	un, err := speedup.New(p.JobIDs(), p.Capacity.Types, [][]float64{{6}, {9}})
	if err != nil {
		t.Fatal(err)
	}
	pp, err := NewPlacementProblem(p, un, []float64{2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := MaxTotalThroughput{}.Allocate(context.Background(), pp.Problem)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, pp.Problem, a)
	if diff := cmp.Diff([][]float64{{2, 0}, {0, 2}}, a.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("worker-type allocation mismatch (-want +got):\n%s", diff)
	}
	folded, err := pp.Fold(a)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, folded)
	if diff := cmp.Diff([][]float64{{2}, {2}}, folded.GPUs, cmpopts.EquateApprox(0, gavelTol)); diff != "" {
		t.Errorf("folded allocation mismatch (-want +got):\n%s", diff)
	}
	// All GPUs consolidated: the unconsolidated pool disappears.
	pp, err = NewPlacementProblem(p, un, []float64{4})
	if err != nil || pp.Capacity.NumTypes() != 1 {
		t.Errorf("all consolidated: %v, %d worker types, want 1", err, pp.Capacity.NumTypes())
	}
	if _, err := NewPlacementProblem(p, un, []float64{5}); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("more consolidated GPUs than the type has: error = %v, want gpufair.ErrValue", err)
	}
	if _, err := NewPlacementProblem(p, un, nil); !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("missing pools: error = %v, want gpufair.ErrShape", err)
	}
	// Jobs that carry their rates (NewJobProblem) get the worker types'
	// rows: the physical rates would not match the pools.
	jp, err := NewJobProblem(p.Capacity, p.Tenants, []Job{
		{ID: "0", Owner: p.Jobs[0].Owner, Gang: 2, Weight: 1, Rates: []float64{10}},
		{ID: "1", Owner: p.Jobs[1].Owner, Gang: 2, Weight: 1, Rates: []float64{10}},
	})
	if err != nil {
		t.Fatal(err)
	}
	un, _ = speedup.New(jp.JobIDs(), jp.Capacity.Types, [][]float64{{6}, {9}})
	pp, err = NewPlacementProblem(jp, un, []float64{2})
	if err != nil {
		t.Fatalf("NewPlacementProblem of a NewJobProblem: %v", err)
	}
	if diff := cmp.Diff([]float64{10, 9}, pp.Jobs[1].Rates); diff != "" {
		t.Errorf("job 1's worker-type rates mismatch (-want +got):\n%s", diff)
	}
}
