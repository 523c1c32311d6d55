package alloc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroupRows(t *testing.T) {
	rows := [][]float64{{1, 2}, {3, 4}, {1, 2}, {0, 1}, {3, 4}, {1, 2}}
	got := groupRows(len(rows), func(i int) []float64 { return rows[i] })
	want := rowClasses{rep: []int{0, 1, 3}, size: []int{3, 2, 1}, of: []int{0, 1, 0, 2, 1, 0}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(rowClasses{})); diff != "" {
		t.Errorf("groupRows mismatch (-want +got):\n%s", diff)
	}
	// -0 and +0 are the same rate.
	z := groupRows(2, func(i int) []float64 { return []float64{[]float64{0, negZero()}[i]} })
	if z.numClasses() != 1 {
		t.Errorf("groupRows(+0, -0) gave %d classes, want 1", z.numClasses())
	}
}

func negZero() float64 { z := 0.0; return -z }
