// Package stat holds the small statistics several gpufair packages share.
package stat

import (
	"math"
	"slices"
)

// Median returns the median of xs, the mean of the middle two for an even
// count, and 0 for none. It does not change xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	// Halving first where the sum overflows: the mean of two runs of
	// 1.7e308 was +Inf. Elsewhere the sum is halved exactly, as before.
	if m := (s[n/2-1] + s[n/2]) / 2; !math.IsInf(m, 0) {
		return m
	}
	return s[n/2-1]/2 + s[n/2]/2
}
