package speedup_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// additive is a matrix whose rates are a job's level plus a type's: exactly
// the linear additive model, which the log models do not fit.
func additive() ([]string, []topology.GPUType, [][]float64) {
	rows := []string{"a", "b", "c", "d", "e", "f"}
	types := []topology.GPUType{"x", "y", "z", "w"}
	job, typ := []float64{1, 4, 9, 2, 30, 12}, []float64{0, 3, 20, 7}
	values := make([][]float64, len(rows))
	for i := range rows {
		for k := range types {
			values[i] = append(values[i], job[i]+typ[k])
		}
	}
	return rows, types, values
}

// TestSelectSettingsFindsTheModel checks that cross-validation finds the
// model a matrix was made from: the linear additive one for additive rates,
// with errors near zero where the log models' are not; and of two
// candidates that fit alike a product of job and type factors, exactly, the
// first. The input is left as it was, and the
// result is the same on a second call.
func TestSelectSettingsFindsTheModel(t *testing.T) {
	rows, types, values := additive()
	values[2][3] = math.NaN() // a missing cell stays missing
	before := [][]float64{}
	for _, r := range values {
		before = append(before, slices.Clone(r))
	}
	sel, err := speedup.SelectSettings(context.Background(), rows, types, values, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (speedup.CompleteSettings{Space: speedup.LinearSpace}); sel.Best != want {
		t.Errorf("chose %+v, want %+v", sel.Best, want)
	}
	for _, v := range sel.Validations {
		if len(v.Errors) != 23 {
			t.Fatalf("%+v: %d errors, want one for each of the 23 measured cells", v.Settings, len(v.Errors))
		}
		switch {
		case v.Settings == sel.Best && !(v.Median < 1e-6):
			t.Errorf("the additive linear model's median error is %v on additive rates", v.Median)
		case v.Settings == speedup.CompleteSettings{} && !(v.Median > 0.01):
			t.Errorf("the log model's median error is %v on additive rates", v.Median)
		}
	}
	if diff := cmp.Diff(before, values, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("values changed (-before +after):\n%s", diff)
	}
	again, err := speedup.SelectSettings(context.Background(), rows, types, values, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sel, again, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("a second call differs (-first +second):\n%s", diff)
	}

	for i := range values {
		for k := range values[i] {
			values[i][k] = float64(i+1) * float64(2*k+1)
		}
	}
	// MaxIter 0 means 2000, so the two candidates fit alike: a tie.
	tie := []speedup.CompleteSettings{{}, {MaxIter: 2000}}
	sel, err = speedup.SelectSettings(context.Background(), rows, types, values, [][2]int{{0, 3}, {4, 1}}, tie)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Best != tie[0] || sel.Validations[0].Median != sel.Validations[1].Median || !(sel.Validations[0].Median < 1e-6) {
		t.Errorf("on a tie chose %+v (validations %+v), want the first", sel.Best, sel.Validations)
	}
}

func TestSelectSettingsErrors(t *testing.T) {
	rows, types, values := additive()
	values[1][2] = math.NaN()
	values[3][0] = 0
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	bad := [][]float64{{1, 2, 3, 4}, {1, math.Inf(1), 3, 4}}
	for name, tc := range map[string]struct {
		ctx        context.Context
		values     [][]float64
		holdOut    [][2]int
		candidates []speedup.CompleteSettings
		is         error
		want       string
	}{
		"row out of range":  {ctx, values, [][2]int{{6, 0}}, nil, nil, "(6, 0) is outside the 6×4 matrix"},
		"type out of range": {ctx, values, [][2]int{{0, -1}}, nil, nil, "(0, -1) is outside"},
		"missing cell":      {ctx, values, [][2]int{{1, 2}}, nil, nil, "(b, z) is NaN"},
		"zero cell":         {ctx, values, [][2]int{{3, 0}}, nil, nil, "(d, x) is 0"},
		"no candidates":     {ctx, values, nil, []speedup.CompleteSettings{}, gpufair.ErrEmpty, "candidates: gpufair: empty input: no candidate"},
		// Read as a rank too large for the matrix, naming nothing.
		"negative rank":  {ctx, values, nil, []speedup.CompleteSettings{{}, {Rank: -3}}, gpufair.ErrValue, "candidate 1: CompleteSettings.Rank"},
		"unknown space":  {ctx, values, nil, []speedup.CompleteSettings{{Space: 7}}, gpufair.ErrValue, "candidate 0: CompleteSettings.Space: gpufair: invalid value: Space(7)"},
		"rank too large": {ctx, values, nil, []speedup.CompleteSettings{{Rank: 4}}, speedup.ErrEstimate, "candidate 0 refuses the whole matrix (CompleteSettings.Rank"},
		"cancelled":      {cancelled, values, nil, nil, context.Canceled, "canceled"},
		"infinite rate":  {ctx, bad, nil, nil, nil, "Inf"},
	} {
		r := rows
		if len(tc.values) != len(rows) {
			r = rows[:len(tc.values)]
		}
		sel, err := speedup.SelectSettings(tc.ctx, r, types, tc.values, tc.holdOut, tc.candidates)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v, %v; want an error containing %q", name, sel, err, tc.want)
		}
	}
	// A candidate whose fits stop at MaxIter is reported, not chosen.
	sel, err := speedup.SelectSettings(ctx, rows, types, values, nil, []speedup.CompleteSettings{{Rank: 1, MaxIter: 1}, {}})
	if err != nil {
		t.Fatal(err)
	}
	if v := sel.Validations[0]; sel.Best != (speedup.CompleteSettings{}) || v.Unconverged == 0 {
		t.Errorf("one sweep of a rank-1 model: %+v, chosen %+v; want it unconverged and not chosen", v, sel.Best)
	}
	// A candidate the matrix is too small for is reported, not chosen.
	sel, err = speedup.SelectSettings(ctx, rows, types, values, nil, []speedup.CompleteSettings{{Rank: 4}, {Space: speedup.LinearSpace}})
	if err != nil {
		t.Fatal(err)
	}
	if v := sel.Validations[0]; sel.Best != sel.Validations[1].Settings || !math.IsNaN(v.Median) || !math.IsNaN(v.Errors[0]) {
		t.Errorf("a rank-4 model on a 6×4 matrix: %+v, chosen %+v", v, sel.Best)
	}
}

