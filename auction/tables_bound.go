package auction

import (
	"math"
	"time"
)

// stallSteps is how many subgradient steps without a lower bound halve the
// step length.
const stallSteps = 3

// minTheta ends the subgradient steps once their length has been halved
// this far: the bound has stopped improving.
const minTheta = 1.0 / 32

// relax evaluates the Lagrangian relaxation of the remaining bids at prices
// lam ≥ 0 on each server's free GPUs:
//
//	U(lam) = Σ_j max(weight_j, max_{r fits} w_r − lam·c_r) + lam·free
//
// Every choice of rows on disjoint GPUs is worth at most U(lam): its rows
// fit, so each bid's term is at least its choice's value less its price,
// and the prices of all rows together are at most lam·free. It records each
// bid's maximiser in b.pick (-1: no row) and the GPUs they use in b.used.
func (b *bnb) relax(bids []int, lam []float64) float64 {
	var u float64
	for s := range b.used {
		b.used[s] = 0
		u += lam[s] * float64(b.free[s])
	}
	for _, j := range bids {
		best, pick := b.weight[j], -1
		for c, r := range b.rows[j] {
			if r.w <= best {
				break // rows are best first and prices only lower them
			}
			if !fitsIn(r, b.free) {
				continue
			}
			if a := r.w - priceOf(r, lam); a > best {
				best, pick = a, c
			}
		}
		b.pick[j] = pick
		if pick >= 0 {
			r := b.rows[j][pick]
			for k, s := range r.srv {
				b.used[s] += r.cnt[k]
			}
		}
		u += best
	}
	return u
}

// bound returns an upper bound on the weight of the best completion of the
// bids (those not yet fixed, whose fixed part weighs w), lowering U(lam) by
// up to steps projected subgradient steps with Polyak's step length towards
// the incumbent. lam is updated in place. When a relaxed choice happens to
// fit the free GPUs it is a real completion and is offered as incumbent.
func (b *bnb) bound(bids []int, lam []float64, w float64, steps int) float64 {
	best := math.Inf(1)
	theta, stall := 1.0, 0
	for it := 0; ; it++ {
		u := b.relax(bids, lam)
		if u < best {
			best, stall = u, 0
		} else if stall++; stall == stallSteps {
			theta, stall = theta/2, 0
		}
		var norm float64
		feasible := true
		for s := range b.grad {
			g := float64(b.free[s] - b.used[s])
			if g < 0 {
				feasible = false
			} else if lam[s] == 0 {
				g = 0 // projected: the price cannot fall below 0
			}
			b.grad[s] = g
			norm += g * g
		}
		if feasible {
			b.offerPicks(bids)
		}
		target := b.bestW - w
		if best <= target+b.tol() || it >= steps || norm == 0 || theta < minTheta {
			return best
		}
		if !b.limit.runEnd.IsZero() && time.Now().After(b.limit.runEnd) {
			return best // any U(lam) bounds the optimum; stop refining it
		}
		t := theta * (u - target) / norm
		for s, g := range b.grad {
			lam[s] = max(0, lam[s]-t*g)
		}
	}
}

// offerPicks offers the fixed rows plus the relaxed choices of bids as
// incumbent; the caller has checked that they fit.
func (b *bnb) offerPicks(bids []int) {
	for _, j := range bids {
		if b.pick[j] >= 0 {
			b.cur[j] = b.rows[j][b.pick[j]].row
		}
	}
	b.offer(b.cur)
	for _, j := range bids {
		b.cur[j] = -1
	}
}
