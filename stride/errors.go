package stride

import "github.com/gpufair/gpufair"

// maxWeight bounds weights away from +Inf so that strides stay positive.
const maxWeight = 1e300

// maxStride bounds a job's stride, its gang over its weight: a weight of
// 1e-320 made it +Inf, so the job's pass stopped moving and no snapshot
// could hold it. Below maxStride, passes stay finite for 1e50 quanta.
const maxStride = 1e250

// minTickets bounds a tenant's tickets away from 0. Fair gives a job the
// weight of its tenant's tickets on its type per GPU demanded there, times
// its gang, and a tenant keeps as few as minTicketShare of its tickets on a
// type it traded away: from minTickets on, strides stay below maxStride for
// any demand below 1e40 GPUs.
const minTickets = 1e-200

// checkWeight returns an *gpufair.InputError wrapping gpufair.ErrValue for a
// weight (tickets) that is zero, negative, NaN or infinite.
func checkWeight(field, id string, w float64) error {
	if !(w > 0) || w > maxWeight {
		return gpufair.Invalid(field, id, gpufair.ErrValue, "weight %v is not positive and finite", w)
	}
	return nil
}

// checkJobWeight is checkWeight for a job of gang GPUs, whose stride
// gang/w must also be at most maxStride.
func checkJobWeight(field, id string, w float64, gang int) error {
	if err := checkWeight(field, id, w); err != nil {
		return err
	}
	if !(float64(gang)/w <= maxStride) {
		return gpufair.Invalid(field, id, gpufair.ErrValue, "weight %v gives a gang of %d a stride above %v", w, gang, maxStride)
	}
	return nil
}

// typeTickets reports whether w is tickets SetTypeTickets takes on a type:
// not negative, NaN or above maxWeight (tickets above it made Readjust fail).
func typeTickets(w float64) bool { return w >= 0 && w <= maxWeight }

// checkTickets returns an *gpufair.InputError wrapping gpufair.ErrValue for
// a tenant's tickets outside [minTickets, maxWeight], NaN included.
func checkTickets(field, id string, w float64) error {
	if !(w >= minTickets) || w > maxWeight {
		return gpufair.Invalid(field, id, gpufair.ErrValue, "tickets %v are not within [%v, %v]", w, minTickets, maxWeight)
	}
	return nil
}
