package alloc

import (
	"context"
	"math"
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
		q := noisyClasses(seed, 60)
		if a := q.weightScale(); a == 1 {
			t.Fatalf("seed %d: weightScale() = 1; the test needs a scaled solve", seed)
		}
		y, cert := certifiedSolve(t, q, func() ([][]float64, coopDual, error) {
			return q.solveScaled(ctx, set, (*oefLP).solveCoopRowGen)
		})
		_, ref := certifiedSolve(t, q, func() ([][]float64, coopDual, error) { return q.solveCoopRowGen(ctx, set) })
		if !cert.exact() || math.Abs(cert.Throughput-ref.Throughput) > 1e-9*ref.Throughput {
			t.Errorf("seed %d: scaled solve: throughput %.12g, envy %.3g, gap %.3g; unscaled: throughput %.12g",
				seed, cert.Throughput, cert.Envy, cert.Gap(), ref.Throughput)
		}
		for k, m := range q.count {
			var used float64
			for c := range y {
				used += q.w[c] * y[c][k]
			}
			if used > m*(1+1e-9) {
				t.Errorf("seed %d: type %d: %v used of %v", seed, k, used, m)
			}
		}
	}
}

// certifiedSolve runs solve and returns its bundles with their
// certificate for q.
func certifiedSolve(t *testing.T, q *oefLP, solve func() ([][]float64, coopDual, error)) ([][]float64, OEFCertificate) {
	t.Helper()
	y, d, err := solve()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := q.certify(context.Background(), y, d)
	if err != nil {
		t.Fatal(err)
	}
	return y, cert
}
