package alloc

import (
	"math"
	"strconv"

	"github.com/gpufair/gpufair"
)

// AxiomTol is the relative tolerance of the axiom checks. A check passes
// when its worst relative margin is no worse than −AxiomTol: sharing
// incentive holds when u_i(own)/u_i(share) − 1 ≥ −AxiomTol for every row,
// envy-freeness when no relative envy exceeds AxiomTol, Pareto efficiency
// when the largest total relative gain is at most AxiomTol, and
// strategy-proofness when no misreport gains more than AxiomTol relative.
// It sits above the LP solvers' accuracy (about 1e-9 relative, FeasTol for
// capacities) so that an allocation an LP returns for an axiom it enforces
// passes, and far below the margins of any real violation in the papers'
// examples (the smallest there is 1/45 ≈ 2%).
const AxiomTol = 1e-6

// rowLabel returns a's label of row i, or its index when a has no label.
func rowLabel(a *Allocation, i int) string {
	if i < len(a.Rows) {
		return a.Rows[i]
	}
	return strconv.Itoa(i)
}

// checkBundles checks the shape and values of a without a cluster: one
// label and one finite, non-negative (within FeasTol) amount per type for
// every row, and at least one row.
func checkBundles(a *Allocation) error {
	if a == nil {
		return gpufair.Invalid("Allocation", "", gpufair.ErrEmpty, "nil allocation")
	}
	if len(a.GPUs) == 0 {
		return gpufair.Invalid("Allocation.GPUs", "", gpufair.ErrEmpty, "no rows")
	}
	if len(a.Types) == 0 {
		return gpufair.Invalid("Allocation.Types", "", gpufair.ErrEmpty, "no GPU types")
	}
	return a.checkRows()
}

// checkAllocation checks a against c (see Allocation.Validate) after the
// checks of checkBundles, so that a nil or empty allocation is an error too.
func checkAllocation(a *Allocation, c Capacity) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := checkBundles(a); err != nil {
		return err
	}
	return a.Validate(c)
}

// checkRowInputs checks a's rows (checkBundles), one valuation per row
// (checkValuations) and the weights (checkWeights).
func checkRowInputs(a *Allocation, vals []Valuation, weights []float64) error {
	if err := checkBundles(a); err != nil {
		return err
	}
	if err := checkValuations(a, vals); err != nil {
		return err
	}
	return checkWeights(a, weights)
}

// checkValuations checks one non-nil valuation per row of a; a Linear one
// must have one rate per type, each finite and non-negative.
func checkValuations(a *Allocation, vals []Valuation) error {
	if len(vals) != len(a.GPUs) {
		return gpufair.Invalid("Valuations", "", gpufair.ErrShape, "%d valuations for %d rows", len(vals), len(a.GPUs))
	}
	for i, v := range vals {
		if v == nil {
			return gpufair.Invalid("Valuations", rowLabel(a, i), gpufair.ErrEmpty, "nil valuation")
		}
		switch v := v.(type) {
		case Linear:
			if err := checkLinear(a, "Valuations", i, v); err != nil {
				return err
			}
		case BestOf:
			for _, l := range v {
				if err := checkLinear(a, "Valuations", i, l); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkLinear checks that l, row i's valuation in the input named field,
// has one finite, non-negative rate per type of a.
func checkLinear(a *Allocation, field string, i int, l Linear) error {
	if len(l) != len(a.Types) {
		return gpufair.Invalid(field, rowLabel(a, i), gpufair.ErrShape, "%d rates for %d types", len(l), len(a.Types))
	}
	for k, r := range l {
		if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
			return gpufair.Invalid(field, rowLabel(a, i), gpufair.ErrValue, "rate %v on %q", r, a.Types[k])
		}
	}
	return nil
}

// checkWeights checks that weights is nil or holds one weight per row of a
// in [MinWeight, MaxWeight], the bounds of Tenant and Job weights: ratios
// of weights beyond them overflow (1e300 was accepted).
func checkWeights(a *Allocation, weights []float64) error {
	if weights == nil {
		return nil
	}
	if len(weights) != len(a.GPUs) {
		return gpufair.Invalid("Weights", "", gpufair.ErrShape, "%d weights for %d rows", len(weights), len(a.GPUs))
	}
	for i, w := range weights {
		if !validWeight(w) {
			return gpufair.Invalid("Weights", rowLabel(a, i), gpufair.ErrValue, "weight %v is not in [MinWeight, MaxWeight]", w)
		}
	}
	return nil
}

// weightOf returns row i's weight, 1 when weights is nil.
func weightOf(weights []float64, i int) float64 {
	if weights == nil {
		return 1
	}
	return weights[i]
}

// value returns v's value of b, or an gpufair.InputError naming the row when the
// valuation returns NaN, an infinity or a negative number.
func value(a *Allocation, i int, v Valuation, b []float64) (float64, error) {
	u := v.Value(b)
	if math.IsNaN(u) || math.IsInf(u, 0) || u < 0 {
		return 0, gpufair.Invalid("Valuations", rowLabel(a, i), gpufair.ErrValue, "value %v of bundle %v", u, b)
	}
	return u, nil
}
