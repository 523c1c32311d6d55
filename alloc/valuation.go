package alloc

import "fmt"

// A Valuation gives a user's (or job's) utility for a bundle of GPUs.
// bundle[k] is the number of GPUs of the cluster's k-th type, averaged over
// time (the units of Allocation). Implementations must be deterministic,
// non-decreasing in every coordinate and return 0 for the empty bundle; the
// axiom checks assume no more than that, except where they say they need a
// Linear valuation.
type Valuation interface {
	Value(bundle []float64) float64
}

// Linear is the effective-throughput valuation: Linear[k] is the rate one GPU
// of type k delivers (throughput per GPU, or a speedup), and the value of a
// bundle is Σ_k Linear[k]·bundle[k]. This is Gavel's effective throughput and
// OEF's normalised training throughput.
type Linear []float64

// Value returns Σ_k l[k]·bundle[k]. It panics if the lengths differ.
func (l Linear) Value(bundle []float64) float64 {
	if len(bundle) != len(l) {
		panic(fmt.Sprintf("alloc: bundle of %d types for a valuation of %d", len(bundle), len(l)))
	}
	var s float64
	for k, r := range l {
		s += r * bundle[k]
	}
	return s
}
