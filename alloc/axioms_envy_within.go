package alloc

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
)

// EnvyFreenessWithin measures the worst envy between every pair of rows when
// each row's rates are known only within bounds: row i's true rate on type k
// may be anything in [lo[i][k], hi[i][k]], as when a job's profile is taken
// from repeated runs that disagree (docs/benchmarks/oef.md measures how
// much). Envy[i][j] is the largest envy of EnvyFreeness that i can have of
// j under any such rates, so Holds reports that the allocation is
// envy-free, within AxiomTol, whatever the true rates are; with lo = hi it
// is EnvyFreeness with those Linear valuations.
//
// For a pair (i, j) the worst rates maximise u_i(x_j)/u_i(x_i), a ratio of
// two linear functions of i's rates over a box. Its maximum lies at a
// vertex where the types on which x_j is richest relative to x_i take their
// upper bound and the others their lower one (the ratio's threshold
// condition), so sorting the types by x_j[k]/x_i[k] and trying each
// threshold finds it exactly: n² pairs at O(K log K) each.
//
// Errors are *gpufair.InputError values naming the input: the allocation
// and weights as for EnvyFreeness, lo and hi with one row of one finite,
// non-negative rate per type for each row of a, and lo ≤ hi.
func EnvyFreenessWithin(a *Allocation, lo, hi []Linear, weights []float64) (*EnvyReport, error) {
	if err := checkBundles(a); err != nil {
		return nil, err
	}
	if err := checkWeights(a, weights); err != nil {
		return nil, err
	}
	for _, b := range [...]struct {
		field string
		rows  []Linear
	}{{"Lo", lo}, {"Hi", hi}} {
		if len(b.rows) != len(a.GPUs) {
			return nil, gpufair.Invalid(b.field, "", gpufair.ErrShape, "%d rows of rates for %d rows", len(b.rows), len(a.GPUs))
		}
		for i, l := range b.rows {
			if err := checkLinear(a, b.field, i, l); err != nil {
				return nil, err
			}
		}
	}
	for i := range lo {
		for k := range lo[i] {
			if lo[i][k] > hi[i][k] {
				return nil, gpufair.Invalid("Lo", rowLabel(a, i), gpufair.ErrValue, "lower bound %v above the upper bound %v on %q", lo[i][k], hi[i][k], a.Types[k])
			}
		}
	}
	n, types := len(a.GPUs), len(a.Types)
	r := &EnvyReport{Envy: make([][]float64, n), MaxEnvy: -1, Envier: -1, Envied: -1}
	order := make([]int, types)
	rate := make([]float64, types)
	for i := range n {
		r.Envy[i] = make([]float64, n)
		for j := range n {
			if j == i {
				continue
			}
			e := worstEnvy(a.GPUs[i], a.GPUs[j], weightOf(weights, i)/weightOf(weights, j), lo[i], hi[i], order, rate)
			r.Envy[i][j] = e
			if r.Envier < 0 || e > r.MaxEnvy {
				r.MaxEnvy, r.Envier, r.Envied = e, i, j
			}
		}
	}
	r.Holds = r.MaxEnvy <= AxiomTol
	return r, nil
}

// worstEnvy returns the largest relativeEnvy(rate·own, w·rate·other) over
// rates within [lo, hi], trying each threshold vertex: the first t types in
// the order of other[k]/own[k], largest first (a type without own GPUs
// first of all), at hi and the rest at lo. order and rate are scratch with
// room for one entry per type.
func worstEnvy(own, other []float64, w float64, lo, hi Linear, order []int, rate []float64) float64 {
	// Types in neither bundle count for nothing: they stay at lo, out of
	// the order.
	order = order[:0]
	for k := range own {
		if own[k] > 0 || other[k] > 0 {
			order = append(order, k)
		}
	}
	// By other[k]/own[k], largest first: +Inf for a type without own GPUs
	// (never NaN: 0/0 is left out above). Quotients, not cross products,
	// which underflow to zero between tiny amounts and tie.
	slices.SortStableFunc(order, func(k, l int) int {
		return cmp.Compare(other[l]/own[l], other[k]/own[k])
	})
	copy(rate, lo)
	worst := math.Inf(-1)
	for t := 0; t <= len(order); t++ {
		if t > 0 {
			rate[order[t-1]] = hi[order[t-1]]
		}
		var u, v float64
		for k, x := range rate {
			u += x * own[k]
			v += x * other[k]
		}
		worst = max(worst, relativeEnvy(u, w*v))
	}
	return worst
}
