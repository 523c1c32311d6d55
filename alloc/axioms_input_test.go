package alloc_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// TestAxiomInputErrors checks that bad input gives an *gpufair.InputError naming
// the input, from every check and from Audit, never a panic.
func TestAxiomInputErrors(t *testing.T) {
	good := func() *alloc.Allocation {
		a := alloc.NewAllocation([]string{"u1", "u2"}, twoTypes)
		a.GPUs = [][]float64{{0.5, 0.5}, {0.5, 0.5}}
		return a
	}
	vals := []alloc.Valuation{alloc.Linear{1, 2}, alloc.Linear{1, 3}}
	for _, tc := range []struct {
		name      string
		edit      func(a *alloc.Allocation, c *alloc.Capacity, v *[]alloc.Valuation, w *[]float64)
		wantField string
		wantErr   error
	}{
		{"NaN amount", func(a *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) {
			a.GPUs[1][0] = math.NaN()
		}, "Allocation.GPUs", gpufair.ErrValue},
		{"negative amount", func(a *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) { a.GPUs[0][1] = -1 }, "Allocation.GPUs", gpufair.ErrValue},
		{"short bundle", func(a *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) {
			a.GPUs[0] = a.GPUs[0][:1]
		}, "Allocation.GPUs", gpufair.ErrShape},
		{"labels and rows differ", func(a *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) { a.Rows = a.Rows[:1] }, "Allocation.GPUs", gpufair.ErrShape},
		{"no rows", func(a *alloc.Allocation, _ *alloc.Capacity, v *[]alloc.Valuation, _ *[]float64) {
			a.Rows, a.GPUs, *v = nil, nil, nil
		}, "Allocation.GPUs", gpufair.ErrEmpty},
		{"over capacity", func(a *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) { a.GPUs[0][0] = 2 }, "Allocation.GPUs", gpufair.ErrValue},
		{"zero capacity", func(_ *alloc.Allocation, c *alloc.Capacity, _ *[]alloc.Valuation, _ *[]float64) {
			c.Count = []float64{0, 1}
		}, "Capacity.Count", gpufair.ErrValue},
		{"too few valuations", func(_ *alloc.Allocation, _ *alloc.Capacity, v *[]alloc.Valuation, _ *[]float64) { *v = (*v)[:1] }, "Valuations", gpufair.ErrShape},
		{"nil valuation", func(_ *alloc.Allocation, _ *alloc.Capacity, v *[]alloc.Valuation, _ *[]float64) { (*v)[1] = nil }, "Valuations", gpufair.ErrEmpty},
		{"short Linear", func(_ *alloc.Allocation, _ *alloc.Capacity, v *[]alloc.Valuation, _ *[]float64) {
			(*v)[1] = alloc.Linear{1}
		}, "Valuations", gpufair.ErrShape},
		{"Inf rate", func(_ *alloc.Allocation, _ *alloc.Capacity, v *[]alloc.Valuation, _ *[]float64) {
			(*v)[0] = alloc.Linear{1, math.Inf(1)}
		}, "Valuations", gpufair.ErrValue},
		{"weights length", func(_ *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, w *[]float64) { *w = []float64{1} }, "Weights", gpufair.ErrShape},
		{"zero weight", func(_ *alloc.Allocation, _ *alloc.Capacity, _ *[]alloc.Valuation, w *[]float64) { *w = []float64{1, 0} }, "Weights", gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, c, v := good(), alloc.Capacity{Types: twoTypes.Types, Count: append([]float64(nil), twoTypes.Count...)}, append([]alloc.Valuation(nil), vals...)
			var w []float64
			tc.edit(a, &c, &v, &w)
			_, err := alloc.Audit(context.Background(), a, c, v, w, nil)
			var ie *gpufair.InputError
			if !errors.As(err, &ie) || ie.Field != tc.wantField || !errors.Is(err, tc.wantErr) {
				t.Errorf("Audit() error = %v, want an *gpufair.InputError on %s wrapping %v", err, tc.wantField, tc.wantErr)
			}
		})
	}
	if _, err := alloc.EnvyFreeness(nil, vals, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("EnvyFreeness(nil) error = %v, want gpufair.ErrEmpty", err)
	}
	if _, err := alloc.SharingIncentive(nil, twoTypes, vals, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("SharingIncentive(nil) error = %v, want gpufair.ErrEmpty", err)
	}
	_, err := alloc.ParetoEfficiency(context.Background(), good(), twoTypes, []alloc.Linear{{1, 2}, {1, 3}}, &alloc.ParetoSettings{RowCap: []float64{1, math.NaN()}})
	if !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("ParetoEfficiency(RowCap NaN) error = %v, want gpufair.ErrValue", err)
	}
	_, err = alloc.Audit(context.Background(), good(), twoTypes, []alloc.Valuation{alloc.BestOf{{1, 2}}, alloc.Linear{1, 3}}, nil, &alloc.AuditSettings{Mechanism: equalSplit})
	if !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("Audit(probe with BestOf truth) error = %v, want gpufair.ErrValue", err)
	}
}

