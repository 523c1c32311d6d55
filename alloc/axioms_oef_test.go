package alloc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/topology"
)

// exactTol is the tolerance on margins that the examples give exactly in
// rationals: only floating-point rounding separates them.
const exactTol = 1e-12

// oefInstance turns a paper example into an allocation, a cluster and
// linear valuations.
func oefInstance(t *testing.T, e testcases.OEFExample) (*alloc.Allocation, alloc.Capacity, []alloc.Valuation, []alloc.Linear) {
	t.Helper()
	types := make([]topology.GPUType, len(e.Types))
	for k, s := range e.Types {
		types[k] = topology.GPUType(s)
	}
	c, err := alloc.NewCapacity(types, e.Count)
	if err != nil {
		t.Fatal(err)
	}
	a := alloc.NewAllocation(e.Users, c)
	vals := make([]alloc.Valuation, len(e.Users))
	lin := make([]alloc.Linear, len(e.Users))
	for i := range e.Users {
		copy(a.GPUs[i], e.Alloc[i])
		lin[i] = alloc.Linear(append([]float64(nil), e.Speedups[i]...))
		vals[i] = lin[i]
	}
	return a, c, vals, lin
}

// TestOEFExamplesVerdicts reproduces the verdicts of OEF sections 2.4 and
// 3.1.1 on their worked examples, with the exact allocations (ERRATA.md).
func TestOEFExamplesVerdicts(t *testing.T) {
	for _, e := range testcases.OEFExamples() {
		t.Run(e.Name, func(t *testing.T) {
			a, c, vals, _ := oefInstance(t, e)
			si, err := alloc.SharingIncentive(a, c, vals, e.Weights)
			if err != nil {
				t.Fatal(err)
			}
			if si.Holds != e.SharingIncentive {
				t.Errorf("SharingIncentive().Holds = %v, want %v (%s); margins %v", si.Holds, e.SharingIncentive, e.Reason, si.Margin)
			}
			ef, err := alloc.EnvyFreeness(a, vals, e.Weights)
			if err != nil {
				t.Fatal(err)
			}
			if ef.Holds != e.EnvyFree {
				t.Errorf("EnvyFreeness().Holds = %v, want %v (%s); envy %v", ef.Holds, e.EnvyFree, e.Reason, ef.Envy)
			}
			if e.Envier >= 0 && !(ef.Envy[e.Envier][e.Envied] > alloc.AxiomTol) {
				t.Errorf("Envy[%d][%d] = %v, want > AxiomTol (%s)", e.Envier, e.Envied, ef.Envy[e.Envier][e.Envied], e.Reason)
			}
			var total float64
			for _, u := range a.Utilities(vals) {
				total += u
			}
			if math.Abs(total-e.TotalEfficiency) > exactTol {
				t.Errorf("total efficiency = %v, want %v", total, e.TotalEfficiency)
			}
		})
	}
}

