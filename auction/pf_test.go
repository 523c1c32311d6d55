package auction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
	"pgregory.net/rapid"
)

// valTol is the relative slack for utilities and c_i out of certified
// solves (GapTol 1e-9 on Σ log v bounds each relative error by about 1e-9;
// allocations of non-unique optima may differ more, so tests compare values).
const valTol = 1e-6

func cluster(counts ...float64) alloc.Capacity {
	types := make([]topology.GPUType, len(counts))
	for k := range types {
		types[k] = topology.GPUType(fmt.Sprintf("t%d", k))
	}
	c, err := alloc.NewCapacity(types, counts)
	if err != nil {
		panic(err)
	}
	return c
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("b%d", i)
	}
	return out
}

func TestPartialAllocationWorked(t *testing.T) {
	// Bidder 0 values only type 0; bidder 1 values both equally. At the
	// equilibrium (prices 1, 1) bidder 0 buys type 0 and bidder 1 type 1.
	// Without bidder 0, bidder 1 would get value 2: c_0 = 1/2. Without bidder
	// 1, bidder 0 still gets 1: c_1 = 1.
	c := cluster(1, 1)
	out, err := PartialAllocation(context.Background(), c, names(2), []alloc.Valuation{alloc.Linear{1, 0}, alloc.Linear{1, 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := cmpopts.EquateApprox(0, 1e-12)
	if diff := cmp.Diff([]float64{0.5, 1}, out.Keep, opt); diff != "" {
		t.Errorf("Keep mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]float64{{0.5, 0}, {0, 1}}, out.Final.GPUs, opt); diff != "" {
		t.Errorf("Final mismatch (-want +got):\n%s", diff)
	}
	if !out.PF.Exact || out.Gap > 1e-12 {
		t.Errorf("Exact = %v, gap %v: want an exact equilibrium", out.PF.Exact, out.Gap)
	}
	if diff := cmp.Diff([]float64{0.5, 0}, out.Leftover, opt); diff != "" {
		t.Errorf("Leftover mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float64{1, 1}, out.PF.Prices, opt); diff != "" {
		t.Errorf("Prices mismatch (-want +got):\n%s", diff)
	}
}

// ces is v(x) = (Σ_k a_k x_k^r)^(1/r), r in (0,1): concave and homogeneous
// of degree one, with substitutes less perfect than linear.
type ces struct {
	a []float64
	r float64
}

func (c ces) Value(x []float64) float64 {
	var s float64
	for k, a := range c.a {
		s += a * math.Pow(x[k], c.r)
	}
	return math.Pow(s, 1/c.r)
}

func (c ces) Gradient(x, g []float64) {
	v := c.Value(x)
	for k, a := range c.a {
		if x[k] <= 0 {
			g[k] = math.Inf(1)
			if a == 0 {
				g[k] = 0
			}
			continue
		}
		g[k] = a * math.Pow(x[k]/v, c.r-1)
	}
}

// linearH is a Linear valuation seen only through the Homogeneous
// interface, so the generic path can be checked against the linear one.
type linearH alloc.Linear

func (l linearH) Value(x []float64) float64 { return alloc.Linear(l).Value(x) }
func (l linearH) Gradient(_, g []float64)   { copy(g, l) }

func TestHomogeneousMatchesLinear(t *testing.T) {
	c := cluster(4, 2, 3)
	lin := []alloc.Valuation{alloc.Linear{1, 2, 0.5}, alloc.Linear{3, 1, 1}, alloc.Linear{0, 1, 2}}
	gen := []alloc.Valuation{linearH{1, 2, 0.5}, linearH{3, 1, 1}, linearH{0, 1, 2}}
	a, err := PartialAllocation(context.Background(), c, names(3), lin, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PartialAllocation(context.Background(), c, names(3), gen, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.PF.Exact || b.PF.Exact {
		t.Errorf("Exact = %v (Linear), %v (Homogeneous), want true, false", a.PF.Exact, b.PF.Exact)
	}
	// The interior point's values are accurate to about √GapTol = 1e-4.
	opt := cmpopts.EquateApprox(1e-3, 0)
	if diff := cmp.Diff(a.PF.Utilities, b.PF.Utilities, opt); diff != "" {
		t.Errorf("utilities, Linear (-) vs Homogeneous (+):\n%s", diff)
	}
	if diff := cmp.Diff(a.Keep, b.Keep, opt); diff != "" {
		t.Errorf("c_i, Linear (-) vs Homogeneous (+):\n%s", diff)
	}
}

func TestCES(t *testing.T) {
	c := cluster(2, 2)
	vals := []alloc.Valuation{ces{[]float64{1, 1}, 0.5}, ces{[]float64{2, 1}, 0.5}, alloc.Linear{1, 3}}
	out, err := PartialAllocation(context.Background(), c, names(3), vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Gap > DefaultGapTol {
		t.Errorf("gap %v above tolerance", out.Gap)
	}
	for i, ci := range out.Keep {
		if !(ci > 1/math.E-valTol && ci <= 1) {
			t.Errorf("c[%d] = %v, want in [1/e, 1]", i, ci)
		}
	}
}

func TestPFInputErrors(t *testing.T) {
	c := cluster(1, 1)
	for _, tc := range []struct {
		name string
		vals []alloc.Valuation
		want error
	}{
		{"NaN rate", []alloc.Valuation{alloc.Linear{math.NaN(), 1}}, gpufair.ErrValue},
		{"negative rate", []alloc.Valuation{alloc.Linear{-1, 1}}, gpufair.ErrValue},
		{"values nothing", []alloc.Valuation{alloc.Linear{0, 0}}, gpufair.ErrValue},
		{"wrong length", []alloc.Valuation{alloc.Linear{1}}, gpufair.ErrShape},
		{"not homogeneous", []alloc.Valuation{constVal{}}, gpufair.ErrValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PartialAllocation(context.Background(), c, names(len(tc.vals)), tc.vals, nil)
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) {
				t.Errorf("error = %v, want an *gpufair.InputError wrapping %v", err, tc.want)
			}
		})
	}
	if _, err := PartialAllocation(context.Background(), c, nil, nil, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("no bidders: error = %v, want ErrEmpty", err)
	}
	var ie *gpufair.InputError
	if _, err := ProportionalFair(context.Background(), c, names(2), []alloc.Valuation{alloc.Linear{1, 1}}, nil); !errors.Is(err, gpufair.ErrShape) || !errors.As(err, &ie) || ie.Field != "vals" {
		t.Errorf("2 bidders, 1 valuation: error = %v, want an *gpufair.InputError of vals wrapping ErrShape", err)
	}
	// A rate whose product with its count overflowed gave NaN utilities
	// and prices, reported as ErrNotConverged.
	vals := []alloc.Valuation{alloc.Linear{1e300, 1}, alloc.Linear{1, 1}}
	if _, err := PartialAllocation(context.Background(), cluster(1e12, 1), names(2), vals, nil); !errors.Is(err, gpufair.ErrTooLarge) || !errors.As(err, &ie) || ie.Field != "vals" || ie.ID != "b0" {
		t.Errorf("rate 1e300 on 1e12 GPUs: error = %v, want an *gpufair.InputError of vals[b0] wrapping ErrTooLarge", err)
	}
	// A NaN GapTol failed every solve as ErrNotConverged, however exact; a
	// negative one meant the default and an infinite one accepted any
	// point; a negative MaxNewton meant the default.
	for _, tc := range []struct {
		set   Settings
		field string
	}{
		{Settings{GapTol: math.NaN()}, "Settings.GapTol"},
		{Settings{GapTol: math.Inf(1)}, "Settings.GapTol"},
		{Settings{GapTol: -1}, "Settings.GapTol"},
		{Settings{MaxNewton: -1}, "Settings.MaxNewton"},
	} {
		vals := []alloc.Valuation{alloc.Linear{1, 2}, alloc.Linear{2, 1}}
		if _, err := PartialAllocation(context.Background(), c, names(2), vals, &tc.set); !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != tc.field {
			t.Errorf("%+v: error = %v, want an *gpufair.InputError of %s wrapping ErrValue", tc.set, err, tc.field)
		}
	}
}

type constVal struct{}

func (constVal) Value([]float64) float64 { return 1 }

// genMarket draws a cluster and linear valuations; each bidder values at
// least one type.
func genMarket() *rapid.Generator[market] {
	return rapid.Custom(func(t *rapid.T) market {
		m := rapid.IntRange(1, 4).Draw(t, "types")
		n := rapid.IntRange(1, 5).Draw(t, "bidders")
		counts := make([]float64, m)
		for k := range counts {
			counts[k] = float64(rapid.IntRange(1, 8).Draw(t, "count"))
		}
		vals := make([]alloc.Valuation, n)
		for i := range vals {
			l := make(alloc.Linear, m)
			for k := range l {
				if rapid.Bool().Draw(t, "values") {
					l[k] = float64(rapid.IntRange(1, 20).Draw(t, "rate"))
				}
			}
			l[rapid.IntRange(0, m-1).Draw(t, "liked")] = float64(rapid.IntRange(1, 20).Draw(t, "rate"))
			vals[i] = l
		}
		return market{c: cluster(counts...), vals: vals}
	})
}

type market struct {
	c    alloc.Capacity
	vals []alloc.Valuation
}

func TestPartialAllocationProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mk := genMarket().Draw(t, "market")
		n := len(mk.vals)
		out, err := PartialAllocation(context.Background(), mk.c, names(n), mk.vals, nil)
		if err != nil {
			t.Fatal(err)
		}
		final := out.Final.Utilities(mk.vals)
		for i, ci := range out.Keep {
			if !(ci > 0 && ci <= 1) {
				t.Fatalf("c[%d] = %v, not in (0, 1]", i, ci)
			}
			// Cole, Gkatzelis and Goel: at least 1/e of the PF value.
			if final[i] < out.PF.Utilities[i]/math.E*(1-valTol) {
				t.Fatalf("bidder %d gets %v < PF %v / e", i, final[i], out.PF.Utilities[i])
			}
		}
		// Final plus leftover never exceeds the offer.
		used := out.Final.Used()
		for k, cap := range mk.c.Count {
			if used[k]+out.Leftover[k] > cap*(1+alloc.FeasTol)+alloc.FeasTol {
				t.Fatalf("type %d: final %v + leftover %v > %v", k, used[k], out.Leftover[k], cap)
			}
		}
		if err := out.PF.Alloc.Validate(mk.c); err != nil {
			t.Fatal(err)
		}
		// Pareto efficiency of x*: with weights w_i = 1/v_i(x*), x* attains
		// the largest weighted welfare Σ_k cap_k·max_i w_i·a_ik of any
		// feasible allocation, and strictly positive weights make a weighted
		// welfare maximiser Pareto-efficient.
		var got, best float64
		for i, v := range mk.vals {
			got += v.Value(out.PF.Alloc.GPUs[i]) / out.PF.Utilities[i]
		}
		for k, cap := range mk.c.Count {
			var top float64
			for i, v := range mk.vals {
				top = max(top, v.(alloc.Linear)[k]/out.PF.Utilities[i])
			}
			best += cap * top
		}
		if got < best*(1-valTol) {
			t.Fatalf("x* weighted welfare %v below the maximum %v: not Pareto-efficient", got, best)
		}
	})
}

// TestStrategyProofnessProbe lets one bidder misreport its rates (scaled,
// perturbed, zeroed, concentrated) and measures its true value of what it
// is granted; no misreport may gain beyond solver tolerance.
func TestStrategyProofnessProbe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		mk := genMarket().Draw(t, "market")
		n := len(mk.vals)
		if n < 2 {
			return
		}
		liar := rapid.IntRange(0, n-1).Draw(t, "liar")
		truth := mk.vals[liar].(alloc.Linear)
		honest, err := PartialAllocation(context.Background(), mk.c, names(n), mk.vals, nil)
		if err != nil {
			t.Fatal(err)
		}
		base := truth.Value(honest.Final.GPUs[liar])
		lie := make(alloc.Linear, len(truth))
		for k := range lie {
			lie[k] = truth[k] * rapid.Float64Range(0, 3).Draw(t, "factor")
		}
		lie[rapid.IntRange(0, len(lie)-1).Draw(t, "boost")] += rapid.Float64Range(0.1, 10).Draw(t, "extra")
		reported := append([]alloc.Valuation(nil), mk.vals...)
		reported[liar] = lie
		out, err := PartialAllocation(context.Background(), mk.c, names(n), reported, nil)
		if err != nil {
			t.Fatal(err)
		}
		if gain := truth.Value(out.Final.GPUs[liar]); gain > base*(1+1e-5)+1e-9 {
			t.Fatalf("bidder %d reporting %v instead of %v gets true value %v > %v", liar, lie, truth, gain, base)
		}
	})
}

