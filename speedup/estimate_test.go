package speedup_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

var estimateReport = flag.Bool("estimate.report", false, "print the estimator comparison on Gavel's throughputs (docs/benchmarks/gpu.md)")

// loadGavel reads the isolated (no space sharing) throughputs of Gavel's
// simulation_throughputs.json on the GPU keys cols, from package data; job
// types not measured on every one of them are left out. Row labels are
// "<model> x<scale factor>", sorted by model then scale: 83 rows, 26 job
// types at scale 1 and 19 of them also at 2, 4 and 8. A 0 is Gavel's own
// (the job does not fit).
func loadGavel(t testing.TB, cols ...string) (rows []string, types []topology.GPUType, values [][]float64) {
	t.Helper()
	th, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if !slices.Contains(th.GPUs(), c) {
			t.Fatalf("Gavel's throughputs have no GPU %q", c)
		}
		types = append(types, topology.GPUType(c))
	}
job:
	for _, jt := range th.JobTypes() {
		row := make([]float64, len(cols))
		for c, gpu := range cols {
			v, ok := th.Isolated(gpu, jt)
			if !ok {
				continue job
			}
			row[c] = v
		}
		rows = append(rows, fmt.Sprintf("%s x%d", jt.Model, jt.Scale))
		values = append(values, row)
	}
	return rows, types, values
}

// estimator fills the NaN cells of values.
type estimator struct {
	name string
	fill func(rows []string, types []topology.GPUType, values [][]float64) ([][]float64, error)
}

func completeWith(s speedup.CompleteSettings) func([]string, []topology.GPUType, [][]float64) ([][]float64, error) {
	return func(rows []string, types []topology.GPUType, values [][]float64) ([][]float64, error) {
		c, err := speedup.Complete(rows, types, values, &s)
		if err != nil {
			return nil, err
		}
		return c.Matrix.Values(), nil
	}
}

// rowMean is the baseline that ignores other rows: a missing cell gets the
// mean of its row's measured cells (no speedup between types).
func rowMean(_ []string, _ []topology.GPUType, values [][]float64) ([][]float64, error) {
	out := make([][]float64, len(values))
	for i, r := range values {
		s, n := 0.0, 0
		for _, x := range r {
			if !math.IsNaN(x) {
				s += x
				n++
			}
		}
		out[i] = slices.Clone(r)
		for k, x := range r {
			if math.IsNaN(x) {
				out[i][k] = s / float64(n)
			}
		}
	}
	return out, nil
}

// rowNormalised divides each row by the mean of its measured cells, completes
// the normalised speedups with s, and scales back.
func rowNormalised(s speedup.CompleteSettings) func([]string, []topology.GPUType, [][]float64) ([][]float64, error) {
	return func(rows []string, types []topology.GPUType, values [][]float64) ([][]float64, error) {
		means, _ := rowMean(rows, types, values)
		norm := make([][]float64, len(values))
		scale := make([]float64, len(values))
		for i, r := range values {
			scale[i] = 1
			for k, x := range r {
				if math.IsNaN(x) {
					scale[i] = means[i][k]
				}
			}
			if scale[i] == 0 {
				scale[i] = 1
			}
			norm[i] = make([]float64, len(r))
			for k, x := range r {
				norm[i][k] = x / scale[i]
			}
		}
		out, err := completeWith(s)(rows, types, norm)
		if err != nil {
			return nil, err
		}
		for i := range out {
			for k := range out[i] {
				out[i][k] *= scale[i]
			}
		}
		return out, nil
	}
}

