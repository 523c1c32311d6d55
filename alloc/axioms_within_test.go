package alloc_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// withinInstance draws an allocation of 2 to 5 rows over 1 to 4 types, with
// bundles that are often zero on a type, bounds lo ≤ hi (a lower bound of
// zero now and then, and lo = hi on some cells), and weights or none.
func withinInstance(t *rapid.T) (a *alloc.Allocation, lo, hi []alloc.Linear, weights []float64) {
	n, types := rapid.IntRange(2, 5).Draw(t, "rows"), rapid.IntRange(1, 4).Draw(t, "types")
	a = &alloc.Allocation{}
	for k := range types {
		a.Types = append(a.Types, topology.GPUType(fmt.Sprintf("T%d", k)))
	}
	amount := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 3))
	rate := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0.1, 10))
	for i := range n {
		a.Rows = append(a.Rows, fmt.Sprintf("r%d", i))
		a.GPUs = append(a.GPUs, rapid.SliceOfN(amount, types, types).Draw(t, "bundle"))
		l, h := make(alloc.Linear, types), make(alloc.Linear, types)
		for k := range types {
			l[k] = rate.Draw(t, "lo")
			h[k] = l[k]
			if rapid.Bool().Draw(t, "interval") {
				h[k] = l[k] * (1 + rapid.Float64Range(0, 0.5).Draw(t, "spread"))
				if h[k] == 0 {
					h[k] = rapid.Float64Range(0.1, 10).Draw(t, "hi")
				}
			}
		}
		lo, hi = append(lo, l), append(hi, h)
	}
	if rapid.Bool().Draw(t, "weighted") {
		weights = rapid.SliceOfN(rapid.Float64Range(0.5, 2), n, n).Draw(t, "weights")
	}
	return a, lo, hi, weights
}

// capacityOf returns a cluster that holds a: each type's count its column's
// sum plus one.
func capacityOf(a *alloc.Allocation) alloc.Capacity {
	c := alloc.Capacity{Types: a.Types, Count: make([]float64, len(a.Types))}
	for k := range c.Count {
		c.Count[k] = 1
		for _, b := range a.GPUs {
			c.Count[k] += b[k]
		}
	}
	return c
}

// TestEnvyFreenessWithinIsTheWorstVertex checks EnvyFreenessWithin and
// SharingIncentiveWithin against brute force: for each pair, the envy at
// every vertex of the envier's box of rates (EnvyFreeness with those rates)
// is at most the bound, and one vertex reaches it; for each row, likewise
// its sharing-incentive margin is at least the bound. A ratio of linear functions peaks at a vertex of a box,
// so this is the worst envy over all rates in the box; rates drawn inside the
// box stay under the bound too.
func TestEnvyFreenessWithinIsTheWorstVertex(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, lo, hi, weights := withinInstance(t)
		got, err := alloc.EnvyFreenessWithin(a, lo, hi, weights)
		if err != nil {
			t.Fatal(err)
		}
		c := capacityOf(a)
		si, err := alloc.SharingIncentiveWithin(a, c, lo, hi, weights)
		if err != nil {
			t.Fatal(err)
		}
		n, types := len(a.GPUs), len(a.Types)
		siReached := make([]bool, n)
		reached := make([][]bool, n)
		for i := range reached {
			reached[i] = make([]bool, n)
		}
		check := func(vals []alloc.Valuation, what string) {
			ef, err := alloc.EnvyFreeness(a, vals, weights)
			if err != nil {
				t.Fatal(err)
			}
			at, err := alloc.SharingIncentive(a, c, vals, weights)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range at.Margin {
				w := si.Margin[i]
				if m < w-1e-12*max(1, math.Abs(w)) {
					t.Fatalf("%s: row %d's sharing-incentive margin %v, below the bound %v", what, i, m, w)
				}
				if m == w || math.Abs(m-w) <= 1e-12*max(1, math.Abs(w)) {
					siReached[i] = true
				}
			}
			for i := range n {
				for j := range n {
					e, w := ef.Envy[i][j], got.Envy[i][j]
					if e > w+1e-12*max(1, math.Abs(w)) && !math.IsInf(w, 1) {
						t.Fatalf("%s: row %d envies row %d by %v, above the bound %v", what, i, j, e, w)
					}
					if e == w || math.Abs(e-w) <= 1e-12*max(1, math.Abs(w)) {
						reached[i][j] = true
					}
				}
			}
		}
		for mask := range 1 << types {
			vals := make([]alloc.Valuation, n)
			for i := range n {
				r := slices.Clone(lo[i])
				for k := range types {
					if mask&(1<<k) != 0 {
						r[k] = hi[i][k]
					}
				}
				vals[i] = alloc.Linear(r)
			}
			check(vals, fmt.Sprintf("vertex %b", mask))
		}
		for i := range n {
			for j := range n {
				if i != j && !reached[i][j] {
					t.Fatalf("no vertex reaches row %d's bound %v on row %d", i, got.Envy[i][j], j)
				}
			}
			if !siReached[i] {
				t.Fatalf("no vertex reaches row %d's sharing-incentive bound %v", i, si.Margin[i])
			}
		}
		vals := make([]alloc.Valuation, n)
		for i := range n {
			r := make(alloc.Linear, types)
			for k := range types {
				// at ≥ 0.001 or 0: a rate near zero would make values
				// subnormal, and their ratios inexact.
				at := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0.001, 1)).Draw(t, "at")
				r[k] = min(hi[i][k], lo[i][k]+at*(hi[i][k]-lo[i][k]))
			}
			vals[i] = r
		}
		check(vals, "inside")
		if got.Holds != (got.MaxEnvy <= alloc.AxiomTol) || got.MaxEnvy != got.Envy[got.Envier][got.Envied] {
			t.Fatalf("report %+v", got)
		}
	})
}