// TestWorthlessRow: a row that values every bundle at 0 (a user whose
// jobs all left, a job with a zero row) is audited, not refused: it gains
// nothing from its equal share, so sharing incentive holds for it with
// margin 0, and it envies no one. Audit refused it with "the row values its
// equal share at 0", so no allocation with such a user could be audited.
func TestWorthlessRow(t *testing.T) {
	a := alloc.NewAllocation([]string{"idle", "busy"}, twoTypes)
	a.GPUs = [][]float64{{0, 0}, {1, 1}}
	vals := []alloc.Valuation{alloc.Linear{0, 0}, alloc.Linear{1, 3}}
	r, err := alloc.Audit(context.Background(), a, twoTypes, vals, nil, nil)
	if err != nil {
		t.Fatalf("Audit() error = %v", err)
	}
	if si := r.SharingIncentive; !si.Holds || si.Margin[0] != 0 || si.Worst != 0 {
		t.Errorf("sharing incentive = %+v, want it to hold with margin 0 for the worthless row", si)
	}
	if !r.Envy.Holds || r.Envy.Envy[0][1] != 0 {
		t.Errorf("envy = %+v, want none", r.Envy)
	}
	a.GPUs = [][]float64{{1, 0}, {0, 1}}
	vals[0] = gangValuation{}
	if r, err = alloc.Audit(context.Background(), a, twoTypes, vals, nil, &alloc.AuditSettings{SkipPareto: true}); err != nil || !math.IsInf(r.SharingIncentive.Margin[0], 1) {
		t.Errorf("Audit(row worth 0 on its share, more on its bundle) margin = %v (%v), want +Inf", r.SharingIncentive.Margin, err)
	}
}

// gangValuation values only whole GPUs of the first type: worth 0 on an
// equal share (half of twoTypes' one GPU), 1 on a bundle holding it.
type gangValuation struct{}

func (gangValuation) Value(b []float64) float64 { return math.Floor(b[0]) }

func TestByOwnerErrors(t *testing.T) {
	a := alloc.NewAllocation([]string{"j1", "j2"}, twoTypes)
	users := []alloc.Tenant{{ID: "u", Weight: 1}}
	jobs := []alloc.Job{{ID: "j1", Owner: "u", Gang: 1, Weight: 1}, {ID: "j2", Owner: "v", Gang: 1, Weight: 1}}
	if _, err := a.ByOwner(jobs, users); !errors.Is(err, gpufair.ErrUnknownID) {
		t.Errorf("unknown owner: error = %v, want gpufair.ErrUnknownID", err)
	}
	jobs[1].Owner = "u"
	jobs[0].ID, jobs[1].ID = "j2", "j1"
	if _, err := a.ByOwner(jobs, users); !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("rows out of job order: error = %v, want gpufair.ErrShape", err)
	}
	if _, err := alloc.OwnerValuations(jobs, users, []alloc.Linear{{1, 2}}); !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("OwnerValuations with too few valuations: error = %v, want gpufair.ErrShape", err)
	}
}

