package alloc_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/stopctx"
)

// TestOEFStoppedAnywhere stops cooperative OEF, exact and with an envy
// tolerance, at each of its context checks in turn (fifty of them,
// evenly spread): every stopped call returns an error wrapping
// context.Canceled, and a call that is not stopped returns the optimum.
// The checks include those of the O(C²) scans between the LP solves
// (violated envy rows, the final envy check, the certificate), which took
// 1.6 s, 0.18 s and 0.18 s at 4,096 users × 10 types without one.
func TestOEFStoppedAnywhere(t *testing.T) {
	p := oefProblem(t, []float64{16, 28, 28, 28}, nil, oefNoisyJobs(200, 1))
	for _, set := range []alloc.OEFSettings{{}, {EnvyTolerance: 0.05}} {
		pol := alloc.OEF{Mode: alloc.Cooperative, Settings: &set}
		_, want, err := pol.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		count := &stopctx.Countdown{Context: context.Background(), N: math.MaxInt}
		if _, _, err := pol.AllocateCertified(count, p); err != nil {
			t.Fatal(err)
		}
		checks := math.MaxInt - count.N
		for n := 0; n <= checks; n += max(1, checks/50) {
			_, got, err := pol.AllocateCertified(&stopctx.Countdown{Context: context.Background(), N: n}, p)
			switch {
			case n < checks && !errors.Is(err, context.Canceled):
				t.Fatalf("ε = %v, stopped at check %d of %d: error %v, want context.Canceled", set.EnvyTolerance, n, checks, err)
			case n == checks && (err != nil || math.Abs(got.Throughput-want.Throughput) > 1e-9*want.Throughput):
				t.Fatalf("ε = %v, not stopped: throughput %v, error %v; want %v", set.EnvyTolerance, got.Throughput, err, want.Throughput)
			}
		}
	}
}