// TestEnvyFreenessWithinPointBounds checks that with lo = hi the bounds are
// EnvyFreeness and SharingIncentive with those rates.
func TestEnvyFreenessWithinPointBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, lo, _, weights := withinInstance(t)
		got, err := alloc.EnvyFreenessWithin(a, lo, lo, weights)
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]alloc.Valuation, len(lo))
		for i, l := range lo {
			vals[i] = l
		}
		want, err := alloc.EnvyFreeness(a, vals, weights)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Envy {
			for j, w := range want.Envy[i] {
				if g := got.Envy[i][j]; g != w && math.Abs(g-w) > 1e-12*max(1, math.Abs(w)) {
					t.Fatalf("envy of row %d for row %d: %v, EnvyFreeness %v", i, j, g, w)
				}
			}
		}
		if got.Holds != want.Holds || got.Envier != want.Envier && math.Abs(got.MaxEnvy-want.MaxEnvy) > 1e-12 {
			t.Fatalf("report %+v, EnvyFreeness %+v", got, want)
		}
		c := capacityOf(a)
		siGot, err := alloc.SharingIncentiveWithin(a, c, lo, lo, weights)
		if err != nil {
			t.Fatal(err)
		}
		siWant, err := alloc.SharingIncentive(a, c, vals, weights)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range siWant.Margin {
			if g := siGot.Margin[i]; g != w && math.Abs(g-w) > 1e-12*max(1, math.Abs(w)) {
				t.Fatalf("row %d's margin %v, SharingIncentive %v", i, g, w)
			}
		}
	})
}