// TestAllocationRows: RowIndex finds each row by label (and not a label
// the allocation lacks), and Bundle is that row's own GPUs per type, so a
// write through it shows in GPUs and in Used.
func TestAllocationRows(t *testing.T) {
	a := alloc.NewAllocation([]string{"u1", "u2", "u3"}, twoTypes)
	a.GPUs = [][]float64{{0.25, 0}, {0.5, 0.25}, {0, 0.5}}
	bundles := [][]float64{{0.25, 0}, {0.5, 0.25}, {0, 0.5}}
	for want, r := range []string{"u1", "u2", "u3"} {
		i, ok := a.RowIndex(r)
		if !ok || i != want {
			t.Errorf("RowIndex(%q) = %d, %v; want %d, true", r, i, ok, want)
			continue
		}
		if diff := cmp.Diff(bundles[want], a.Bundle(i)); diff != "" {
			t.Errorf("Bundle(%d) (-want +got):\n%s", i, diff)
		}
	}
	for _, r := range []string{"u4", "", "U1"} {
		if i, ok := a.RowIndex(r); ok {
			t.Errorf("RowIndex(%q) = %d, true for a label not in the allocation", r, i)
		}
	}
	a.Bundle(2)[0] = 0.25
	if a.GPUs[2][0] != 0.25 {
		t.Errorf("a write through Bundle(2) left GPUs[2] = %v", a.GPUs[2])
	}
	if diff := cmp.Diff([]float64{1, 0.75}, a.Used()); diff != "" {
		t.Errorf("Used() after the write (-want +got):\n%s", diff)
	}
	// A row out of range has no bundle (it indexed past the rows and
	// panicked).
	for _, i := range []int{-1, 3} {
		if b := a.Bundle(i); b != nil {
			t.Errorf("Bundle(%d) = %v, want nil", i, b)
		}
	}
	// A row longer than Types (which Validate refuses) counts its
	// amounts on Types only (it indexed past them and panicked).
	a.GPUs[1] = append(a.GPUs[1], 5)
	if diff := cmp.Diff([]float64{1, 0.75}, a.Used()); diff != "" {
		t.Errorf("Used() with a row too long (-want +got):\n%s", diff)
	}
}

// TestIsolatedRateBadInput: rates of the wrong length indexed past their
// end and panicked, and a gang of 0 gave NaN; both rate 0, a job that runs
// nowhere.
func TestIsolatedRateBadInput(t *testing.T) {
	if got := alloc.IsolatedRate([]float64{1, 2}, 1, twoTypes, 1); !(got > 0) {
		t.Fatalf("IsolatedRate() of a valid job = %v, want positive", got)
	}
	for _, tc := range []struct {
		name  string
		rates []float64
		gang  int
	}{
		{"one rate for two types", []float64{1}, 1},
		{"three rates for two types", []float64{1, 2, 3}, 1},
		{"gang 0", []float64{1, 2}, 0},
		{"negative gang", []float64{1, 2}, -1},
	} {
		if got := alloc.IsolatedRate(tc.rates, tc.gang, twoTypes, 1); got != 0 {
			t.Errorf("%s: IsolatedRate() = %v, want 0", tc.name, got)
		}
	}
}

// TestCapacityTotal: Total adds the GPUs of every type, fractional counts
// included.
func TestCapacityTotal(t *testing.T) {
	for _, tc := range []struct {
		count []float64
		want  float64
	}{
		{[]float64{1}, 1},
		{[]float64{4, 8}, 12},
		{[]float64{2.5, 0.25, 3}, 5.75},
	} {
		types := []topology.GPUType{"k80", "p100", "v100"}[:len(tc.count)]
		c, err := alloc.NewCapacity(types, tc.count)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Total(); got != tc.want {
			t.Errorf("Total() of %v = %v, want %v", tc.count, got, tc.want)
		}
	}
	if got := twoTypes.Total(); got != 2 {
		t.Errorf("Total() of twoTypes = %v, want 2", got)
	}
}

// TestValidateFor: an allocation of a problem has one row per job and
// stays within its capacity; a policy's result of another shape, or over
// capacity, or against a nil problem, is an input error naming what is
// wrong.
func TestValidateFor(t *testing.T) {
	c, err := alloc.NewCapacity([]topology.GPUType{"k80", "v100"}, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := alloc.NewJobProblem(c, nil, []alloc.Job{
		{ID: "a", Gang: 1, Weight: 1, Rates: []float64{1, 2}},
		{ID: "b", Gang: 1, Weight: 1, Rates: []float64{1, 3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := alloc.MaxMin{}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ValidateFor(p); err != nil {
		t.Errorf("MaxMin's allocation: %v", err)
	}
	short := alloc.NewAllocation([]string{"a"}, c)
	over := alloc.NewAllocation([]string{"a", "b"}, c)
	over.GPUs[0][1], over.GPUs[1][1] = 1, 1
	for _, tc := range []struct {
		name  string
		a     *alloc.Allocation
		p     *alloc.Problem
		field string
		want  error
	}{
		{"one row for two jobs", short, p, "Allocation.GPUs", gpufair.ErrShape},
		{"two v100s of one", over, p, "Allocation.GPUs", gpufair.ErrValue},
		{"nil problem", a, nil, "Problem", gpufair.ErrEmpty},
		{"nil allocation", nil, p, "Allocation", gpufair.ErrEmpty},
	} {
		err := tc.a.ValidateFor(tc.p)
		var ie *gpufair.InputError
		if !errors.Is(err, tc.want) || !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("%s: ValidateFor() = %v, want an *InputError on %s wrapping %v", tc.name, err, tc.field, tc.want)
		}
	}
}
