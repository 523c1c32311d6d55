package alloc_test

import (
	"context"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// TestOEFOneJobOfWideSpeedups: a single job takes every GPU, whatever its
// speedups. With speedups of 1e6, 500 and 1 (rates of 1000, 0.5 and
// 0.001 steps/s), the pure-Go solve of the weights scaled by 2^21
// (oef_scale.go) left the job without the two types it valued least and
// failed its certificate by a gap of 5e-4; every decision of the
// scheduler holding that job then failed.
func TestOEFOneJobOfWideSpeedups(t *testing.T) {
	c, err := alloc.NewCapacity([]topology.GPUType{"k80", "p100", "v100"}, []float64{2, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	p, err := alloc.NewJobProblem(c, []alloc.Tenant{{ID: "a", Weight: 1}}, []alloc.Job{{ID: "a", Owner: "a", Gang: 1, Weight: 1, Rates: []float64{1000, 0.5, 0.001}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []alloc.OEFMethod{alloc.OEFStructured, alloc.OEFFullModel} {
		a, cert, err := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{Method: m, LP: &lp.Settings{Backend: lp.PureGo}}}.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		for k, x := range a.GPUs[0] {
			if x < 2-1e-6 {
				t.Errorf("%v: the job holds %v GPUs of %q, want all 2", m, x, c.Types[k])
			}
		}
		if cert.Gap() > 1e-5 {
			t.Errorf("%v: gap %v", m, cert.Gap())
		}
	}
}
