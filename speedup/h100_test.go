package speedup_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// loadWithH100 is Gavel's 26 job types at scale 1 on K80, P100 and V100 (from
// simulation_throughputs.json) with a fourth column, the H100 rates gpufair
// measured (data.Measured's h100.json); the one job type not measured there is
// NaN. Rows are labelled by Gavel's model key.
func loadWithH100(t testing.TB) (rows []string, types []topology.GPUType, values [][]float64) {
	t.Helper()
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	h100, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		t.Fatal(err)
	}
	old := []string{"k80", "p100", "v100"}
	for _, g := range old {
		types = append(types, topology.GPUType(g))
	}
	types = append(types, "h100")
	for _, j := range gavel.JobTypes() {
		if j.Scale != 1 {
			continue
		}
		row := make([]float64, 0, 4)
		for _, g := range old {
			v, ok := gavel.Isolated(g, j)
			if !ok {
				t.Fatalf("%v not measured on %s", j, g)
			}
			row = append(row, v)
		}
		v, ok := h100.Rate(j.Model)
		if !ok {
			v = math.NaN()
		}
		rows, values = append(rows, j.Model), append(values, append(row, v))
	}
	return rows, types, values
}

// newTypeProtocols hide cells of the last column only: the new GPU type's
// rates, to be predicted from the older types.
var newTypeProtocols = []protocol{
	{"new type, leave one out", func(values [][]float64) [][][2]int {
		var out [][][2]int
		for _, c := range positive(values) {
			if c[1] == len(values[0])-1 {
				out = append(out, [][2]int{c})
			}
		}
		return out
	}},
	{"new type, one job measured", func(values [][]float64) [][][2]int {
		// The new type profiled with one job type only: hide the rest of
		// its column.
		last := len(values[0]) - 1
		var cells [][2]int
		for _, c := range positive(values) {
			if c[1] == last {
				cells = append(cells, c)
			}
		}
		var out [][][2]int
		for _, keep := range cells {
			var m [][2]int
			for _, c := range cells {
				if c != keep {
					m = append(m, c)
				}
			}
			out = append(out, m)
		}
		return out
	}},
}

// scaledFromPrevious is the baseline a scheduler without an estimator would
// use for a new GPU type: each missing cell of the last column is the row's
// rate on the type before it times the median ratio between the two types
// over the rows measured on both.
func scaledFromPrevious(_ []string, _ []topology.GPUType, values [][]float64) ([][]float64, error) {
	last := len(values[0]) - 1
	var ratios []float64
	for _, r := range values {
		if r[last] > 0 && r[last-1] > 0 {
			ratios = append(ratios, r[last]/r[last-1])
		}
	}
	slices.Sort(ratios)
	ratio := quantile(ratios, 0.5)
	out := make([][]float64, len(values))
	for i, r := range values {
		out[i] = slices.Clone(r)
		if math.IsNaN(r[last]) {
			out[i][last] = r[last-1] * ratio
		}
	}
	return out, nil
}

// TestCompleteH100 asks how well Complete predicts the H100 rates measured
// on a real device from Gavel's K80, P100 and V100 measurements, with the
// H100 cells hidden one at a time and with all but one hidden
// (docs/benchmarks/gpu.md records the figures). The rates were measured
// with rebuilt models on random inputs, not Gavel's code and data, and many
// are bound by the host rather than the GPU, so no estimator does well; the
// bounds are a little above what the default estimator achieves, so that a
// change to it that makes it worse fails here.
func TestCompleteH100(t *testing.T) {
	rows, types, values := loadWithH100(t)
	if len(rows) != 26 {
		t.Fatalf("%d rows, want Gavel's 26 job types at scale 1", len(rows))
	}
	def := estimator{"log, effects (default)", completeWith(speedup.CompleteSettings{})}
	for _, tc := range []struct {
		p         protocol
		maxMedian float64
	}{
		{newTypeProtocols[0], 0.45},
		{newTypeProtocols[1], 0.55},
	} {
		errs, refused := relErrors(t, def, tc.p, rows, types, values)
		if refused > 0 || len(errs) == 0 {
			t.Fatalf("%s: %d estimates, %d masks refused", tc.p.name, len(errs), refused)
		}
		med := quantile(errs, 0.5)
		t.Logf("%s: median relative error %.3f (p90 %.2f) over %d hidden cells", tc.p.name, med, quantile(errs, 0.9), len(errs))
		if med > tc.maxMedian {
			t.Errorf("%s: median relative error %.3f, want at most %.2f", tc.p.name, med, tc.maxMedian)
		}
	}
	// The one job type not measured on the H100 is estimated, from every
	// measured cell.
	c, err := speedup.Complete(rows, types, values, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(rows, "Transformer (batch size 128)")
	if i < 0 || !c.Estimated[i][3] {
		t.Fatalf("Transformer (batch size 128) on the H100: row %d, not estimated", i)
	}
	t.Logf("Transformer (batch size 128) on the H100, estimated: %.2f steps/s (V100 %.2f)", c.Matrix.At(i, 3), values[i][2])
}

// TestCompleteH100Report prints every estimator's errors on the H100 column
// beside the scaled-V100 baseline, for docs/benchmarks/gpu.md. Run with
// go test ./speedup -run H100Report -v -estimate.report.
func TestCompleteH100Report(t *testing.T) {
	if !*estimateReport {
		t.Skip("run with -estimate.report")
	}
	rows, types, values := loadWithH100(t)
	es := append(estimators(), estimator{"V100 × median H100/V100 ratio", scaledFromPrevious})
	for _, e := range es {
		line := "| " + e.name + " |"
		for _, p := range newTypeProtocols {
			errs, refused := relErrors(t, e, p, rows, types, values)
			line += fmt.Sprintf(" %.3f (%.2f)", quantile(errs, 0.5), quantile(errs, 0.9))
			if refused > 0 {
				line += fmt.Sprintf(", %d refused", refused)
			}
			line += " |"
		}
		t.Log(line)
	}
	// Each measured H100 cell against the default estimate with it hidden.
	last := len(types) - 1
	for i, r := range values {
		if math.IsNaN(r[last]) {
			continue
		}
		hidden := make([][]float64, len(values))
		for j := range values {
			hidden[j] = slices.Clone(values[j])
		}
		hidden[i][last] = math.NaN()
		c, err := speedup.Complete(rows, types, hidden, nil)
		if err != nil {
			t.Fatal(err)
		}
		est := c.Matrix.At(i, last)
		t.Logf("| %s | %.4g | %.4g | %.2f | %.4g | %+.0f%% |", rows[i], r[last-1], r[last], r[last]/r[last-1], est, 100*(est-r[last])/r[last])
	}
}