func TestEnvyFreenessWithinErrors(t *testing.T) {
	a := &alloc.Allocation{Rows: []string{"a", "b"}, Types: []topology.GPUType{"K80", "V100"}, GPUs: [][]float64{{1, 0}, {0, 1}}}
	lo := []alloc.Linear{{1, 2}, {1, 3}}
	hi := []alloc.Linear{{1, 4}, {2, 3}}
	for name, tc := range map[string]struct {
		lo, hi  []alloc.Linear
		weights []float64
		is      error
		want    string
	}{
		"lo short":        {lo[:1], hi, nil, gpufair.ErrShape, "Lo: gpufair: mismatched dimensions: 1 rows of rates for 2 rows"},
		"hi row short":    {lo, []alloc.Linear{{1, 4}, {2}}, nil, gpufair.ErrShape, `Hi[b]: gpufair: mismatched dimensions: 1 rates for 2 types`},
		"NaN":             {lo, []alloc.Linear{{1, math.NaN()}, {2, 3}}, nil, gpufair.ErrValue, "Hi[a]: gpufair: invalid value: rate NaN"},
		"negative":        {[]alloc.Linear{{-1, 2}, {1, 3}}, hi, nil, gpufair.ErrValue, "Lo[a]: gpufair: invalid value: rate -1"},
		"lo above hi":     {lo, []alloc.Linear{{1, 4}, {0.5, 3}}, nil, gpufair.ErrValue, `Lo[b]: gpufair: invalid value: lower bound 1 above the upper bound 0.5 on "K80"`},
		"bad weight":      {lo, hi, []float64{1, 0}, gpufair.ErrValue, "weight 0"},
		"too few weights": {lo, hi, []float64{1}, gpufair.ErrShape, "1 weights"},
	} {
		_, err := alloc.EnvyFreenessWithin(a, tc.lo, tc.hi, tc.weights)
		var ie *gpufair.InputError
		if !errors.As(err, &ie) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want an InputError wrapping %v containing %q", name, err, tc.is, tc.want)
		}
	}
	small := alloc.Capacity{Types: a.Types, Count: []float64{0.5, 1}}
	if _, err := alloc.SharingIncentiveWithin(a, small, lo, hi, nil); err == nil {
		t.Errorf("an allocation over the cluster: error %v", err)
	}
	if _, err := alloc.SharingIncentiveWithin(a, capacityOf(a), lo, hi[:1], nil); !errors.Is(err, gpufair.ErrShape) {
		t.Errorf("one row of upper bounds for two rows: error %v", err)
	}
	// Each row gets its own type: envy-free for the rates at either end
	// alone, not for every rate between. b values a's K80 at 1 to 2 and its
	// own V100 at 3.
	r, err := alloc.EnvyFreenessWithin(a, lo, hi, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2.0/3 - 1; r.Holds || math.Abs(r.Envy[1][0]-want) > 1e-15 || math.Abs(r.Envy[0][1]-(4.0-1)) > 1e-15 {
		t.Errorf("report %+v; want b's worst envy of a %v and a's of b 3", r, want)
	}
}

// TestEnvyFreenessWithinWorthlessOwn: where the envier's own bundle may be
// worth nothing (a lower bound of zero on every type it holds) and the other
// bundle something, the worst envy is infinite, however extreme the amounts
// (products of them underflow to zero, quotients overflow).
func TestEnvyFreenessWithinWorthlessOwn(t *testing.T) {
	for _, gpus := range [][][]float64{
		{{2e-261, 0}, {0, 1.2e-63}},
		{{1e-300, 0}, {1e10, 1}},
	} {
		a := &alloc.Allocation{Rows: []string{"a", "b"}, Types: []topology.GPUType{"P100", "V100"}, GPUs: gpus}
		lo := []alloc.Linear{{0, 0}, {1, 1}}
		hi := []alloc.Linear{{1, 1}, {1, 1}}
		r, err := alloc.EnvyFreenessWithin(a, lo, hi, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(r.Envy[0][1], 1) || r.Holds {
			t.Errorf("bundles %v: a's worst envy of b is %v, want +Inf", gpus, r.Envy[0][1])
		}
	}
}

// BenchmarkEnvyFreenessWithin compares the worst envy within ±1% bounds with
// EnvyFreeness at the midpoints, on the noisy instance's 2,000 jobs and 4
// types with a random allocation: both look at all 4 million pairs.
func BenchmarkEnvyFreenessWithin(b *testing.B) {
	p := oefProblem(b, []float64{160, 280, 280, 280}, nil, oefNoisyJobs(2000, 1))
	rng := rand.New(rand.NewPCG(3, 4))
	a := alloc.NewAllocation(p.JobIDs(), p.Capacity)
	for i := range a.GPUs {
		for k := range a.GPUs[i] {
			a.GPUs[i][k] = rng.Float64() * 0.3
		}
	}
	rates := p.Throughputs.Values()
	lo, hi := make([]alloc.Linear, len(rates)), make([]alloc.Linear, len(rates))
	for i, r := range rates {
		lo[i], hi[i] = make(alloc.Linear, len(r)), make(alloc.Linear, len(r))
		for k, x := range r {
			lo[i][k], hi[i][k] = 0.99*x, 1.01*x
		}
	}
	b.Run("within", func(b *testing.B) {
		for b.Loop() {
			if _, err := alloc.EnvyFreenessWithin(a, lo, hi, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("midpoints", func(b *testing.B) {
		vals := p.Valuations()
		for b.Loop() {
			if _, err := alloc.EnvyFreeness(a, vals, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