func estimators() []estimator {
	return []estimator{
		{"row mean (no speedup)", rowMean},
		{"log, effects (default)", completeWith(speedup.CompleteSettings{})},
		{"log, effects + rank 1", completeWith(speedup.CompleteSettings{Rank: 1})},
		{"log, rank 1 only", completeWith(speedup.CompleteSettings{Rank: 1, NoEffects: true})},
		{"log, rank 2 only", completeWith(speedup.CompleteSettings{Rank: 2, NoEffects: true})},
		{"linear, effects", completeWith(speedup.CompleteSettings{Space: speedup.LinearSpace})},
		{"linear, rank 1 only", completeWith(speedup.CompleteSettings{Space: speedup.LinearSpace, Rank: 1, NoEffects: true})},
		{"linear, rank 2 only", completeWith(speedup.CompleteSettings{Space: speedup.LinearSpace, Rank: 2, NoEffects: true})},
		{"row-normalised linear, rank 1", rowNormalised(speedup.CompleteSettings{Space: speedup.LinearSpace, Rank: 1, NoEffects: true})},
	}
}

// protocol hides cells of a complete matrix; each mask lists the hidden
// cells. Only positive cells are hidden (a zero says the job does not fit,
// which no estimate is asked to recover).
type protocol struct {
	name  string
	masks func(values [][]float64) [][][2]int
}

func positive(values [][]float64) [][2]int {
	var out [][2]int
	for i, r := range values {
		for k, x := range r {
			if x > 0 {
				out = append(out, [2]int{i, k})
			}
		}
	}
	return out
}

var protocols = []protocol{
	{"leave one out", func(values [][]float64) [][][2]int {
		var out [][][2]int
		for _, c := range positive(values) {
			out = append(out, [][2]int{c})
		}
		return out
	}},
	{"one type measured", func(values [][]float64) [][][2]int {
		// A new job profiled on one type only: hide the rest of its row.
		var out [][][2]int
		for _, c := range positive(values) {
			var m [][2]int
			for k, x := range values[c[0]] {
				if k != c[1] && x > 0 {
					m = append(m, [2]int{c[0], k})
				}
			}
			out = append(out, m)
		}
		return out
	}},
	{"30% hidden", func(values [][]float64) [][][2]int {
		// 20 seeded draws; each positive cell hidden with probability 0.3,
		// but never the last positive cell of a row.
		var out [][][2]int
		for seed := range uint64(20) {
			r := rand.New(rand.NewPCG(seed, 7))
			var m [][2]int
			for i, row := range values {
				left := 0
				for _, x := range row {
					if x > 0 {
						left++
					}
				}
				for k, x := range row {
					if x > 0 && left > 1 && r.Float64() < 0.3 {
						m = append(m, [2]int{i, k})
						left--
					}
				}
			}
			out = append(out, m)
		}
		return out
	}},
}

// hide returns a copy of values with cells set to NaN: not measured.
func hide(values [][]float64, cells ...[2]int) [][]float64 {
	hidden := make([][]float64, len(values))
	for i := range values {
		hidden[i] = slices.Clone(values[i])
	}
	for _, c := range cells {
		hidden[c[0]][c[1]] = math.NaN()
	}
	return hidden
}

// relErrors hides each mask in turn, estimates, and returns |est-true|/true
// for every hidden cell, and how many masks the estimator refused.
func relErrors(t testing.TB, e estimator, p protocol, rows []string, types []topology.GPUType, values [][]float64) (errs []float64, refused int) {
	t.Helper()
	for _, mask := range p.masks(values) {
		est, err := e.fill(rows, types, hide(values, mask...))
		if errors.Is(err, speedup.ErrEstimate) {
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("%s, %s: %v", e.name, p.name, err)
		}
		for _, c := range mask {
			want := values[c[0]][c[1]]
			errs = append(errs, math.Abs(est[c[0]][c[1]]-want)/want)
		}
	}
	return errs, refused
}

