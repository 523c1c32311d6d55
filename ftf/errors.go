package ftf

import (
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
)

// badInput returns an *gpufair.InputError wrapping sentinel, so callers test
// ftf's rejections with errors.Is(err, gpufair.ErrValue) and friends.
func badInput(field, id string, sentinel error, format string, args ...any) error {
	return &gpufair.InputError{Field: field, ID: id, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}

func finiteNonNeg(x float64) bool   { return x >= 0 && !math.IsInf(x, 0) }
func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
