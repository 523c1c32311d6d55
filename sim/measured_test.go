package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"pgregory.net/rapid"
)

// TestMeasuredRates completes Gavel's table with the H100 row: every job
// type gets a finite rate, positive where it runs on a V100; the one-GPU
// job types the row measured keep their measured rates, and exactly the
// others are marked estimated; a spread gang of several GPUs is slowed as
// on the V100, and a one-GPU job type not at all; Of finds a job's rates
// by its job type.
func TestMeasuredRates(t *testing.T) {
	tp, row := gavelAndH100(t)
	rates, err := MeasuredRates(tp, GavelTypes(), row)
	if err != nil {
		t.Fatal(err)
	}
	if len(rates) != len(tp.JobTypes()) {
		t.Fatalf("%d rates for %d job types", len(rates), len(tp.JobTypes()))
	}
	for _, jt := range tp.JobTypes() {
		r := rates[jt]
		if v, _ := tp.Isolated("v100", jt); v > 0 && !(r.One > 0 && !math.IsInf(r.One, 0)) {
			t.Errorf("%v: rate %v, want finite and positive", jt, r.One)
		}
		m, ok := row.Rate(jt.Model)
		switch measured := ok && jt.Scale == 1; {
		case measured && (r.One != m || r.Estimated):
			t.Errorf("%v: rate %v (estimated %v), want the measured %v", jt, r.One, r.Estimated, m)
		case !measured && !r.Estimated:
			t.Errorf("%v: not measured on the H100, yet not marked estimated", jt)
		}
		want := r.One
		if v, _ := tp.Isolated("v100", jt); jt.Scale > 1 && v > 0 {
			spread, _ := tp.Isolated("v100_unconsolidated", jt)
			want = r.One * spread / v
		}
		if math.Abs(r.Spread-want) > 1e-12*want {
			t.Errorf("%v: spread rate %v, want %v", jt, r.Spread, want)
		}
	}
	lm := rates[data.JobType{Model: "LM (batch size 20)", Scale: 8}]
	if !(lm.Spread < 0.2*lm.One) {
		t.Errorf("LM (batch size 20) ×8 spread at %v of its one-server rate, want the V100's 0.12", lm.Spread/lm.One)
	}
	if one, spread := rates.Of(&Job{Job: alloc.Job{Gang: 8}, Kind: "LM (batch size 20)"}); one != lm.One || spread != lm.Spread {
		t.Errorf("Of(LM (batch size 20) on 8 GPUs) = %v, %v, want %v, %v", one, spread, lm.One, lm.Spread)
	}
	if one, spread := rates.Of(&Job{Job: alloc.Job{Gang: 3}, Kind: "LM (batch size 20)"}); one != 0 || spread != 0 {
		t.Errorf("Of a job type the table lacks = %v, %v, want 0, 0", one, spread)
	}
}

// TestMeasuredRatesErrors: missing inputs, a row of a type the table
// already has, and a row that shares no job type with the table are
// refused with errors that say so.
func TestMeasuredRatesErrors(t *testing.T) {
	tp, row := gavelAndH100(t)
	v100 := *row
	v100.GPUType = "v100"
	stranger := *row
	stranger.Jobs = []data.MeasuredJob{{JobType: "nothing Gavel measured", Runs: []float64{1}, Rate: 1}}
	for _, c := range []struct {
		name string
		tp   *data.Throughputs
		row  *data.MeasuredRow
		want error
	}{
		{"nil throughputs", nil, row, gpufair.ErrEmpty},
		{"nil row", tp, nil, gpufair.ErrEmpty},
		{"a type of the table", tp, &v100, gpufair.ErrDuplicate},
		{"no job type in common", tp, &stranger, speedup.ErrEstimate},
	} {
		if _, err := MeasuredRates(c.tp, GavelTypes(), c.row); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := MeasuredRates(tp, nil, row); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("no types: error %v, want %v", err, gpufair.ErrEmpty)
	}
}

// gavelAndH100 loads Gavel's throughputs and the H100 row of package data.
func gavelAndH100(t *testing.T) (*data.Throughputs, *data.MeasuredRow) {
	t.Helper()
	row, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		t.Fatal(err)
	}
	return gavelThroughputs(t), row
}

// TestPropertyMeasuredRatesKeepsMeasuredCells: with any subset of the H100
// row's job types measured, MeasuredRates keeps exactly those rates, marks
// every other job type estimated, and gives each a finite rate that is
// positive where the job type runs on a V100.
func TestPropertyMeasuredRatesKeepsMeasuredCells(t *testing.T) {
	tp, full := gavelAndH100(t)
	rapid.Check(t, func(t *rapid.T) {
		row := *full
		row.Jobs = nil
		for _, j := range full.Jobs {
			if j.Measured() && rapid.Bool().Draw(t, j.JobType) {
				row.Jobs = append(row.Jobs, j)
			}
		}
		if len(row.Jobs) == 0 {
			row.Jobs = full.Jobs[:1]
		}
		rates, err := MeasuredRates(tp, GavelTypes(), &row)
		if err != nil {
			t.Fatal(err)
		}
		for _, jt := range tp.JobTypes() {
			r := rates[jt]
			m, ok := row.Rate(jt.Model)
			measured := ok && jt.Scale == 1
			if measured != !r.Estimated || measured && r.One != m {
				t.Fatalf("%v: rate %v, estimated %v; the row has %v (%v)", jt, r.One, r.Estimated, m, ok)
			}
			if math.IsNaN(r.One) || math.IsInf(r.One, 0) || math.IsNaN(r.Spread) || math.IsInf(r.Spread, 0) {
				t.Fatalf("%v: rates %v", jt, r)
			}
			if v, _ := tp.Isolated("v100", jt); v > 0 && !(r.One > 0) {
				t.Fatalf("%v: rate %v on the H100, %v on the V100", jt, r.One, v)
			}
		}
	})
}
