package alloc

// dot returns Σ_i a[i]·b[i]; b must be at least as long as a.
func dot(a, b []float64) float64 {
	var s float64
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// sum returns Σ_i xs[i].
func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// allOnes returns a vector of n ones: the coefficients of a sum.
func allOnes(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
