package alloc_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// wantInputError fails t unless err is an *gpufair.InputError for field
// that wraps sentinel.
func wantInputError(t *testing.T, what string, err error, field string, sentinel error) {
	t.Helper()
	var ie *gpufair.InputError
	if !errors.As(err, &ie) || ie.Field != field || !errors.Is(err, sentinel) {
		t.Errorf("%s: error = %v, want an *InputError for %s wrapping %v", what, err, field, sentinel)
	}
}

func threeTypes(t *testing.T, count ...float64) alloc.Capacity {
	t.Helper()
	c, err := alloc.NewCapacity([]topology.GPUType{"a", "b", "c"}, count)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNewJobProblemEmptyCapacity: an empty capacity was blamed on the jobs'
// rates ("3 rates for 0 GPU types").
func TestNewJobProblemEmptyCapacity(t *testing.T) {
	jobs := []alloc.Job{{ID: "j", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}}}
	_, err := alloc.NewJobProblem(alloc.Capacity{}, nil, jobs)
	wantInputError(t, "NewJobProblem(Capacity{})", err, "Capacity.Types", gpufair.ErrEmpty)
}

// TestUnknownMaxMinMethod: an unknown Method was "lp: invalid settings",
// not an *InputError naming the field (OEF names OEF.Settings.Method).
func TestUnknownMaxMinMethod(t *testing.T) {
	c := threeTypes(t, 2, 2, 2)
	p, err := alloc.NewJobProblem(c, nil, []alloc.Job{{ID: "j", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pol   alloc.Policy
		field string
	}{
		{alloc.MaxMin{Method: 7}, "MaxMin.Method"},
		{alloc.MaxMinAgnostic{Method: 7}, "MaxMinAgnostic.Method"},
		{alloc.Makespan{Method: 7, RemainingSteps: []float64{1}}, "Makespan.Method"},
		{alloc.FinishTimeFairness{Method: 7, RemainingSteps: []float64{1}}, "FinishTimeFairness.Method"},
	} {
		_, err := tc.pol.Allocate(context.Background(), p)
		wantInputError(t, tc.field, err, tc.field, gpufair.ErrValue)
		if !errors.Is(err, lp.ErrInvalidSettings) {
			t.Errorf("%s: error = %v, want it to wrap lp.ErrInvalidSettings as before", tc.field, err)
		}
	}
}

// TestNilReceivers: these panicked on nil or zero values.
func TestNilReceivers(t *testing.T) {
	var p *alloc.Problem
	if v := p.Valuations(); v != nil {
		t.Errorf("(*Problem)(nil).Valuations() = %v, want nil", v)
	}
	if ids := p.JobIDs(); ids != nil {
		t.Errorf("(*Problem)(nil).JobIDs() = %v, want nil", ids)
	}
	var a *alloc.Allocation
	if u := a.Used(); u != nil {
		t.Errorf("(*Allocation)(nil).Used() = %v, want nil", u)
	}
	if b := a.Bundle(0); b != nil {
		t.Errorf("(*Allocation)(nil).Bundle(0) = %v, want nil", b)
	}
	if i, ok := a.RowIndex("a"); i != -1 || ok {
		t.Errorf("(*Allocation)(nil).RowIndex() = %d, %v, want -1, false", i, ok)
	}
	if u := a.Utilities(nil); u != nil {
		t.Errorf("(*Allocation)(nil).Utilities(nil) = %v, want nil", u)
	}
	var r *alloc.AuditReport
	if s := r.String(); s != "<nil>" {
		t.Errorf("(*AuditReport)(nil).String() = %q, want <nil>", s)
	}
	c := threeTypes(t, 2, 2, 2)
	_, err := (&alloc.PlacementProblem{}).Fold(alloc.NewAllocation([]string{"j"}, c))
	wantInputError(t, "(&PlacementProblem{}).Fold", err, "PlacementProblem", gpufair.ErrEmpty)
	_, err = (*alloc.PlacementProblem)(nil).Fold(nil)
	wantInputError(t, "(*PlacementProblem)(nil).Fold", err, "PlacementProblem", gpufair.ErrEmpty)
}

// TestValuesLetThrough: each of these was accepted.
func TestValuesLetThrough(t *testing.T) {
	users := []alloc.Tenant{{ID: "u", Weight: 1}}
	jobs := []alloc.Job{{ID: "j", Owner: "u", Gang: 1, Weight: 1}, {ID: "k", Owner: "u", Gang: 1, Weight: 1}}
	_, err := alloc.OwnerValuations(jobs, users, []alloc.Linear{{1, math.NaN()}, {1, 2}})
	wantInputError(t, "OwnerValuations(NaN rate)", err, "Valuations", gpufair.ErrValue)
	_, err = alloc.OwnerValuations(jobs, users, []alloc.Linear{{1, 2}, {1}})
	wantInputError(t, "OwnerValuations(ragged)", err, "Valuations", gpufair.ErrShape)

	if got := alloc.IsolatedRate([]float64{math.NaN(), 1}, 1, twoTypes, 1); got != 0 {
		t.Errorf("IsolatedRate(NaN rate) = %v, want 0", got)
	}
	if got := alloc.IsolatedRate([]float64{1, 1}, 1, twoTypes, math.NaN()); got != 0 {
		t.Errorf("IsolatedRate(n NaN) = %v, want 0", got)
	}

	a := alloc.NewAllocation([]string{"x", "y"}, twoTypes)
	a.GPUs[0][0], a.GPUs[1][1] = 1, 1
	vals := []alloc.Valuation{alloc.Linear{1, 1}, alloc.Linear{1, 1}}
	_, err = alloc.Audit(context.Background(), a, twoTypes, vals, []float64{1e300, 1}, &alloc.AuditSettings{SkipPareto: true})
	wantInputError(t, "Audit(weight 1e300)", err, "Weights", gpufair.ErrValue)

	c := threeTypes(t, 2, 2, 2)
	tenants := []alloc.Tenant{{ID: "s", Weight: 1}, {ID: "t", Weight: 1}}
	p, err := alloc.NewJobProblem(c, tenants, []alloc.Job{
		{ID: "j", Owner: "s", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}},
		{ID: "k", Owner: "t", Gang: 1, Weight: 1, Rates: []float64{1, 2, 3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = alloc.Hierarchical{FIFO: []alloc.TenantID{"s", "s"}}.Allocate(context.Background(), p)
	wantInputError(t, "Hierarchical(FIFO twice)", err, "Hierarchical.FIFO", gpufair.ErrDuplicate)
}

// TestProbeSettingsThatTryNothing: these settings tried nothing and
// reported Holds.
func TestProbeSettingsThatTryNothing(t *testing.T) {
	truth := [][]float64{{1, 2}, {1, 3}}
	for _, tc := range []struct {
		name    string
		s       alloc.ProbeSettings
		field   string
		wantErr error
	}{
		{"NaN factor", alloc.ProbeSettings{Factors: []float64{math.NaN()}}, "ProbeSettings.Factors", gpufair.ErrValue},
		{"infinite factor", alloc.ProbeSettings{Factors: []float64{math.Inf(1)}}, "ProbeSettings.Factors", gpufair.ErrValue},
		{"negative factor", alloc.ProbeSettings{Factors: []float64{-1}, AnyMisreport: true}, "ProbeSettings.Factors", gpufair.ErrValue},
		{"every bad factor, no trials", alloc.ProbeSettings{Factors: []float64{math.NaN(), math.Inf(1), -1, 1}, Trials: -1}, "ProbeSettings.Factors", gpufair.ErrValue},
		{"factor 1 and no trials", alloc.ProbeSettings{Factors: []float64{1}, Trials: -1}, "ProbeSettings", gpufair.ErrEmpty},
		{"deflations without AnyMisreport", alloc.ProbeSettings{Factors: []float64{0.5}, Trials: -1}, "ProbeSettings", gpufair.ErrEmpty},
		{"no rows", alloc.ProbeSettings{Rows: []int{}}, "ProbeSettings", gpufair.ErrEmpty},
	} {
		_, err := alloc.ProbeStrategyProofness(context.Background(), equalSplit, truth, &tc.s)
		wantInputError(t, tc.name, err, tc.field, tc.wantErr)
	}
}

// TestProbeLazy: the probe made every misreport before the first call, so
// a deadline was seen only after 0.31 s and 184 MB at 10⁶ trials (Trials
// 1e9 ran for more than 20 s). Now it makes one at a time.
func TestProbeLazy(t *testing.T) {
	truth := [][]float64{{1, 2}, {1, 3}}
	allocs := testing.AllocsPerRun(1, func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		mech := func(ctx context.Context, r [][]float64) (*alloc.Allocation, error) {
			if calls++; calls == 3 {
				cancel()
			}
			return equalSplit(ctx, r)
		}
		_, err := alloc.ProbeStrategyProofness(ctx, mech, truth, &alloc.ProbeSettings{Trials: 100000})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ProbeStrategyProofness(cancelled) error = %v, want context.Canceled", err)
		}
	})
	if allocs > 1000 {
		t.Errorf("ProbeStrategyProofness cancelled after 3 calls made %v allocations, want the misreports made one at a time", allocs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := alloc.ProbeStrategyProofness(ctx, equalSplit, truth, &alloc.ProbeSettings{Trials: 1e9})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ProbeStrategyProofness(Trials 1e9, 50 ms) error = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("ProbeStrategyProofness(Trials 1e9, 50 ms) took %v", d)
	}
}

// TestProbeMechanismOutput: an allocation of the wrong shape under a
// misreport was counted as a refused report, and one over capacity gave
// a gain of 1.18e6; Audit, which knows the capacity, refuses it.
func TestProbeMechanismOutput(t *testing.T) {
	truth := [][]float64{{1, 2}, {1, 3}}
	calls := 0
	ragged := func(ctx context.Context, r [][]float64) (*alloc.Allocation, error) {
		a, _ := equalSplit(ctx, r)
		if calls++; calls > 1 {
			a.GPUs[0] = a.GPUs[0][:1]
		}
		return a, nil
	}
	_, err := alloc.ProbeStrategyProofness(context.Background(), ragged, truth, nil)
	wantInputError(t, "probe(ragged under a misreport)", err, "Mechanism", gpufair.ErrShape)

	greedy := func(ctx context.Context, r [][]float64) (*alloc.Allocation, error) {
		a, _ := equalSplit(ctx, r)
		if r[0][1] != truth[0][1] {
			a.GPUs[0][1] = 1e6
		}
		return a, nil
	}
	a, _ := equalSplit(context.Background(), truth)
	vals := []alloc.Valuation{alloc.Linear(truth[0]), alloc.Linear(truth[1])}
	_, err = alloc.Audit(context.Background(), a, twoTypes, vals, nil, &alloc.AuditSettings{SkipPareto: true, Mechanism: greedy})
	wantInputError(t, "Audit(mechanism over capacity)", err, "Mechanism", gpufair.ErrValue)
}

// TestProbeHoldSlowestOEF: non-cooperative OEF is strategy-proof against
// inflated speedups (OEF's claim); HoldSlowest makes only such reports,
// keeping each row's slowest rate true.
func TestProbeHoldSlowestOEF(t *testing.T) {
	types := []topology.GPUType{"slow", "mid", "fast"}
	c, err := alloc.NewCapacity(types, []float64{4, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 7))
	truth := make([][]float64, 5)
	for i := range truth {
		truth[i] = []float64{1, 1 + 2*rng.Float64(), 2 + 4*rng.Float64()}
	}
	ids := []string{"u0", "u1", "u2", "u3", "u4"}
	hold := true
	mech := func(ctx context.Context, reported [][]float64) (*alloc.Allocation, error) {
		for i := range reported {
			if hold && reported[i][0] != truth[i][0] {
				t.Errorf("HoldSlowest reported %v for row %d, true slowest rate %v", reported[i], i, truth[i][0])
			}
		}
		tenants := make([]alloc.Tenant, len(reported))
		jobs := make([]alloc.Job, len(reported))
		for i, r := range reported {
			tenants[i] = alloc.Tenant{ID: alloc.TenantID(ids[i]), Weight: 1}
			jobs[i] = alloc.Job{ID: alloc.JobID(ids[i]), Owner: tenants[i].ID, Gang: 1, Weight: 1, Rates: r}
		}
		p, err := alloc.NewJobProblem(c, tenants, jobs)
		if err != nil {
			return nil, err
		}
		return alloc.OEF{Mode: alloc.NonCooperative}.Allocate(ctx, p)
	}
	r, err := alloc.ProbeStrategyProofness(context.Background(), mech, truth, &alloc.ProbeSettings{Seed: 3, HoldSlowest: true})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Holds || r.Tried == 0 || r.Failed != 0 {
		t.Errorf("probe of non-cooperative OEF under inflated speedups: Holds %v, gain %v by row %d reporting %v (tried %d, failed %d), want Holds", r.Holds, r.Gain, r.Row, r.Misreport, r.Tried, r.Failed)
	}
	// Inflated rates are not inflated speedups: raising the slowest rate
	// lowers the others' speedups, and pays here (row 1 gained 32%).
	hold = false
	r, err = alloc.ProbeStrategyProofness(context.Background(), mech, truth, &alloc.ProbeSettings{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holds || r.Misreport[0] <= truth[r.Row][0] {
		t.Errorf("default probe of non-cooperative OEF: Holds %v, witness %v for truth %v, want a gain by raising the slowest rate", r.Holds, r.Misreport, truth[max(r.Row, 0)])
	}
}
