package stat

import "testing"

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{-1, 5}, 2},
		// The sum of the middle two overflows; their mean does not.
		{[]float64{1.7e308, 1.7e308}, 1.7e308},
		{[]float64{1.7e308, 1.5e308, 1, 1.6e308}, 1.55e308},
		{[]float64{-1.7e308, -1.7e308}, -1.7e308},
	} {
		in := append([]float64(nil), tc.xs...)
		if got := Median(in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.xs[i] {
				t.Errorf("Median(%v) reordered its input to %v", tc.xs, in)
			}
		}
	}
}
