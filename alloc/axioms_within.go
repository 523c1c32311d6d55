package alloc

import "github.com/gpufair/gpufair"

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
// threshold finds it exactly: for n² pairs, a sort of the K types and K+1
// vertices (3.5 times EnvyFreeness's time at 2,000 rows × 4 types).
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
	if err := checkBounds(a, lo, hi); err != nil {
		return nil, err
	}
	n, types := len(a.GPUs), len(a.Types)
	r := &EnvyReport{Envy: make([][]float64, n), MaxEnvy: -1, Envier: -1, Envied: -1}
	order := make([]int, types)
	key := make([]float64, types)
	for i := range n {
		r.Envy[i] = make([]float64, n)
		for j := range n {
			if j == i {
				continue
			}
			e, _, _ := worstEnvy(a.GPUs[i], a.GPUs[j], weightOf(weights, i)/weightOf(weights, j), lo[i], hi[i], order, key)
			r.Envy[i][j] = e
			if r.Envier < 0 || e > r.MaxEnvy {
				r.MaxEnvy, r.Envier, r.Envied = e, i, j
			}
		}
	}
	r.Holds = r.MaxEnvy <= AxiomTol
	return r, nil
}

// checkBounds checks lo and hi: one row of one finite, non-negative rate per
// type for each row of a, and lo ≤ hi.
func checkBounds(a *Allocation, lo, hi []Linear) error {
	for _, b := range [...]struct {
		field string
		rows  []Linear
	}{{"Lo", lo}, {"Hi", hi}} {
		if len(b.rows) != len(a.GPUs) {
			return gpufair.Invalid(b.field, "", gpufair.ErrShape, "%d rows of rates for %d rows", len(b.rows), len(a.GPUs))
		}
		for i, l := range b.rows {
			if err := checkLinear(a, b.field, i, l); err != nil {
				return err
			}
		}
	}
	for i := range lo {
		for k := range lo[i] {
			if lo[i][k] > hi[i][k] {
				return gpufair.Invalid("Lo", rowLabel(a, i), gpufair.ErrValue, "lower bound %v above the upper bound %v on %q", lo[i][k], hi[i][k], a.Types[k])
			}
		}
	}
	return nil
}

// SharingIncentiveWithin checks sharing incentive, as SharingIncentive
// does, for every rate within bounds: row i's rate on type k may be anything
// in [lo[i][k], hi[i][k]]. Margin[i] is the smallest margin any such rates
// give row i, and Own[i] and Share[i] its values of its bundle and its share
// at those rates; Holds reports that the allocation is sharing-incentive
// whatever the true rates are. With lo = hi it is SharingIncentive with those
// Linear valuations.
//
// The smallest margin is the largest ratio u_i(share_i)/u_i(x_i) over a box
// of rates, found exactly at a threshold vertex as in EnvyFreenessWithin.
// The allocation must be valid for c; errors are *gpufair.InputError values
// naming the input, as for SharingIncentive and EnvyFreenessWithin.
func SharingIncentiveWithin(a *Allocation, c Capacity, lo, hi []Linear, weights []float64) (*SharingIncentiveReport, error) {
	if err := checkAllocation(a, c); err != nil {
		return nil, err
	}
	if err := checkWeights(a, weights); err != nil {
		return nil, err
	}
	if err := checkBounds(a, lo, hi); err != nil {
		return nil, err
	}
	order, key := make([]int, len(c.Count)), make([]float64, len(c.Count))
	return siReport(a, c, weights, func(i int, share []float64) (own, s float64, err error) {
		_, own, s = worstEnvy(a.GPUs[i], share, 1, lo[i], hi[i], order, key)
		return own, s, nil
	})
}

// worstEnvy returns the largest relativeEnvy(rate·own, w·rate·other) over
// rates within [lo, hi], and rate·own and w·rate·other at the rates that give
// it. It tries each threshold vertex: the first t types in the order of
// other[k]/own[k], largest first (a type without own GPUs first of all), at
// hi and the rest at lo. order and key are scratch with room for one entry
// per type.
func worstEnvy(own, other []float64, w float64, lo, hi Linear, order []int, key []float64) (worst, ownValue, otherValue float64) {
	// Start from every rate at lo; types in neither bundle count for
	// nothing and stay out of the order.
	var u, v float64
	order = order[:0]
	for k := range own {
		u += lo[k] * own[k]
		v += lo[k] * other[k]
		if own[k] == 0 && other[k] == 0 {
			continue
		}
		// Quotients, not cross products, which underflow to zero between
		// tiny amounts and tie; +Inf for a type without own GPUs. An
		// insertion sort: there are a few types.
		key[k] = other[k] / own[k]
		n := len(order)
		order = append(order, k)
		for n > 0 && key[order[n-1]] < key[k] {
			order[n] = order[n-1]
			n--
		}
		order[n] = k
	}
	worst, ownValue, otherValue = relativeEnvy(u, w*v), u, w*v
	for _, k := range order {
		d := hi[k] - lo[k]
		u += d * own[k]
		v += d * other[k]
		if e := relativeEnvy(u, w*v); e > worst {
			worst, ownValue, otherValue = e, u, w*v
		}
	}
	return worst, ownValue, otherValue
}