// TestSelectSettingsDefaultHoldOut: with holdOut nil, a cell that is the only
// measurement of its row (a new job profiled on one type) was held out too,
// so that no candidate could estimate it, and SelectSettings failed naming
// no cell while Complete succeeded. Such cells, and any whose row and type
// no other measured cells join, are now left in.
func TestSelectSettingsDefaultHoldOut(t *testing.T) {
	nan := math.NaN()
	ctx := context.Background()
	types := []topology.GPUType{"a", "b", "c"}
	rows := []string{"x", "y", "z", "w", "new"}
	values := [][]float64{{1, 2, 3}, {2, 4, 6.5}, {3, 5, 9}, {1.5, 3.1, 4}, {2, nan, nan}}
	sel, err := speedup.SelectSettings(ctx, rows, types, values, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sel.Validations[0].Errors); n != 12 {
		t.Errorf("%d cells held out, want the 12 of the complete rows", n)
	}
	// Held out by hand, the one cell of "new" is named.
	_, err = speedup.SelectSettings(ctx, rows, types, values, [][2]int{{0, 0}, {4, 0}}, nil)
	var ce *speedup.CellError
	if !errors.Is(err, speedup.ErrEstimate) || !errors.As(err, &ce) || ce.Row != "new" || ce.Type != "a" {
		t.Errorf("holding out the only cell of a row: %v; want a *CellError naming (new, a)", err)
	}
	sel, err = speedup.SelectSettings(ctx, rows[:2], types[:2], [][]float64{{1, 2}, {3, 4}}, nil, []speedup.CompleteSettings{{}})
	if err != nil || len(sel.Validations[0].Errors) != 4 {
		t.Errorf("a complete 2×2 matrix: %v, %v; want its 4 cells held out", sel, err)
	}
	// Nothing can be held out of one cell, nor of x–a, x–b, y–b: each cell
	// is its row's or type's only one, or, x–b, the only chain from x to b.
	for name, v := range map[string][][]float64{"one cell": {{5}}, "a chain": {{1, 2}, {nan, 4}}} {
		r := rows[:len(v)]
		_, err := speedup.SelectSettings(ctx, r, types[:len(v[0])], v, nil, nil)
		var ie *gpufair.InputError
		if !errors.Is(err, gpufair.ErrEmpty) || !errors.Is(err, speedup.ErrEstimate) || !errors.As(err, &ie) || ie.Field != "holdOut" {
			t.Errorf("%s: %v; want an *InputError on holdOut wrapping gpufair.ErrEmpty and ErrEstimate", name, err)
		}
	}
}
