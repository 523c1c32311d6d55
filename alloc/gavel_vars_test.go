package alloc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

func TestTimeFractionsRepair(t *testing.T) {
	types := []topology.GPUType{"K80", "V100"}
	c := Capacity{Types: types, Count: []float64{1, 2}}
	jobs := []Job{{ID: "a", Gang: 1, Weight: 1}, {ID: "b", Gang: 2, Weight: 1}}
	tp, err := speedup.New([]string{"a", "b"}, types, [][]float64{{1, 2}, {1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(c, nil, jobs, tp)
	if err != nil {
		t.Fatal(err)
	}
	// A vertex off by solver noise: a's time sums to 1+2e-6, a negative
	// entry, and V100 used 2+4e-6 times.
	x := [][]float64{{0.5 + 1e-6, 0.5 + 1e-6}, {-1e-7, 0.75 + 2e-6}}
	a := timeFractionsToAllocation(p, x)
	if err := a.Validate(c); err != nil {
		t.Fatalf("repaired allocation is invalid: %v", err)
	}
	want := [][]float64{{0.5, 0.5}, {0, 1.5}}
	if diff := cmp.Diff(want, a.GPUs, cmpopts.EquateApprox(0, 1e-5)); diff != "" {
		t.Errorf("repair moved the allocation too far (-want +got):\n%s", diff)
	}
	for k, u := range a.Used() {
		if u > c.Count[k]*(1+1e-12) {
			t.Errorf("type %s used %v > %v after repair", types[k], u, c.Count[k])
		}
	}
	rates, zero := p.equalShareThroughputs()
	if diff := cmp.Diff([]float64{5.0 / 3, 7.0 / 3}, rates, cmpopts.EquateApprox(0, 1e-12)); diff != "" || zero != -1 {
		t.Errorf("equalShareThroughputs() = %v, %d; mismatch (-want +got):\n%s", rates, zero, diff)
	}
}
