package alloc_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/stopctx"
	"github.com/gpufair/gpufair/lp"
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
		want, checks := oefChecks(t, pol, p)
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

// TestOEFStoppedGoesOn: an exact cooperative solve stopped at any of its
// context checks, and started again from what its error names
// (OEFStopped's rows and basis, as WarmRows and WarmBasis), reaches the
// optimum; with the pure-Go simplex, a stop inside an LP names a basis.
// A solve stopped every few checks, each time going on from the last
// stop, ends.
func TestOEFStoppedGoesOn(t *testing.T) {
	p := oefProblem(t, []float64{16, 28, 28, 28}, nil, oefNoisyJobs(200, 1))
	pol := alloc.OEF{Mode: alloc.Cooperative}
	want, checks := oefChecks(t, pol, p)
	named, seeded := 0, 0
	resume := func(stop *alloc.OEFStopped) alloc.OEF {
		return alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{WarmRows: stop.Rows, WarmBasis: stop.Basis}}
	}
	for n := 0; n < checks; n += max(1, checks/40) {
		_, _, err := pol.AllocateCertified(&stopctx.Countdown{Context: context.Background(), N: n}, p)
		var stop *alloc.OEFStopped
		if !errors.As(err, &stop) {
			continue // stopped before the near-neighbour rows were found
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped at check %d: %v does not wrap context.Canceled", n, err)
		}
		if lp.Default.Resolve() == lp.PureGo && len(stop.Basis.Shares) > 0 {
			named++
		}
		if len(stop.Basis.Shares) == 0 && len(stop.Rows) > 0 {
			seeded++ // stopped while the cells that seed the first LP were solved
		}
		_, got, err := resume(stop).AllocateCertified(context.Background(), p)
		if err != nil || math.Abs(got.Throughput-want.Throughput) > 1e-6*want.Throughput || got.Gap() > 1e-5 {
			t.Fatalf("going on from check %d: throughput %v (gap %v, %v), want %v", n, got.Throughput, got.Gap(), err, want.Throughput)
		}
	}
	if lp.Default.Resolve() == lp.PureGo && named == 0 {
		t.Fatalf("no stop of %d checks named a basis", checks)
	}
	if seeded == 0 {
		t.Fatalf("no stop of %d checks named the seed rows alone", checks)
	}
	// Stopped every checks/8 checks, going on each time from the last stop
	// inside an LP; a stop outside one (seeding the first LP) gets twice
	// the checks the next time.
	next, n := pol, max(1, checks/8)
	for round := 0; ; round++ {
		_, got, err := next.AllocateCertified(&stopctx.Countdown{Context: context.Background(), N: n}, p)
		if err == nil {
			if math.Abs(got.Throughput-want.Throughput) > 1e-6*want.Throughput {
				t.Fatalf("after %d stops: throughput %v, want %v", round, got.Throughput, want.Throughput)
			}
			t.Logf("done after %d stops of at most %d of the %d checks of a cold solve", round, n, checks)
			break
		}
		if round == 40 {
			t.Fatalf("not done after %d stops (a cold solve makes %d checks)", round, checks)
		}
		if stop := (*alloc.OEFStopped)(nil); errors.As(err, &stop) {
			next = resume(stop)
		} else {
			n *= 2
		}
	}
}

// oefChecks returns pol's certificate for p, and how many context checks
// that solve makes.
func oefChecks(t *testing.T, pol alloc.OEF, p *alloc.Problem) (alloc.OEFCertificate, int) {
	t.Helper()
	_, want, err := pol.AllocateCertified(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	count := &stopctx.Countdown{Context: context.Background(), N: math.MaxInt}
	if _, _, err := pol.AllocateCertified(count, p); err != nil {
		t.Fatal(err)
	}
	return want, math.MaxInt - count.N
}
