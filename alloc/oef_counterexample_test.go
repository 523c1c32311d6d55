package alloc_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/lp"
)

// TestOEFNonCooperativeUnderReportingPays shows the limit of Theorem 5.4
// (ERRATA.md): with speedups <1,2> and <1,5> on one GPU of each type, u1
// honestly gets <1, 4/7> worth 15/7; reporting <1, 1.5> it gets <1, 8/13>,
// truly worth 29/13 > 15/7.
func TestOEFNonCooperativeUnderReportingPays(t *testing.T) {
	count := []float64{1, 1}
	honest := allocateOEF(t, oefUsersProblem(t, count, nil, [][]float64{{1, 2}, {1, 5}}), alloc.NonCooperative, alloc.OEFStructured)
	lied := allocateOEF(t, oefUsersProblem(t, count, nil, [][]float64{{1, 1.5}, {1, 5}}), alloc.NonCooperative, alloc.OEFStructured)
	truth := alloc.Linear{1, 2}
	if got, want := truth.Value(honest.GPUs[0]), 15.0/7; !oefApprox(got, want) {
		t.Fatalf("u1's honest throughput = %v, want 15/7", got)
	}
	if got, want := truth.Value(lied.GPUs[0]), 29.0/13; !oefApprox(got, want) {
		t.Errorf("u1's true throughput after under-reporting = %v, want 29/13 (> 15/7)", got)
	}
}

// TestOEFNonCooperativeNotEnvyFreeNorSharingIncentive: in the same
// instance u2 gets <0, 3/7> worth 15/7, values u1's <1, 4/7> at 27/7 and
// an equal split <1/2, 1/2> at 3.
func TestOEFNonCooperativeNotEnvyFreeNorSharingIncentive(t *testing.T) {
	p := oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {1, 5}})
	a := allocateOEF(t, p, alloc.NonCooperative, alloc.OEFStructured)
	u2 := alloc.Linear{1, 5}
	own, other, share := u2.Value(a.GPUs[1]), u2.Value(a.GPUs[0]), u2.Value([]float64{0.5, 0.5})
	if !oefApprox(own, 15.0/7) || !oefApprox(other, 27.0/7) {
		t.Errorf("u2 values its bundle at %v and u1's at %v, want 15/7 < 27/7 (envy)", own, other)
	}
	if !(own < share-oefTol) {
		t.Errorf("u2's throughput %v, want below its equal share %v", own, share)
	}
}

// TestOEFNonCooperativeIdleGPUs shows where Pareto efficiency stops: u1
// cannot run on the fast type, so equal throughputs stop at 1 each, with
// u1 on the slow GPU and u2 on 1/5 of the fast one; the other 4/5 stay idle
// although u2 would use them and u1 does not care.
func TestOEFNonCooperativeIdleGPUs(t *testing.T) {
	p := oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 0}, {1, 5}})
	a := allocateOEF(t, p, alloc.NonCooperative, alloc.OEFStructured)
	if diff := cmp.Diff([][]float64{{1, 0}, {0, 0.2}}, a.GPUs, cmpopts.EquateApprox(0, oefTol)); diff != "" {
		t.Fatalf("allocation mismatch (-want +got):\n%s", diff)
	}
	// u2 on the idle 4/5 of the fast GPU: from 1 to 5, relative to the
	// larger of its value (1) and its 1/n share of everything (3).
	if rep := oefPareto(t, p, a); rep.Holds || !oefApprox(rep.Gain, 4.0/3) {
		t.Errorf("Pareto: Holds = %v, gain %v, want false and 4/3", rep.Holds, rep.Gain)
	}
}

// TestOEFCooperativeNotParetoEfficient shows the limit of Theorem 5.3
// (ERRATA.md). u2 values every type alike, so it envies anyone holding more
// GPUs than it does; that caps what the fast users can take. The unique
// cooperative optimum is u1 = <0, 1/3, 1>, u2 = <1, 1/3, 0>,
// u3 = <0, 1/3, 1> (total 83/3), and a not envy-free allocation raises the
// total by 1/3 without lowering anyone.
func TestOEFCooperativeNotParetoEfficient(t *testing.T) {
	s := [][]float64{{1, 3, 12}, {1, 1, 1}, {1, 4, 12}}
	count := []float64{1, 1, 2}
	want := [][]float64{{0, 1.0 / 3, 1}, {1, 1.0 / 3, 0}, {0, 1.0 / 3, 1}}
	p := oefUsersProblem(t, count, nil, s)
	for _, method := range oefMethods {
		a := allocateOEF(t, p, alloc.Cooperative, method)
		if diff := cmp.Diff(want, a.GPUs, cmpopts.EquateApprox(0, oefTol)); diff != "" {
			t.Errorf("%v: allocation mismatch (-want +got):\n%s", method, diff)
		}
		rep := oefPareto(t, p, a)
		if rep.Holds {
			t.Fatalf("%v: Pareto efficient, want a Pareto improvement", method)
		}
		if g := oefTotal(t, p, rep.Witness) - oefTotal(t, p, a); g <= oefTol || g > 1.0/3+oefTol {
			t.Errorf("%v: the witness raises the total by %v, want (0, 1/3]", method, g)
		}
	}
	// Uniqueness: over the optimal face of (10), every variable is pinned.
	for i := range s {
		for k := range count {
			lo, hi := coopOptimalRange(t, s, count, 83.0/3, i, k)
			if hi-lo > 1e-6 {
				t.Errorf("x[%d][%d] ranges over [%v, %v] among cooperative optima, want a unique optimum", i, k, lo, hi)
			}
		}
	}
}

// coopOptimalRange returns the least and greatest x[i][k] over envy-free
// allocations whose total reaches opt.
func coopOptimalRange(t *testing.T, s [][]float64, count []float64, opt float64, i, k int) (lo, hi float64) {
	t.Helper()
	solve := func(sense lp.Sense) float64 {
		m := lp.NewModel(sense)
		x := m.AddGrid("x", len(s), len(count), 0, lp.Inf)
		for k, n := range count {
			m.AddConstraint("capacity", x.ColTerms(k, nil), lp.LE, n)
		}
		var total []lp.Term
		for a, r := range s {
			total = append(total, x.RowTerms(a, r)...)
			for b := range s {
				if a != b {
					neg := make([]float64, len(r))
					for k, w := range r {
						neg[k] = -w
					}
					m.AddConstraint("envy", append(x.RowTerms(a, r), x.RowTerms(b, neg)...), lp.GE, 0)
				}
			}
		}
		m.AddConstraint("optimal", total, lp.GE, opt-1e-9)
		m.SetObjective(x.At(i, k), 1)
		sol, err := lp.Solve(context.Background(), m, nil)
		if err != nil {
			t.Fatal(err)
		}
		return sol.Objective
	}
	return solve(lp.Minimize), solve(lp.Maximize)
}

// oefPareto runs ParetoEfficiency under the speedup valuations.
func oefPareto(t oefT, p *alloc.Problem, a *alloc.Allocation) *alloc.ParetoReport {
	t.Helper()
	rep, err := alloc.ParetoEfficiency(context.Background(), a, p.Capacity, oefLinear(t, p), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