// quantile returns the q-quantile of xs, interpolated, or NaN when xs is
// empty (every mask refused, as a linear model's may be).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[lo]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// TestCompleteGavel hides measured throughputs of Gavel's K80/P100/V100 matrix
// and checks the default estimator's median relative error on them, against
// bounds a little above what it achieves (docs/benchmarks/gpu.md) and against
// the row-mean baseline, which knows nothing of the other jobs.
func TestCompleteGavel(t *testing.T) {
	rows, types, values := loadGavel(t, "k80", "p100", "v100")
	if len(rows) != 83 {
		t.Fatalf("%d rows, want Gavel's 83 (26 job types at scale 1, 19 at 2, 4 and 8)", len(rows))
	}
	es := estimators()
	base, def := es[0], es[1]
	for _, tc := range []struct {
		p        protocol
		maxMedan float64
	}{
		{protocols[0], 0.30},
		{protocols[1], 0.40},
		{protocols[2], 0.35},
	} {
		got, refused := relErrors(t, def, tc.p, rows, types, values)
		b, _ := relErrors(t, base, tc.p, rows, types, values)
		med, bmed := quantile(got, 0.5), quantile(b, 0.5)
		t.Logf("%s: median relative error %.3f over %d hidden cells (%d masks refused); row-mean baseline %.3f", tc.p.name, med, len(got), refused, bmed)
		if med > tc.maxMedan {
			t.Errorf("%s: median relative error %.3f, want at most %.2f", tc.p.name, med, tc.maxMedan)
		}
		if med >= bmed {
			t.Errorf("%s: median relative error %.3f is no better than the row-mean baseline's %.3f", tc.p.name, med, bmed)
		}
	}
}

// TestCompleteGavelReport prints the comparison of every estimator and
// protocol recorded in docs/benchmarks/gpu.md. Run with
// go test ./speedup -run GavelReport -v -estimate.report.
func TestCompleteGavelReport(t *testing.T) {
	if !*estimateReport {
		t.Skip("run with -estimate.report")
	}
	for _, cols := range [][]string{
		{"k80", "p100", "v100"},
		{"k80", "p100", "v100", "k80_unconsolidated", "p100_unconsolidated", "v100_unconsolidated"},
	} {
		rows, types, values := loadGavel(t, cols...)
		if len(cols) > 3 {
			// At scale 1 the unconsolidated columns repeat the consolidated
			// ones, which would make hidden cells trivial to recover.
			var r2 []string
			var v2 [][]float64
			for i, r := range rows {
				if !strings.HasSuffix(r, " x1") {
					r2, v2 = append(r2, r), append(v2, values[i])
				}
			}
			rows, values = r2, v2
		}
		var b strings.Builder
		fmt.Fprintf(&b, "\n%d rows × %v\n| estimator |", len(rows), cols)
		for _, p := range protocols {
			fmt.Fprintf(&b, " %s: median (p90) |", p.name)
		}
		b.WriteString("\n| --- |")
		for range protocols {
			b.WriteString(" --- |")
		}
		b.WriteString("\n")
		for _, e := range estimators() {
			fmt.Fprintf(&b, "| %s |", e.name)
			for _, p := range protocols {
				errs, refused := relErrors(t, e, p, rows, types, values)
				fmt.Fprintf(&b, " %.3f (%.2f)", quantile(errs, 0.5), quantile(errs, 0.9))
				if refused > 0 {
					fmt.Fprintf(&b, ", %d refused", refused)
				}
				b.WriteString(" |")
			}
			b.WriteString("\n")
		}
		t.Log(b.String())
	}
}

