package stride

import (
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzReadjust feeds Readjust arbitrary capacities, weights and demands.
// It must never panic; effective weights are finite, non-negative and at
// most the weights; shares are finite, non-negative, within each demand and
// add up to at most the capacity, to readjustTol. Where weights differed by 1e76, the
// running total of weights lost the small one and shares became +Inf, and
// where the total was large and the capacity left tiny, effective weights
// became NaN.
func FuzzReadjust(f *testing.F) {
	// fuzzSlack is the absolute slack of the sums: below 1e-300, values
	// are subnormal or nearly so and carry few significant digits.
	const fuzzSlack = 1e-300
	f.Add([]byte{64, 3, 16, 32, 16, 8, 48, 200})
	f.Add(append([]byte{0}, fuzzdata.Bytes(1e308, 1e-300, 1e308)...))
	f.Add(append([]byte{0}, fuzzdata.Bytes(4, 1e76, 1, 1, 8)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		gpus := r.Number()
		n := r.Int(5)
		weights, demand := r.Floats(n), r.Floats(n)
		eff, share, err := Readjust(gpus, weights, demand)
		if err != nil {
			return
		}
		var total float64
		for i, s := range share {
			if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s > demand[i]*(1+readjustTol)+fuzzSlack {
				t.Fatalf("tenant %d: share %v, demand %v", i, s, demand[i])
			}
			if e := eff[i]; math.IsNaN(e) || math.IsInf(e, 0) || e < 0 || e > weights[i] {
				t.Fatalf("tenant %d: effective weight %v, weight %v", i, e, weights[i])
			}
			total += s
		}
		if total > gpus*(1+readjustTol)+fuzzSlack {
			t.Fatalf("shares add up to %v of %v GPUs", total, gpus)
		}
	})
}
