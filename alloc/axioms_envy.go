package alloc

import "math"

// EnvyReport is the verdict of EnvyFreeness.
type EnvyReport struct {
	// Holds reports that MaxEnvy is at most AxiomTol.
	Holds bool
	// Envy[i][j] is how much more row i values row j's bundle than its own,
	// relative and weighted: (w_i/w_j)·u_i(x_j)/u_i(x_i) − 1. It is 0 on the
	// diagonal, −1 when i values j's bundle at 0, and +Inf when i values
	// its own bundle at 0 and j's above 0.
	Envy [][]float64
	// MaxEnvy is the largest Envy[i][j] over pairs i ≠ j, and Envier and
	// Envied are that pair (the witness when Holds is false); ties go to the
	// lowest i, then the lowest j. With a single row there is no pair:
	// MaxEnvy is −1 and Envier and Envied are −1.
	MaxEnvy        float64
	Envier, Envied int
}

// EnvyFreeness measures envy between every pair of rows under the envier's
// valuation. With weights w (all 1 when weights is nil), row i envies row j
// when it values j's bundle, scaled to i's entitlement, above its own:
//
//	u_i(x_i)/w_i ≥ u_i(x_j)/w_j  for every pair i, j   (weighted envy-freeness)
//
// It costs n² valuation calls for n rows.
//
// The allocation needs no cluster here: only finite, non-negative amounts
// and one valuation per row (and one weight per row, in [MinWeight,
// MaxWeight], when weights is not nil). Errors are *gpufair.InputError
// values naming the input.
func EnvyFreeness(a *Allocation, vals []Valuation, weights []float64) (*EnvyReport, error) {
	if err := checkRowInputs(a, vals, weights); err != nil {
		return nil, err
	}
	n := len(a.GPUs)
	r := &EnvyReport{Envy: make([][]float64, n), MaxEnvy: -1, Envier: -1, Envied: -1}
	for i, v := range vals {
		r.Envy[i] = make([]float64, n)
		own, err := value(a, i, v, a.GPUs[i])
		if err != nil {
			return nil, err
		}
		for j := range n {
			if j == i {
				continue
			}
			other, err := value(a, i, v, a.GPUs[j])
			if err != nil {
				return nil, err
			}
			e := relativeEnvy(own, other*weightOf(weights, i)/weightOf(weights, j))
			r.Envy[i][j] = e
			if r.Envier < 0 || e > r.MaxEnvy {
				r.MaxEnvy, r.Envier, r.Envied = e, i, j
			}
		}
	}
	r.Holds = r.MaxEnvy <= AxiomTol
	return r, nil
}

// relativeEnvy returns other/own − 1, with 0/0 = 0 (indifference between
// two worthless bundles) and x/0 = +Inf for x > 0.
func relativeEnvy(own, other float64) float64 {
	if own == 0 {
		if other == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return other/own - 1
}