func TestCompleteExact(t *testing.T) {
	nan := math.NaN()
	rows := []string{"a", "b", "c", "d"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	// Rates p[i]·q[k]: the log-space effects model holds exactly.
	p, q := []float64{1, 3, 0.5, 10}, []float64{1, 4, 6}
	full := make([][]float64, 4)
	for i := range full {
		full[i] = []float64{p[i] * q[0], p[i] * q[1], p[i] * q[2]}
	}
	holes := [][]float64{
		{full[0][0], nan, full[0][2]},
		{nan, full[1][1], nan},
		{full[2][0], full[2][1], nan},
		{nan, nan, full[3][2]},
	}
	// The linear rank-1 fit has as many unknowns as the sparse pattern has
	// measured cells (m+n-1 = 6); it gets a denser one.
	dense := [][]float64{
		{full[0][0], nan, full[0][2]},
		{nan, full[1][1], full[1][2]},
		{full[2][0], full[2][1], nan},
		{full[3][0], nan, full[3][2]},
	}
	for _, tc := range []struct {
		s     speedup.CompleteSettings
		holes [][]float64
	}{
		{speedup.CompleteSettings{}, holes},
		{speedup.CompleteSettings{Space: speedup.LinearSpace, Rank: 1, NoEffects: true, MaxIter: 100000, Tol: 1e-13}, dense},
	} {
		s, holes := tc.s, tc.holes
		t.Run(fmt.Sprintf("%v/rank=%d", s.Space, s.Rank), func(t *testing.T) {
			c, err := speedup.Complete(rows, types, holes, &s)
			if err != nil {
				t.Fatalf("Complete() error = %v", err)
			}
			if !c.Converged {
				t.Errorf("Complete() did not converge in %d sweeps", c.Iterations)
			}
			if diff := cmp.Diff(full, c.Matrix.Values(), cmpopts.EquateApprox(1e-6, 0)); diff != "" {
				t.Errorf("Complete() mismatch (-want +got):\n%s", diff)
			}
			wantEst := make([][]bool, len(holes))
			for i, r := range holes {
				for _, x := range r {
					wantEst[i] = append(wantEst[i], math.IsNaN(x))
				}
			}
			if diff := cmp.Diff(wantEst, c.Estimated); diff != "" {
				t.Errorf("Estimated mismatch (-want +got):\n%s", diff)
			}
			// Measured cells come back bit for bit.
			for i, r := range holes {
				for k, x := range r {
					if !math.IsNaN(x) && c.Matrix.At(i, k) != x {
						t.Errorf("measured cell (%d, %d) = %v, want %v unchanged", i, k, c.Matrix.At(i, k), x)
					}
				}
			}
		})
	}
}

// TestCompleteEffectsPlusRank: a log-space matrix with effects and one more
// component is recovered exactly by Rank 1 and not by the effects alone.
func TestCompleteEffectsPlusRank(t *testing.T) {
	const m, n = 6, 4
	rows := []string{"r0", "r1", "r2", "r3", "r4", "r5"}
	types := []topology.GPUType{"t0", "t1", "t2", "t3"}
	a := []float64{0, 1, -1, 0.5, 2, -0.3}
	b := []float64{0, 0.7, 1.5, -0.2}
	u := []float64{1, -1, 0.5, 0.2, -0.7, 1.3}
	v := []float64{0.4, -0.3, 0.8, -0.9}
	full := make([][]float64, m)
	for i := range full {
		full[i] = make([]float64, n)
		for k := range full[i] {
			full[i][k] = math.Exp(a[i] + b[k] + u[i]*v[k])
		}
	}
	holes := make([][]float64, m)
	for i := range holes {
		holes[i] = slices.Clone(full[i])
	}
	holes[0][1], holes[2][3], holes[4][0], holes[5][2] = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	c, err := speedup.Complete(rows, types, holes, &speedup.CompleteSettings{Rank: 1, MaxIter: 50000, Tol: 1e-13})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(full, c.Matrix.Values(), cmpopts.EquateApprox(1e-5, 0)); diff != "" {
		t.Errorf("rank 1 mismatch (-want +got):\n%s", diff)
	}
	c0, err := speedup.Complete(rows, types, holes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(full, c0.Matrix.Values(), cmpopts.EquateApprox(1e-3, 0)) {
		t.Errorf("the effects-only model recovered a matrix with an interaction: the test matrix is too easy")
	}
}

func TestCompleteErrors(t *testing.T) {
	nan := math.NaN()
	two := []topology.GPUType{"x", "y"}
	for _, tc := range []struct {
		name   string
		rows   []string
		types  []topology.GPUType
		values [][]float64
		s      *speedup.CompleteSettings
		want   error
		text   string
	}{
		{"row all missing", []string{"a", "b"}, two, [][]float64{{1, 2}, {nan, nan}}, nil, speedup.ErrEstimate, `row "b"`},
		{"type all missing", []string{"a", "b"}, two, [][]float64{{1, nan}, {2, nan}}, nil, speedup.ErrEstimate, `"y"`},
		// A row of zeros was said to have "no measured cell".
		{"row of zeros in log space", []string{"a", "b"}, two, [][]float64{{1, 2}, {0, nan}}, nil, speedup.ErrEstimate, `row "b": speedup: cannot estimate missing cells: every measured cell of the row is 0`},
		{"type of zeros in log space", []string{"a", "b", "c"}, two, [][]float64{{0, 1}, {0, 2}, {nan, 3}}, nil, speedup.ErrEstimate, `type "x": speedup: cannot estimate missing cells: every measured cell of the GPU type is 0`},
		{"disconnected", []string{"a", "b"}, two, [][]float64{{1, nan}, {nan, 2}}, nil, speedup.ErrEstimate, "chain"},
		{"negative", []string{"a", "b"}, two, [][]float64{{1, -2}, {nan, 2}}, nil, gpufair.ErrValue, "negative"},
		{"infinite", []string{"a", "b"}, two, [][]float64{{1, math.Inf(1)}, {nan, 2}}, nil, gpufair.ErrValue, "infinite"},
		{"short row", []string{"a", "b"}, two, [][]float64{{1}, {nan, 2}}, nil, gpufair.ErrShape, `row "a"`},
		{"duplicate row", []string{"a", "a"}, two, [][]float64{{1, 1}, {nan, 2}}, nil, gpufair.ErrShape, "duplicate"},
		{"rank too big", []string{"a", "b"}, two, [][]float64{{1, 1}, {nan, 2}}, &speedup.CompleteSettings{Rank: 2}, speedup.ErrEstimate, "CompleteSettings.Rank: gpufair: too large: speedup: cannot estimate missing cells: rank 2"},
		// Linear rates near float64's limit said "invalid value: NaN (NaN)".
		{"linear overflow", []string{"a", "b"}, two, [][]float64{{1e308, 1e308}, {1e308, nan}}, &speedup.CompleteSettings{Space: speedup.LinearSpace}, gpufair.ErrTooLarge, `row "b", type "y": speedup: cannot estimate missing cells: gpufair: too large: the linear fit overflows float64`},
		{"log overflow", []string{"a", "b", "c"}, two, [][]float64{{1e-300, 1e300}, {1e-300, 1e300}, {1e300, nan}}, nil, gpufair.ErrTooLarge, `row "c", type "y": speedup: cannot estimate missing cells: gpufair: too large: the estimate overflows float64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := speedup.Complete(tc.rows, tc.types, tc.values, tc.s)
			if !errors.Is(err, tc.want) || c != nil {
				t.Fatalf("Complete() = %v, %v; want nil, %v", c, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not name %s", err, tc.text)
			}
		})
	}
}

// TestCompleteRefusesBadSettings: a Space that is neither LogSpace nor
// LinearSpace (7, -1) fitted linearly, and negative MaxIter and Tol read as
// their defaults; each is now an *InputError naming the field.
func TestCompleteRefusesBadSettings(t *testing.T) {
	values := [][]float64{{1, 2, 3}, {2, 4, math.NaN()}, {3, 5, 7}}
	for _, tc := range []struct {
		s     speedup.CompleteSettings
		field string
	}{
		{speedup.CompleteSettings{Space: 7}, "CompleteSettings.Space"},
		{speedup.CompleteSettings{Space: -1}, "CompleteSettings.Space"},
		{speedup.CompleteSettings{Rank: -1}, "CompleteSettings.Rank"},
		{speedup.CompleteSettings{NoEffects: true}, "CompleteSettings.Rank"},
		{speedup.CompleteSettings{MaxIter: -5}, "CompleteSettings.MaxIter"},
		{speedup.CompleteSettings{Tol: -1}, "CompleteSettings.Tol"},
	} {
		c, err := speedup.Complete([]string{"a", "b", "c"}, []topology.GPUType{"x", "y", "z"}, values, &tc.s)
		var ie *gpufair.InputError
		if c != nil || !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("Complete(%+v) = %v, %v; want an *InputError on %s wrapping gpufair.ErrValue", tc.s, c, err, tc.field)
		}
	}
	for s, want := range map[speedup.Space]string{speedup.LogSpace: "log", speedup.LinearSpace: "linear", 7: "Space(7)", -1: "Space(-1)"} {
		if got := s.String(); got != want {
			t.Errorf("Space(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// TestCompleteRefusesNonPositiveEstimates: a linear fit's negative estimate
// was clipped to 0, and an exp that underflowed gave 0, both without a word;
// downstream a 0 says the job cannot run on the type.
func TestCompleteRefusesNonPositiveEstimates(t *testing.T) {
	nan := math.NaN()
	rows, two := []string{"a", "b", "c"}, []topology.GPUType{"x", "y"}
	for _, tc := range []struct {
		name   string
		values [][]float64
		s      speedup.CompleteSettings
		text   string
	}{
		// y − x is −9 on both measured rows, so c's estimate on y is 1 − 9.
		{"linear, negative", [][]float64{{10, 1}, {10, 1}, {1, nan}}, speedup.CompleteSettings{Space: speedup.LinearSpace}, "not positive"},
		// 1e-300 · 1e-300 underflows.
		{"log, underflow", [][]float64{{1, 1e-300}, {1, 1e-300}, {1e-300, nan}}, speedup.CompleteSettings{}, "underflows to 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := speedup.Complete(rows, two, tc.values, &tc.s)
			var ce *speedup.CellError
			if c != nil || !errors.Is(err, speedup.ErrEstimate) || !errors.As(err, &ce) || ce.Row != "c" || ce.Type != "y" || ce.Value > 0 {
				t.Fatalf("Complete() = %v, %v; want nil and a *CellError on (c, y) wrapping ErrEstimate", c, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
		})
	}
}

// TestCompleteNewTypeNoZeroEstimates: Gavel's K80,
// P100 and V100 with an H100 column of 3 measured cells (rows 0, 9, 20).
// SelectSettings chose the linear rank-2 fit, one of whose held-out
// estimates was 0, and Complete with it set 7 H100 cells to exactly 0
// (ResNet-18 at batch 128, measured at 105.8, among them). Now Complete
// refuses that fit naming the cells, SelectSettings does not choose it, and
// the model it chooses estimates every cell positive.
func TestCompleteNewTypeNoZeroEstimates(t *testing.T) {
	rows, types, values := loadWithMeasured(t, "h100.json")
	holdOut := [][2]int{{0, 3}, {9, 3}, {20, 3}}
	for i := range values {
		if !slices.Contains(holdOut, [2]int{i, 3}) {
			values[i][3] = math.NaN()
		}
	}
	lin2 := speedup.CompleteSettings{Space: speedup.LinearSpace, Rank: 2, NoEffects: true}
	c, err := speedup.Complete(rows, types, values, &lin2)
	var ce *speedup.CellError
	if c != nil || !errors.Is(err, speedup.ErrEstimate) || !errors.As(err, &ce) || !strings.Contains(err.Error(), `row "ResNet-18 (batch size 128)", type "h100"`) {
		t.Errorf("Complete(linear, rank 2) = %v, %v; want an error naming ResNet-18 (batch size 128) on the h100", c, err)
	}
	sel, err := speedup.SelectSettings(context.Background(), rows, types, values, holdOut, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Best == lin2 {
		t.Errorf("SelectSettings chose %+v, which Complete refuses", sel.Best)
	}
	for _, v := range sel.Validations {
		if v.Settings == lin2 && !v.Refused {
			t.Errorf("linear rank 2: %+v; want it refused", v)
		}
	}
	c, err = speedup.Complete(rows, types, values, &sel.Best)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for k := range types {
			if x := c.Matrix.At(i, k); c.Estimated[i][k] && !(x > 0) {
				t.Errorf("%s on %s estimated at %v with %+v", rows[i], types[k], x, sel.Best)
			}
		}
	}
}

// A NaN Tol was never met: Complete swept MaxIter times, forever with
// MaxIter math.MaxInt.
func TestCompleteRefusesBadTol(t *testing.T) {
	nan := math.NaN()
	values := [][]float64{{1, 2, 3}, {2, 4, nan}, {3, 5, 7}}
	for _, tol := range []float64{nan, math.Inf(1), math.Inf(-1)} {
		c, err := speedup.Complete([]string{"a", "b", "c"}, []topology.GPUType{"x", "y", "z"}, values, &speedup.CompleteSettings{Tol: tol, MaxIter: math.MaxInt})
		var ie *gpufair.InputError
		if c != nil || !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "CompleteSettings.Tol" {
			t.Errorf("Complete(Tol %v) = %v, %v; want an *InputError on CompleteSettings.Tol wrapping gpufair.ErrValue", tol, c, err)
		}
	}
}

func TestCompleteNothingMissing(t *testing.T) {
	v := [][]float64{{1, 2}, {0, 4}}
	c, err := speedup.Complete([]string{"a", "b"}, []topology.GPUType{"x", "y"}, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Converged || c.Iterations != 0 || !cmp.Equal(v, c.Matrix.Values()) {
		t.Errorf("Complete() of a full matrix = %+v, want it unchanged with no sweeps", c)
	}
}

// TestCompleteLogZeros: in log space a measured zero stays zero and does not
// pull the estimates; in linear space it is data.
func TestCompleteLogZeros(t *testing.T) {
	nan := math.NaN()
	rows := []string{"a", "b", "c"}
	types := []topology.GPUType{"x", "y"}
	v := [][]float64{{1, 2}, {0, 4}, {3, nan}}
	c, err := speedup.Complete(rows, types, v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Matrix.Values(); got[1][0] != 0 || math.Abs(got[2][1]-6) > 1e-6 {
		t.Errorf("log space: got %v, want the zero kept and c on y estimated as 3·2/1 = 6", got)
	}
}

func TestCompleteDoesNotModifyInput(t *testing.T) {
	nan := math.NaN()
	v := [][]float64{{1, 2}, {3, nan}}
	before := [][]float64{{1, 2}, {3, nan}}
	if _, err := speedup.Complete([]string{"a", "b"}, []topology.GPUType{"x", "y"}, v, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, v, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("input modified (-before +after):\n%s", diff)
	}
}

// connected reports whether every hidden cell's row and type are joined by
// measured cells: an independent breadth-first search over the bipartite
// graph of measured cells.
func connected(known [][]bool) bool {
	m, n := len(known), len(known[0])
	seen := make([]bool, m+n)
	var comp []int
	label := make([]int, m+n)
	for s := range m + n {
		if seen[s] {
			continue
		}
		id := len(comp)
		comp = append(comp, s)
		queue := []int{s}
		seen[s] = true
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			label[x] = id
			for y := range m + n {
				if seen[y] {
					continue
				}
				var edge bool
				switch {
				case x < m && y >= m:
					edge = known[x][y-m]
				case x >= m && y < m:
					edge = known[y][x-m]
				}
				if edge {
					seen[y] = true
					queue = append(queue, y)
				}
			}
		}
	}
	for i := range m {
		for k := range n {
			if !known[i][k] && label[i] != label[m+k] {
				return false
			}
		}
	}
	return true
}

// TestCompleteRecoversProductsProperty: for any matrix of rates p[i]·q[k] and
// any pattern of missing cells, the default estimator either recovers every
// missing cell or refuses (ErrEstimate) exactly when the pattern leaves a
// missing cell unconnected to the measured ones.
func TestCompleteRecoversProductsProperty(t *testing.T) {
	var recovered, refused int
	defer func() {
		t.Logf("%d patterns recovered, %d refused as unconnected", recovered, refused)
		if recovered == 0 || refused == 0 {
			t.Errorf("the generator never produced one of the two cases")
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(1, 8).Draw(t, "rows")
		n := rapid.IntRange(1, 5).Draw(t, "types")
		p := rapid.SliceOfN(rapid.Float64Range(0.01, 100), m, m).Draw(t, "p")
		q := rapid.SliceOfN(rapid.Float64Range(0.1, 10), n, n).Draw(t, "q")
		hide := rapid.SliceOfN(rapid.Bool(), m*n, m*n).Draw(t, "hide")
		rows := make([]string, m)
		types := make([]topology.GPUType, n)
		for k := range types {
			types[k] = topology.GPUType(fmt.Sprint("t", k))
		}
		full, holes := make([][]float64, m), make([][]float64, m)
		known := make([][]bool, m)
		for i := range m {
			rows[i] = fmt.Sprint("r", i)
			full[i], holes[i], known[i] = make([]float64, n), make([]float64, n), make([]bool, n)
			for k := range n {
				full[i][k] = p[i] * q[k]
				holes[i][k] = full[i][k]
				known[i][k] = !hide[i*n+k]
				if hide[i*n+k] {
					holes[i][k] = math.NaN()
				}
			}
		}
		c, err := speedup.Complete(rows, types, holes, &speedup.CompleteSettings{MaxIter: 20000, Tol: 1e-13})
		if !connected(known) {
			if !errors.Is(err, speedup.ErrEstimate) {
				t.Fatalf("unconnected pattern: error = %v, want ErrEstimate", err)
			}
			refused++
			return
		}
		if err != nil {
			t.Fatalf("Complete() error = %v", err)
		}
		if diff := cmp.Diff(full, c.Matrix.Values(), cmpopts.EquateApprox(1e-6, 0)); diff != "" {
			t.Fatalf("Complete() mismatch (-want +got), %d sweeps:\n%s", c.Iterations, diff)
		}
		recovered++
	})
}

func TestCompleteDeterministic(t *testing.T) {
	rows, types, values := loadGavel(t, "k80", "p100", "v100")
	for i := 0; i < len(values); i += 3 {
		values[i][i%3] = math.NaN()
	}
	a, err := speedup.Complete(rows, types, values, &speedup.CompleteSettings{Rank: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := speedup.Complete(rows, types, values, &speedup.CompleteSettings{Rank: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(a.Matrix.Values(), b.Matrix.Values()) || a.Iterations != b.Iterations {
		t.Errorf("two runs on the same input differ")
	}
}

func BenchmarkComplete(b *testing.B) {
	rows, types, values := loadGavel(b, "k80", "p100", "v100")
	r := rand.New(rand.NewPCG(1, 2))
	for i := range values {
		if k := r.IntN(4); k < 3 && values[i][(k+1)%3] > 0 {
			values[i][k] = math.NaN()
		}
	}
	for _, s := range []speedup.CompleteSettings{{}, {Rank: 1}, {Space: speedup.LinearSpace, Rank: 1, NoEffects: true}} {
		b.Run(fmt.Sprintf("%v/rank=%d/effects=%v", s.Space, s.Rank, !s.NoEffects), func(b *testing.B) {
			if _, err := speedup.Complete(rows, types, values, &s); err != nil {
				b.Fatal(err)
			}
			sweeps := 0
			for b.Loop() {
				c, _ := speedup.Complete(rows, types, values, &s)
				sweeps += c.Iterations
			}
			b.ReportMetric(float64(sweeps)/float64(b.N), "sweeps/op")
		})
	}
}
