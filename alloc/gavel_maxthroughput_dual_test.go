package alloc

import (
	"context"
	"testing"

	"pgregory.net/rapid"
)

// totalThroughput returns Σ_i Σ_k T_ik·X_ik of allocation a of p.
func totalThroughput(p *Problem, a *Allocation) float64 {
	var sum float64
	for i, j := range p.Jobs {
		for k, g := range a.GPUs[i] {
			sum += p.Throughputs.At(i, k) * g / float64(j.Gang)
		}
	}
	return sum
}

// certifiedDual solves p's MaxTotalThroughput through the dual, requires
// it certified and feasible, and returns it with p normalised and its
// classes.
func certifiedDual(t fataler, p *Problem) (*Allocation, *Problem, rowClasses) {
	t.Helper()
	q, _, err := p.validNormalised()
	if err != nil {
		t.Fatal(err)
	}
	rc := q.rateClasses(nil)
	x, ok, err := newThroughputDual(q, rc).solve(context.Background(), nil)
	if err != nil || !ok {
		t.Fatalf("dual at %d jobs: ok %v, error %v", len(p.Jobs), ok, err)
	}
	a := timeFractionsToAllocation(q, rc.split(x))
	checkGavelFeasible(t, p, a)
	return a, q, rc
}

// checkThroughputDual requires p's MaxTotalThroughput through the dual
// certified, feasible and as high as the full LP's optimum.
func checkThroughputDual(t fataler, p *Problem) {
	t.Helper()
	dual, q, rc := certifiedDual(t, p)
	full, err := MaxTotalThroughput{}.allocateLP(context.Background(), q, rc)
	if err != nil {
		t.Fatal(err)
	}
	got, want := totalThroughput(p, dual), totalThroughput(p, full)
	if got < want*(1-1e-7) || got > want*(1+1e-7) {
		t.Fatalf("dual's throughput %v, the full LP's %v", got, want)
	}
}

// TestPropertyThroughputDualEqualsLP: on small problems with integer rates
// (many ties between types, and zero rates), MaxTotalThroughput's dual
// method certifies an optimum: a feasible allocation whose total
// throughput equals the full LP's.
func TestPropertyThroughputDualEqualsLP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		checkThroughputDual(t, genGavelProblem(8, false).Draw(t, "problem"))
	})
}

// TestThroughputDualAtScale: the same at 3,000 distinct jobs × 4 types,
// where Allocate takes the dual, and at 20,000 (BenchmarkMaxTotalThroughput's
// largest instance, where the full LP takes seconds) the dual certifies its
// result: there the recovery needed ties within 1e-4 of the best margin.
func TestThroughputDualAtScale(t *testing.T) {
	checkThroughputDual(t, randomMaxMinProblem(t, 3000, 4, 1))
	certifiedDual(t, randomMaxMinProblem(t, 20000, 4, 1))
}
