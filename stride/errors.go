package stride

import "github.com/gpufair/gpufair"

// maxWeight bounds weights away from +Inf so that strides stay positive.
const maxWeight = 1e300

// checkWeight returns an *gpufair.InputError wrapping gpufair.ErrValue for a
// weight (tickets) that is zero, negative, NaN or infinite.
func checkWeight(field, id string, w float64) error {
	if !(w > 0) || w > maxWeight {
		return gpufair.Invalid(field, id, gpufair.ErrValue, "weight %v is not positive and finite", w)
	}
	return nil
}
