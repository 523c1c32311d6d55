package alloc

// SharingIncentiveReport is the verdict of SharingIncentive.
type SharingIncentiveReport struct {
	// Holds reports that every margin is at least −AxiomTol.
	Holds bool
	// Margin[i] is row i's relative margin u_i(own)/u_i(share_i) − 1:
	// negative when the row would rather have its weighted equal share. A
	// row that values its share at 0 (a user without jobs, a job with a
	// zero row) has margin 0 when it values its own bundle at 0 too, and
	// +Inf otherwise, as EnvyFreeness compares worthless bundles.
	Margin []float64
	// Worst is the row with the smallest margin (the witness when Holds is
	// false); ties go to the lowest index.
	Worst int
	// Own[i] is u_i(own bundle) and Share[i] is u_i(share_i).
	Own, Share []float64
}

// SharingIncentive checks that every row values its bundle at least as much
// as its weighted equal share of the cluster, share_i[k] = w_i/Σ_j w_j ·
// Count[k] for every type k (1/n of every type when weights is nil):
//
//	u_i(x_i) ≥ u_i(share_i)  for every row i.
//
// It costs one valuation call per row and two per row for the share.
//
// The allocation must be valid for c (Allocation.Validate), vals must hold
// one valuation per row and weights, when not nil, one weight per row in
// [MinWeight, MaxWeight]. Errors are *gpufair.InputError values naming the
// input.
func SharingIncentive(a *Allocation, c Capacity, vals []Valuation, weights []float64) (*SharingIncentiveReport, error) {
	if err := checkAllocation(a, c); err != nil {
		return nil, err
	}
	if err := checkRowInputs(a, vals, weights); err != nil {
		return nil, err
	}
	return siReport(a, c, weights, func(i int, share []float64) (own, s float64, err error) {
		if s, err = value(a, i, vals[i], share); err != nil {
			return 0, 0, err
		}
		own, err = value(a, i, vals[i], a.GPUs[i])
		return own, s, err
	})
}

// siReport builds the report of SharingIncentive from values, which gives
// row i's value of its own bundle and of share, its weighted equal share of
// c (values may keep share only until it returns).
func siReport(a *Allocation, c Capacity, weights []float64, values func(i int, share []float64) (own, s float64, err error)) (*SharingIncentiveReport, error) {
	n := len(a.GPUs)
	var total float64
	for i := range n {
		total += weightOf(weights, i)
	}
	r := &SharingIncentiveReport{Margin: make([]float64, n), Own: make([]float64, n), Share: make([]float64, n)}
	share := make([]float64, len(c.Count))
	for i := range n {
		f := weightOf(weights, i) / total
		for k, m := range c.Count {
			share[k] = f * m
		}
		own, s, err := values(i, share)
		if err != nil {
			return nil, err
		}
		r.Own[i], r.Share[i], r.Margin[i] = own, s, relativeEnvy(s, own)
		if r.Margin[i] < r.Margin[r.Worst] {
			r.Worst = i
		}
	}
	r.Holds = r.Margin[r.Worst] >= -AxiomTol
	return r, nil
}