// TestCrossoverTinyPrice: a bidder whose rate on t0 is 1e-10 of its rate
// on t2 buys t0 at a price of about 1e-11. Its share of t0, the flow of its
// budget over that price, once came out 1 + 1e-5 (the flow lost its digits
// next to the tight edge's capacity): the exact equilibrium must stay
// within capacity.
func TestCrossoverTinyPrice(t *testing.T) {
	c := alloc.Capacity{Types: []topology.GPUType{"t0", "t1", "t2"}, Count: []float64{1, 1, 1}}
	vals := []alloc.Valuation{alloc.Linear{1.7462298274040222e-10, 0, 10}, alloc.Linear{0, 1, 0}}
	r, err := ProportionalFair(context.Background(), c, names(2), vals, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact {
		t.Fatalf("crossover failed: %+v", r)
	}
	if err := r.Alloc.Validate(c); err != nil {
		t.Fatalf("allocation %v: %v", r.Alloc.GPUs, err)
	}
	want := [][]float64{{1, 0, 1}, {0, 1, 0}}
	if diff := cmp.Diff(want, r.Alloc.GPUs, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("allocation (-want +got):\n%s", diff)
	}
}

// TestPartialAllocationExtremeScales: c_i and the prices do not depend on
// the scale of a bidder's rates, but a utility that underflowed to 0 (rates
// near the smallest float64, which ProportionalFair takes) made its log
// -Inf, c_i NaN (-Inf − -Inf) or 0 for the others, and Final and Leftover
// NaN, and its price +Inf; one at a subnormal scale lost its digits.
// Logs of utilities now come from the normalised values.
func TestPartialAllocationExtremeScales(t *testing.T) {
	c := cluster(1, 1)
	for _, tc := range []struct {
		name          string
		extreme, want []alloc.Valuation
	}{
		{"underflow to 0", []alloc.Valuation{alloc.Linear{5e-324, 0}, alloc.Linear{1, 2}, alloc.Linear{2, 1}},
			[]alloc.Valuation{alloc.Linear{1, 0}, alloc.Linear{1, 2}, alloc.Linear{2, 1}}},
		{"subnormal", []alloc.Valuation{alloc.Linear{1e-310, 2e-310}, alloc.Linear{1e-310, 1e-310}, alloc.Linear{2, 1}},
			[]alloc.Valuation{alloc.Linear{1, 2}, alloc.Linear{1, 1}, alloc.Linear{2, 1}}},
	} {
		got, err := PartialAllocation(context.Background(), c, names(3), tc.extreme, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := PartialAllocation(context.Background(), c, names(3), tc.want, nil)
		if err != nil {
			t.Fatal(err)
		}
		approx := cmpopts.EquateApprox(valTol, 1e-9)
		if diff := cmp.Diff(want.Keep, got.Keep, approx); diff != "" {
			t.Errorf("%s: Keep (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(want.Final.GPUs, got.Final.GPUs, approx); diff != "" {
			t.Errorf("%s: Final (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(want.Leftover, got.Leftover, approx); diff != "" {
			t.Errorf("%s: Leftover (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(want.PF.Prices, got.PF.Prices, approx); diff != "" {
			t.Errorf("%s: Prices (-want +got):\n%s", tc.name, diff)
		}
	}
}
