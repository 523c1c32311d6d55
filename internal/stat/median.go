// Package stat holds the small statistics several gpufair packages share.
package stat

import "slices"

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
	return (s[n/2-1] + s[n/2]) / 2
}
