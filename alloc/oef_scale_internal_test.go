package alloc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/lp"
)

func TestWeightScale(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    [][]float64
		w    []float64
		want float64
	}{
		// K = 2, s̄ = 2.5, Σw = 2: 2·2·2.5/2 = 5, nearest power of two 4.
		{"weights of 1", [][]float64{{1, 3}, {1, 5}}, []float64{1, 1}, 4},
		// Σw = 10/64: 64, exactly.
		{"weights of 5/64", [][]float64{{1, 3}, {1, 5}}, []float64{5.0 / 64, 5.0 / 64}, 64},
		{"weights of 0", [][]float64{{1, 3}, {1, 5}}, []float64{0, 0}, 1},
	} {
		q := &oefLP{s: tc.s, w: tc.w, count: []float64{1, 1}}
		if got := q.weightScale(); got != tc.want {
			t.Errorf("%s: weightScale() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSolveScaledIsExact solves noisy instances with and without the
// weight scale: the scaled solve's bundles and multipliers, mapped back,
// must certify q itself, at the unscaled solve's throughput.
func TestSolveScaledIsExact(t *testing.T) {
	ctx := context.Background()
	set := &lp.Settings{Backend: lp.PureGo} // the backend that is scaled
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 5))
		base := make([][]float64, 6)
		for m := range base {
			base[m] = []float64{1, 1.5 + rng.Float64(), 2 + 2*rng.Float64(), 3 + 3*rng.Float64()}
		}
		n := 60
		s := make([][]float64, n)
		w := make([]float64, n)
		for c := range s {
			b := base[rng.IntN(len(base))]
			s[c] = make([]float64, 4)
			for k := range s[c] {
				s[c][k] = b[k] * (1 + 0.02*(2*rng.Float64()-1))
			}
			s[c][0] = 1
			w[c] = float64(1 + rng.IntN(2))
		}
		q := &oefLP{s: s, w: w, count: []float64{5, 9, 9, 9}}
		if a := q.weightScale(); a == 1 {
			t.Fatalf("seed %d: weightScale() = 1; the test needs a scaled solve", seed)
		}
		y, d, err := q.solveScaled(ctx, set, (*oefLP).solveCoopRowGen)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := q.certify(ctx, y, d)
		if err != nil {
			t.Fatal(err)
		}
		y0, d0, err := q.solveCoopRowGen(ctx, set)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := q.certify(ctx, y0, d0)
		if err != nil {
			t.Fatal(err)
		}
		if !cert.exact() || math.Abs(cert.Throughput-ref.Throughput) > 1e-9*ref.Throughput {
			t.Errorf("seed %d: scaled solve: throughput %.12g, envy %.3g, gap %.3g; unscaled: throughput %.12g",
				seed, cert.Throughput, cert.Envy, cert.Gap(), ref.Throughput)
		}
		for k, m := range q.count {
			var used float64
			for c := range y {
				used += w[c] * y[c][k]
			}
			if used > m*(1+1e-9) {
				t.Errorf("seed %d: type %d: %v used of %v", seed, k, used, m)
			}
		}
	}
}
