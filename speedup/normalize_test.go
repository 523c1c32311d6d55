package speedup_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// tol is the absolute slack allowed between a normalised cell and its
// hand-computed value (a few float64 roundings).
const tol = 1e-12

var kpv = []topology.GPUType{"K80", "P100", "V100"}

func mustNew(t testing.TB, rows []string, types []topology.GPUType, v [][]float64) *speedup.Matrix {
	t.Helper()
	m, err := speedup.New(rows, types, v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMatrixIndex: RowIndex and TypeIndex find each label's position,
// and report false for a label the matrix lacks (matched exactly).
func TestMatrixIndex(t *testing.T) {
	m := mustNew(t, []string{"resnet", "vae", "lstm"}, []topology.GPUType{"V100", "K80"}, [][]float64{{4, 1}, {2, 1}, {3, 1}})
	for want, r := range []string{"resnet", "vae", "lstm"} {
		if i, ok := m.RowIndex(r); !ok || i != want {
			t.Errorf("RowIndex(%q) = %d, %v; want %d, true", r, i, ok, want)
		}
	}
	for want, ty := range []topology.GPUType{"V100", "K80"} {
		if k, ok := m.TypeIndex(ty); !ok || k != want {
			t.Errorf("TypeIndex(%q) = %d, %v; want %d, true", ty, k, ok, want)
		}
	}
	for _, r := range []string{"bert", "", "RESNET"} {
		if i, ok := m.RowIndex(r); ok {
			t.Errorf("RowIndex(%q) = %d, true; want false", r, i)
		}
	}
	for _, ty := range []topology.GPUType{"P100", "", "v100"} {
		if k, ok := m.TypeIndex(ty); ok {
			t.Errorf("TypeIndex(%q) = %d, true; want false", ty, k)
		}
	}
}

func TestTypeOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		types []topology.GPUType
		v     [][]float64
		want  []int
	}{
		{"columns already slowest first", kpv, [][]float64{{1, 2, 4}, {10, 30, 40}}, []int{0, 1, 2}},
		{"columns shuffled", []topology.GPUType{"V100", "K80", "P100"}, [][]float64{{4, 1, 2}, {40, 10, 30}}, []int{1, 2, 0}},
		// Row magnitudes differ by 1000x; only the ratios within a row count.
		{"rows of different magnitude", kpv, [][]float64{{1000, 1100, 1200}, {1, 3, 9}}, []int{0, 1, 2}},
		{"a type no row can use is slowest", kpv, [][]float64{{1, 0, 2}, {1, 0, 3}}, []int{1, 0, 2}},
		{"ties keep column order", kpv, [][]float64{{1, 1, 1}}, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustNew(t, []string{"a", "b"}[:len(tc.v)], tc.types, tc.v)
			if diff := cmp.Diff(tc.want, m.TypeOrder()); diff != "" {
				t.Errorf("TypeOrder() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalisations(t *testing.T) {
	m := mustNew(t, []string{"a", "b"}, kpv, [][]float64{{2, 4, 8}, {1, 3, 6}})
	count := []float64{1, 1, 2} // an equal share: 1/4 K80, 1/4 P100, 1/2 V100 of the time
	slow, err := m.RelativeToSlowest()
	if err != nil {
		t.Fatal(err)
	}
	fast, err := m.RelativeToFastest()
	if err != nil {
		t.Fatal(err)
	}
	eq, err := m.RelativeToEqualShare(count)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  *speedup.Matrix
		want [][]float64
	}{
		{"slowest", slow, [][]float64{{1, 2, 4}, {1, 3, 6}}},
		{"fastest", fast, [][]float64{{0.25, 0.5, 1}, {1.0 / 6, 0.5, 1}}},
		// a: 2/4 + 4/4 + 8/2 = 5.5; b: 1/4 + 3/4 + 6/2 = 4.
		{"equal share", eq, [][]float64{{2 / 5.5, 4 / 5.5, 8 / 5.5}, {0.25, 0.75, 1.5}}},
	} {
		if diff := cmp.Diff(tc.want, tc.got.Values(), cmpopts.EquateApprox(0, tol)); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
	if diff := cmp.Diff([][]float64{{2, 4, 8}, {1, 3, 6}}, m.Values()); diff != "" {
		t.Errorf("normalising changed the receiver (-want +got):\n%s", diff)
	}
}

func TestNormaliseErrors(t *testing.T) {
	m := mustNew(t, []string{"a", "b"}, kpv, [][]float64{{2, 4, 8}, {0, 0, 6}})
	var ce *speedup.CellError
	if _, err := m.RelativeTo(0); !errors.As(err, &ce) || ce.Row != "b" || ce.Type != "K80" || !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("RelativeTo(0) error = %v, want a CellError on row b, K80, wrapping gpufair.ErrValue", err)
	}
	if _, err := m.RelativeTo(3); !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("RelativeTo(3) error = %v, want gpufair.ErrShape", err)
	}
	if _, err := m.RelativeToEqualShare([]float64{1, 1, 0}); !errors.As(err, &ce) || ce.Row != "b" {
		t.Errorf("RelativeToEqualShare with V100 uncounted: error = %v, want a CellError on row b", err)
	}
	for _, count := range [][]float64{{1, 1}, {1, -1, 1}, {0, 0, 0}, {1, 1, nan()}} {
		if _, err := m.EqualShareRates(count); err == nil {
			t.Errorf("EqualShareRates(%v) returned no error", count)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }

// Rates near 1e308 times a count of 10 overflowed before the division by
// the total: EqualShareRates gave +Inf, RelativeToEqualShare zeros.
func TestEqualShareLargeRates(t *testing.T) {
	m := mustNew(t, []string{"a"}, kpv, [][]float64{{1e308, 1e308, 1e308}})
	r, err := m.EqualShareRates([]float64{10, 10, 10})
	if err != nil || r[0] != 1e308 {
		t.Errorf("EqualShareRates = %v, %v; want [1e308]", r, err)
	}
	eq, err := m.RelativeToEqualShare([]float64{10, 10, 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float64{1, 1, 1}, eq.Row(0)); diff != "" {
		t.Errorf("RelativeToEqualShare (-want +got):\n%s", diff)
	}
}

func ExampleMatrix_RelativeToSlowest() {
	// Training steps per second of two jobs on three GPU types.
	m, err := speedup.New([]string{"resnet", "lm"}, kpv, [][]float64{{2, 4, 8}, {1, 3, 6}})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := m.RelativeToSlowest()
	fmt.Println(s.Values())
	// Output: [[1 2 4] [1 3 6]]
}

func ExampleMatrix_RelativeToEqualShare() {
	// Gavel's normaliser: 1 is the rate of an equal time share of every
	// GPU type in proportion to its count (here 1 K80, 1 P100, 2 V100).
	m, _ := speedup.New([]string{"lm"}, kpv, [][]float64{{1, 3, 6}})
	eq, _ := m.RelativeToEqualShare([]float64{1, 1, 2})
	fmt.Printf("%.3g\n", eq.Row(0))
	// Output: [0.25 0.75 1.5]
}

func TestRelativeToSlowestRunnable(t *testing.T) {
	// b cannot run on the K80, the slowest type: its P100 rate is its unit.
	m := mustNew(t, []string{"a", "b"}, kpv, [][]float64{{2, 4, 8}, {0, 3, 6}})
	got, err := m.RelativeToSlowestRunnable()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1, 2, 4}, {0, 1, 2}}
	if diff := cmp.Diff(want, got.Values(), cmpopts.EquateApprox(0, tol)); diff != "" {
		t.Errorf("RelativeToSlowestRunnable() mismatch (-want +got):\n%s", diff)
	}
	if _, err := m.RelativeToSlowest(); !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("RelativeToSlowest() error = %v, want ErrValue: b has no K80 rate", err)
	}
	zero := mustNew(t, []string{"a", "z"}, kpv, [][]float64{{2, 4, 8}, {0, 0, 0}})
	_, err = zero.RelativeToSlowestRunnable()
	var cell *speedup.CellError
	if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &cell) || cell.Row != "z" {
		t.Errorf("RelativeToSlowestRunnable() of a zero row: error = %v, want a CellError on row z wrapping ErrValue", err)
	}
}

// TestNilAndZeroMatrix: Dims of a nil *Matrix and RelativeToSlowest of the
// zero Matrix panicked, while Values and TypeOrder of the zero Matrix gave
// empty results. Now every method gives an empty result or an error
// wrapping gpufair.ErrEmpty.
func TestNilAndZeroMatrix(t *testing.T) {
	for name, m := range map[string]*speedup.Matrix{"nil": nil, "zero": {}} {
		if r, k := m.Dims(); r != 0 || k != 0 {
			t.Errorf("%s: Dims() = %d, %d", name, r, k)
		}
		if len(m.Rows()) != 0 || len(m.Types()) != 0 || len(m.Values()) != 0 || len(m.TypeOrder()) != 0 {
			t.Errorf("%s: Rows, Types, Values, TypeOrder not empty", name)
		}
		if _, ok := m.RowIndex("a"); ok {
			t.Errorf("%s: RowIndex found a row", name)
		}
		if _, ok := m.TypeIndex("K80"); ok {
			t.Errorf("%s: TypeIndex found a type", name)
		}
		for f, call := range map[string]func() (any, error){
			"RelativeTo(0)":             func() (any, error) { return m.RelativeTo(0) },
			"RelativeToSlowest":         func() (any, error) { return m.RelativeToSlowest() },
			"RelativeToSlowestRunnable": func() (any, error) { return m.RelativeToSlowestRunnable() },
			"RelativeToFastest":         func() (any, error) { return m.RelativeToFastest() },
			"EqualShareRates":           func() (any, error) { return m.EqualShareRates(nil) },
			"RelativeToEqualShare":      func() (any, error) { return m.RelativeToEqualShare(nil) },
		} {
			if _, err := call(); !errors.Is(err, gpufair.ErrEmpty) {
				t.Errorf("%s: %s error = %v, want gpufair.ErrEmpty", name, f, err)
			}
		}
	}
}

// TestRelativeToOverflowNamesValue: the overflow error printed the cell's
// value as (0).
func TestRelativeToOverflowNamesValue(t *testing.T) {
	m := mustNew(t, []string{"x"}, kpv[:2], [][]float64{{1e308, 5e-324}})
	_, err := m.RelativeTo(1)
	var ce *speedup.CellError
	if !errors.As(err, &ce) || ce.Value != 1e308 || !errors.Is(err, gpufair.ErrTooLarge) || !strings.Contains(err.Error(), "(1e+308)") {
		t.Errorf("RelativeTo(1) error = %v, want a CellError ending (1e+308)", err)
	}
}