// TestOEFGandivaFairMargins checks the exact margins of expression (1):
// u3 values u2's bundle 7/15·4 = 28/15 against its own 16/9, an envy of
// exactly 1/20, and it is the only envious pair; every user's sharing
// margin is positive, the smallest u2's (7/5)/(4/3) − 1 = 1/20.
func TestOEFGandivaFairMargins(t *testing.T) {
	a, c, vals, _ := oefInstance(t, testcases.OEFGandivaFair())
	ef, err := alloc.EnvyFreeness(a, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ef.Envier != 2 || ef.Envied != 1 || math.Abs(ef.MaxEnvy-1.0/20) > exactTol {
		t.Errorf("witness = u%d envies u%d by %v, want u3 envies u2 by 1/20", ef.Envier+1, ef.Envied+1, ef.MaxEnvy)
	}
	for i, row := range ef.Envy {
		for j, e := range row {
			if (i != 2 || j != 1) && e > 0 {
				t.Errorf("Envy[%d][%d] = %v, want ≤ 0: only u3 envies u2", i, j, e)
			}
		}
	}
	si, err := alloc.SharingIncentive(a, c, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{53.0/45 - 1, (7.0/5)/(4.0/3) - 1, (16.0/9)/(5.0/3) - 1}
	for i := range want {
		if math.Abs(si.Margin[i]-want[i]) > exactTol {
			t.Errorf("Margin[%d] = %v, want %v", i, si.Margin[i], want[i])
		}
	}
	if si.Worst != 1 {
		t.Errorf("Worst = %d, want 1 (u2, margin 1/20)", si.Worst)
	}
}

// TestOEFStarMoreEfficient checks that X* (2) is SI and EF with margins
// exactly 0 where the paper's constraints bind, and more efficient than
// Gandiva_fair's (1): 4.5 against 196/45.
func TestOEFStarMoreEfficient(t *testing.T) {
	star, gf := testcases.OEFStar(), testcases.OEFGandivaFair()
	if !(star.TotalEfficiency > gf.TotalEfficiency) {
		t.Fatalf("fixture: X* total %v not above Gandiva_fair's %v", star.TotalEfficiency, gf.TotalEfficiency)
	}
	a, c, vals, _ := oefInstance(t, star)
	si, err := alloc.SharingIncentive(a, c, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if si.Worst != 0 || math.Abs(si.Margin[0]) > exactTol {
		t.Errorf("u1's sharing margin = %v (worst row %d), want exactly 0 at row 0", si.Margin[0], si.Worst)
	}
	ef, err := alloc.EnvyFreeness(a, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ef.MaxEnvy) > exactTol {
		t.Errorf("MaxEnvy = %v, want exactly 0 (u1 and u2, u2 and u3 are indifferent)", ef.MaxEnvy)
	}
}

// TestOEFMaxEfficiencyWitnesses checks the witnesses of expression (5):
// u2 gets nothing (sharing margin −1), u1 prefers u3's bundle twice over,
// and u2, holding nothing, envies without bound.
func TestOEFMaxEfficiencyWitnesses(t *testing.T) {
	a, c, vals, _ := oefInstance(t, testcases.OEFMaxEfficiency())
	si, err := alloc.SharingIncentive(a, c, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if si.Worst != 1 || si.Margin[1] != -1 {
		t.Errorf("worst sharing margin = %v at row %d, want −1 at row 1", si.Margin[si.Worst], si.Worst)
	}
	ef, err := alloc.EnvyFreeness(a, vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ef.Envy[0][2]-1) > exactTol || !math.IsInf(ef.Envy[1][2], 1) {
		t.Errorf("Envy[u1][u3] = %v, Envy[u2][u3] = %v; want 1 and +Inf", ef.Envy[0][2], ef.Envy[1][2])
	}
	if ef.Envier != 1 || !math.IsInf(ef.MaxEnvy, 1) {
		t.Errorf("witness = row %d by %v, want row 1 by +Inf", ef.Envier, ef.MaxEnvy)
	}
}

// TestOEFPareto checks Pareto efficiency on the examples: OEF says
// Gandiva_fair's (1) is Pareto-efficient, and (2) and (5) are too (the only
// slow GPU holder has the lowest speedup ratio; (5) maximises the total).
// Gavel's (3) is not: u1 and u2 can trade, as the paper shows, and the
// witness must then be feasible and hurt no one. Under Gavel's per-job cap
// (footnote 2's weaker notion) the same allocation is Pareto-efficient.
func TestOEFPareto(t *testing.T) {
	ctx := context.Background()
	for _, e := range []testcases.OEFExample{testcases.OEFGandivaFair(), testcases.OEFStar(), testcases.OEFMaxEfficiency(), testcases.OEFEnvyFreeTwoUsers()} {
		a, c, _, lin := oefInstance(t, e)
		r, err := alloc.ParetoEfficiency(ctx, a, c, lin, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Holds {
			t.Errorf("%s: ParetoEfficiency().Holds = false with gain %v, witness %v", e.Name, r.Gain, r.Witness.GPUs)
		}
	}
	a, c, _, lin := oefInstance(t, testcases.OEFGavel())
	r, err := alloc.ParetoEfficiency(ctx, a, c, lin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Holds || r.Witness == nil {
		t.Fatalf("Gavel (3): Holds = %v, want false with a witness", r.Holds)
	}
	if err := r.Witness.Validate(c); err != nil {
		t.Errorf("witness is infeasible: %v", err)
	}
	before, after := a.Utilities(linearVals(lin)), r.Witness.Utilities(linearVals(lin))
	for i := range before {
		if after[i] < before[i]*(1-alloc.AxiomTol) {
			t.Errorf("witness lowers u%d from %v to %v", i+1, before[i], after[i])
		}
	}
	capped, err := alloc.ParetoEfficiency(ctx, a, c, lin, &alloc.ParetoSettings{RowCap: []float64{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !capped.Holds {
		t.Errorf("Gavel (3) with per-job caps: Holds = false, gain %v, witness %v", capped.Gain, capped.Witness.GPUs)
	}
}

func linearVals(lin []alloc.Linear) []alloc.Valuation {
	v := make([]alloc.Valuation, len(lin))
	for i, l := range lin {
		v[i] = l
	}
	return v
}
