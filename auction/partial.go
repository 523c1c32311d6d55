package auction

import (
	"context"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/alloc"
)

// Outcome is the result of the partial-allocation mechanism on divisible
// goods.
type Outcome struct {
	// PF is the proportionally fair allocation x* with every bidder.
	PF *Result
	// Keep[i] is c_i, the fraction of x*_i bidder i keeps (Themis' Pseudocode
	// 1 line 8, inverted there; see Keep's definition in PartialAllocation).
	Keep []float64
	// Final is c_i·x*_i per bidder: what each bidder is granted.
	Final *alloc.Allocation
	// Leftover is the capacity of each type not in Final: the hidden
	// payments Σ_i (1-c_i)·x*_i plus anything x* leaves unallocated.
	Leftover []float64
	// Gap is the largest optimality certificate over the n+1 solves.
	Gap float64
}

// keepTol is how far above 1 a computed c_i may come out of two certified
// solves (each within GapTol) before it is clamped to 1; larger excesses are
// reported, since they mean a solve was not optimal.
const keepTol = 1e-6

// PartialAllocation runs Cole, Gkatzelis and Goel's Partial Allocation
// mechanism, as Themis' one-shot auction uses it (Pseudocode 1, lines 5-11),
// on divisible goods:
//
//  1. x* = the proportionally fair allocation (ProportionalFair);
//  2. for each bidder i, x*₋ᵢ = the proportionally fair allocation of the
//     whole cluster among the others;
//  3. c_i = Π_{j≠i} v_j(x*_j) / Π_{j≠i} v_j(x*₋ᵢ,j), which is at most 1
//     because x*₋ᵢ maximises that product over a larger set. Themis' copy 000
//     prints the ratio upside down (DESIGN.md, ERRATA.md);
//  4. bidder i gets c_i·x*_i; the rest is a hidden payment, left over.
//
// With one bidder c = 1. For valuations homogeneous of degree one the
// mechanism is strategy-proof and each bidder keeps at least 1/e of its
// proportionally fair value (Cole et al.); Themis' Theorem 3.2. It is not
// sharing-incentive and not work-conserving: Leftover is the payment.
//
// Errors are those of ProportionalFair; a failed re-solve is wrapped with the
// bidder left out. ctx is checked between solves.
func PartialAllocation(ctx context.Context, c alloc.Capacity, bidders []string, vals []alloc.Valuation, s *Settings) (*Outcome, error) {
	pf, logs, err := proportionalFair(ctx, c, bidders, vals, s)
	if err != nil {
		return nil, err
	}
	n := len(bidders)
	out := &Outcome{PF: pf, Keep: make([]float64, n), Gap: pf.Gap}
	var all float64
	for i := range logs {
		all += logs[i]
	}
	for i := range bidders {
		if n == 1 {
			out.Keep[i] = 1
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ob := append(append([]string(nil), bidders[:i]...), bidders[i+1:]...)
		ov := append(append([]alloc.Valuation(nil), vals[:i]...), vals[i+1:]...)
		without, wlogs, err := proportionalFair(ctx, c, ob, ov, s)
		if err != nil {
			return nil, fmt.Errorf("auction: re-solve without %q: %w", bidders[i], err)
		}
		out.Gap = max(out.Gap, without.Gap)
		var others float64
		for _, l := range wlogs {
			others += l
		}
		ci := math.Exp((all - logs[i]) - others)
		if ci > 1+keepTol {
			return nil, fmt.Errorf("%w: c[%q] = %v > 1", ErrNotConverged, bidders[i], ci)
		}
		out.Keep[i] = min(ci, 1)
	}
	out.Final = alloc.NewAllocation(bidders, c)
	out.Leftover = append([]float64(nil), c.Count...)
	for i := range bidders {
		for k, x := range pf.Alloc.GPUs[i] {
			out.Final.GPUs[i][k] = out.Keep[i] * x
			out.Leftover[k] -= out.Final.GPUs[i][k]
		}
	}
	for k := range out.Leftover {
		out.Leftover[k] = max(out.Leftover[k], 0)
	}
	return out, nil
}
