package lp

import (
	"context"
	"math"
	"math/bits"
)

// The dual simplex runs before the primal one, from a basis made dual
// feasible: every nonbasic variable at the bound that its reduced cost
// favours. Where that bound is infinite, a temporary box of dualBox
// around the variable stands in for it, and is lifted afterwards. Each
// iteration takes out, at the bound it breaks, the basic variable whose
// squared infeasibility is largest relative to its row's weight, and
// brings in the nonbasic variable whose reduced cost reaches zero first
// along the pivot row (Harris's two passes; the reduced costs are updated
// along it, see pricing.go), so the basis stays dual feasible and ends
// primal feasible: optimal. This is the method of choice after rows are
// added or bounds tightened (the previous optimum stays dual feasible) and
// on LPs whose slack basis is far from primal feasible. Whatever the dual
// phase leaves undone (a box still binding, a numerical difficulty, an LP
// it finds infeasible under the boxes) the primal simplex finishes from
// its last basis: the dual phase only ever saves iterations.
//
// The weights are Devex's estimates by default. With SteepestEdgePricing
// they are the dual steepest edge's, ‖eᵣᵀB⁻¹‖²: exact at a slack basis
// (all 1), kept exact along the pivots (one more FTRAN a pivot, in the
// pass of the entering column's), and kept from one dual phase to the
// next while no other pivot intervenes, so that an Incremental's warm
// rounds start from them. A row added since has its logical basic, which
// leaves every other row of B⁻¹, and so its weight, as it was; its own
// weight takes a solve with the bump's factor (weighNewRows). Neither
// pricing wins everywhere: from a slack basis the steepest edge takes
// 5,616 iterations against 13,527 on cooperative OEF's 1,024 users × 10
// types with distinct rows, and 3,408 against 6,790 on its full model at
// 256 × 3, but 3,681 against 801 on Gavel's max-min LP at 512 jobs × 4
// types with one t (2.4 to 5 times as many at other sizes), whose rows
// all share t's column. In cooperative OEF's warm rounds it takes about
// half of Devex's iterations (1,172 and 1,198 against 2,595 and 3,627 in
// the first two at 1,024 × 10; 435 against 858 in the first of the noisy
// 2,000 jobs'). Guessed weights for the added rows (all 1, or from their
// basic columns' weights) took more iterations than Devex; weighing each
// by a whole BTRAN, or only when first chosen, cost more than the
// iterations saved (docs/benchmarks/lp.md). The largest infeasibility
// alone, unweighted, took 4,680 iterations on water filling's cold LP
// where Devex takes 2,934.

const (
	// dualBox is the half-width, in scaled units, of the temporary box
	// given to a variable whose favoured bound is infinite.
	dualBox = 1e6
	// dualMaxShare bounds the dual phase's iterations, as a multiple of
	// the rows, before it gives way to the primal simplex.
	dualMaxShare = 4
)

// box records a variable's bounds before a temporary box.
type box = shift

// dualPhase runs the dual simplex from the current basis and returns
// whether it reached an optimum of the boxed LP. It restores every box.
func (s *simplex) dualPhase(ctx context.Context, maxIter int) (bool, error) {
	if !s.fresh {
		if err := s.refactor(ctx); err != nil {
			return false, err
		}
	}
	boxes := s.makeDualFeasible()
	defer s.unbox(boxes)
	s.computeBasic()
	s.markAllRows()
	s.setAllMoves()
	limit := s.iters + dualMaxShare*s.m + 100
	s.dOK = false
	kept := s.steepest && s.weightsKept && s.weightsAt == s.iters && !s.repaired && len(s.dualWeights) == s.n+s.m
	steep := kept || (s.steepest && s.slackBasis())
	if !kept {
		s.resetDualWeights()
	} else if err := s.weighNewRows(ctx); err != nil {
		return false, err
	}
	defer func() { s.weightsKept, s.weightsAt = steep, s.iters }()
	// refactor refactorises and marks every row for leavingRow. One that
	// replaces a dependent basic column by a logical leaves that row's
	// steepest-edge weight unknown: Devex goes on from there.
	refactor := func() error {
		if err := s.refactor(ctx); err != nil {
			steep = false // stopped, it left another basis (simplex.refactor)
			return err
		}
		if steep && s.repaired {
			steep = false
			s.resetDualWeights()
		}
		s.markAllRows()
		s.setAllMoves() // a repair moves a column that left
		return nil
	}
	skip := make(map[int]bool)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if (maxIter > 0 && s.iters >= maxIter) || s.iters >= limit {
			return false, nil
		}
		if s.refactorDue() {
			if err := refactor(); err != nil {
				return false, err
			}
			clear(skip)
		}
		r, worst, target := s.leavingRow(skip)
		if r < 0 {
			if !s.fresh {
				if err := refactor(); err != nil {
					return false, err
				}
				clear(skip)
				continue
			}
			// Rows passed over for their small pivots are still
			// infeasible: the primal simplex takes them.
			return len(skip) == 0, nil
		}
		if !s.dOK {
			s.computeReducedCosts()
		}
		clear(s.rho)
		s.btranUnit(r, s.rho)
		s.pivotRow()
		sgn := 1.0 // the leaving variable is above its upper bound
		if target == s.lo[s.head[r]] && s.x[s.head[r]] < target {
			sgn = -1
		}
		s.cand = s.cand[:0]
		for _, j := range s.alphaNZ {
			a := s.alpha[j]
			if math.Abs(a) <= spxZeroTol {
				continue
			}
			// Moving j in a direction it may take must push the
			// leaving variable towards its bound.
			var need uint8
			switch sa := sgn * a; {
			case sa > 0:
				need = moveUp
			case sa < 0:
				need = moveDown
			}
			if s.moves[j]&need == 0 {
				continue
			}
			// A dual blocker: the variable, |d_j|, α_rj and their ratio.
			d := math.Abs(s.d[j])
			s.cand = append(s.cand, blocker{j, d, a, d / math.Abs(a)})
		}
		flips, rest := s.boundFlips(worst)
		// Harris's passes over the rest: the largest dual step that
		// keeps their reduced costs within tolerance, then the largest
		// pivot within it.
		bound := math.Inf(1)
		for _, c := range rest {
			bound = min(bound, (c.bound+spxDualTol)/math.Abs(c.delta))
		}
		q, pivot := -1, 0.0
		for _, c := range rest {
			if c.ratio <= bound && math.Abs(c.delta) > pivot {
				q, pivot = c.pos, math.Abs(c.delta)
			}
		}
		if q >= 0 && pivot < spxPivotTol {
			// Only small pivots in this row: pass it over until the
			// next refactorisation, as the primal simplex passes over
			// columns (rejected). Giving way to the primal simplex
			// here left a warm re-solve with 3,479 violated rows to
			// its phase 1, which ran over 40,000 iterations; passing
			// the row over ends it in 24
			// (TestIncrementalDualSkipsSmallPivotRows).
			skip[s.head[r]] = true
			continue
		}
		if q < 0 {
			// Dual unbounded (primal infeasible under the boxes): the
			// primal simplex decides.
			return false, nil
		}
		if len(flips) > 0 {
			s.flip(flips, sgn)
		}
		clear(s.w)
		s.column(q, s.w)
		if steep {
			if len(s.tau) != s.m {
				s.tau = make([]float64, s.m)
			}
			copy(s.tau, s.rho)
			s.ftran2(s.w, s.tau) // one pass over the file for both
		} else {
			s.ftran(s.w)
		}
		wr := s.w[r]
		if math.Abs(wr-s.alpha[q]) > 1e-6*max(1, math.Abs(wr)) || math.Abs(wr) < spxPivotTol {
			// The row and the column disagree: refactorise, or give
			// way when the factor is fresh.
			if s.fresh {
				return false, nil
			}
			if err := refactor(); err != nil {
				return false, err
			}
			continue
		}
		step := (s.x[s.head[r]] - target) / wr
		s.iters++
		s.x[q] += step
		weight := s.dualWeights[s.head[r]]
		if steep {
			weight = s.rhoNorm()
		}
		for i, wi := range s.w {
			if wi != 0 {
				j := s.head[i]
				s.x[j] -= wi * step
				a := wi / wr
				switch {
				case !steep:
					s.dualWeights[j] = max(s.dualWeights[j], a*a*weight)
				case i != r:
					s.dualWeights[j] = max(s.dualWeights[j]-2*a*s.tau[i]+a*a*weight, steepMin)
				}
				// Row r changes hands below: leavingRow looks at it
				// again. The others are brought up to date here, while
				// their values are at hand.
				if i == r {
					s.markRow(i)
				} else {
					s.noteRow(i, j)
				}
			}
		}
		if steep {
			s.dualWeights[q] = max(weight/(wr*wr), steepMin)
		} else {
			s.dualWeights[q] = max(weight/(wr*wr), 1)
			if weight > devexReset {
				s.resetDualWeights()
				s.markAllRows()
			}
		}
		s.updateReducedCosts(q, r)
		out := s.head[r]
		s.basisChange(q, r, target, nil)
		s.setMoves(out)
	}
}

// moveUp and moveDown mark in s.moves the directions in which a nonbasic
// variable may move: below its upper bound, above its lower bound.
const (
	moveUp uint8 = 1 << iota
	moveDown
)

// setMoves records the directions in which variable j may move. The dual
// phase's ratio test reads them for every column of the pivot row, where
// reading x, lo and up missed the cache; they are set for every variable
// when the phase starts and after each refactorisation, and for each
// variable that a pivot or a bound flip moves.
func (s *simplex) setMoves(j int) {
	var m uint8
	if s.x[j] < s.up[j] {
		m |= moveUp
	}
	if s.x[j] > s.lo[j] {
		m |= moveDown
	}
	s.moves[j] = m
}

// setAllMoves is setMoves for every variable.
func (s *simplex) setAllMoves() {
	if len(s.moves) != s.n+s.m {
		s.moves = make([]uint8, s.n+s.m)
	}
	for j := range s.moves {
		s.setMoves(j)
	}
}

// boundFlips takes the dual blockers in s.cand in the order of their ratio
// |d_j|/|α_rj| and returns those that the dual step passes by flipping
// them to their other bound (the long-step ratio test): a boxed blocker is
// passed while the leaving variable stays infeasible after its flip, slope
// being that infeasibility. rest holds the blockers from the first one not
// passed: that one first, then the others in no particular order (Harris's
// passes over them depend on it only among exact ties). The blockers come
// off a heap rather than a sort: a step passes few of them, and sorting
// them all was an eighth of hierarchical water filling's time in the
// pure-Go build. Both slices are reused by the next call.
func (s *simplex) boundFlips(slope float64) (flips, rest []blocker) {
	c := s.cand
	if len(c) == 0 {
		return nil, nil // no blocker
	}
	// Most steps pass no blocker (its box is infinite, or too wide for
	// the slope): one pass finds the first, and the heap is built only
	// when it can be flipped.
	first := 0
	for i := range c {
		if c[i].ratio < c[first].ratio {
			first = i
		}
	}
	if top := c[first]; len(c) == 1 || !s.passes(top, slope) {
		c[0], c[first] = c[first], c[0]
		return nil, c
	}
	h := s.flipHeap[:0]
	for i := range c {
		h = append(h, i)
	}
	less := func(a, b int) bool { return c[h[a]].ratio < c[h[b]].ratio }
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			m := l
			if r := l + 1; r < len(h) && less(r, l) {
				m = r
			}
			if !less(m, i) {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	flips = s.flips[:0]
	for {
		top := c[h[0]]
		if len(h) == 1 || !s.passes(top, slope) {
			rest = append(s.rest[:0], top)
			for _, i := range h[1:] {
				rest = append(rest, c[i])
			}
			s.flipHeap, s.flips, s.rest = h, flips, rest
			return flips, rest
		}
		slope -= math.Abs(top.delta) * (s.up[top.pos] - s.lo[top.pos])
		flips = append(flips, top)
		h[0] = h[len(h)-1]
		h = h[:len(h)-1]
		down(0)
	}
}

// passes reports whether the dual step may pass blocker c by flipping it
// to its other bound: its box is finite and the leaving variable, whose
// infeasibility is slope, stays infeasible after the flip.
func (s *simplex) passes(c blocker, slope float64) bool {
	width := s.up[c.pos] - s.lo[c.pos]
	return !math.IsInf(width, 1) && slope-math.Abs(c.delta)*width > tol(slope)
}

// flip moves each nonbasic variable in flips to the bound it moves
// towards (up when sgn·α_rj > 0) and updates the basic values.
func (s *simplex) flip(flips []blocker, sgn float64) {
	clear(s.w)
	for _, c := range flips {
		j, to := c.pos, s.lo[c.pos]
		if sgn*c.delta > 0 {
			to = s.up[j]
		}
		delta := to - s.x[j]
		s.x[j] = to
		s.setMoves(j)
		if j >= s.n {
			s.w[j-s.n] += delta
			continue
		}
		for _, e := range s.col(j) {
			s.w[e.row] += e.val * delta
		}
	}
	s.ftran(s.w)
	for i, v := range s.w {
		if v != 0 {
			s.x[s.head[i]] -= v
			s.markRow(i)
		}
	}
}

// leavingRow returns the dual simplex's leaving row: among the basic
// variables beyond a bound by more than its tolerance, the one whose
// infeasibility is largest relative to its row's weight (the first in row
// order among ties), with that infeasibility and the bound; r < 0 when
// none is left outside skip.
//
// Each row's squared infeasibility and weight are kept by row (violSq,
// violWeight) for the rows marked infeasible in s.infeasible (noteRow),
// brought up to date by the pivot's update of the basic values and, here,
// for the rows marked in s.maybeInfeasible (markRow), those whose basic
// value or weight has changed otherwise since; the pivots are those of a
// scan of every row (the same iterations on the OEF, max-min and
// water-filling benchmarks). A scan of every row was about a tenth of the
// pure-Go simplex's time on cooperative OEF with distinct rows; the exact
// noisy 2,000 jobs, whose warm rounds leave few rows infeasible, went from
// 15.4 and 15.5 s to 14.4 and 13.9 s (1,024 users × 10 types, whose cold
// solve keeps most rows infeasible, 27.9 and 28.0 s). Reading the
// infeasible rows' values by row rather than through head, x, lo, up and
// dualWeights took a further 3.6% from 256 users × 10 types
// (docs/benchmarks/lp.md).
func (s *simplex) leavingRow(skip map[int]bool) (r int, worst, target float64) {
	for w, word := range s.maybeInfeasible {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			s.noteRow(i, s.head[i])
		}
		s.maybeInfeasible[w] = 0
	}
	r = -1
	var best float64
	for w, word := range s.infeasible {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			i := w*64 + b
			if s.violSq[i] > best*s.violWeight[i] && (len(skip) == 0 || !skip[s.head[i]]) {
				r, best = i, s.violSq[i]/s.violWeight[i]
			}
		}
	}
	if r < 0 {
		return r, 0, 0
	}
	j := s.head[r]
	if below := s.lo[j] - s.x[j]; below > tol(s.lo[j]) {
		return r, below, s.lo[j]
	}
	return r, s.x[j] - s.up[j], s.up[j]
}

// noteRow records whether row i's basic variable j is infeasible and, if
// it is, its squared infeasibility and weight, for leavingRow.
func (s *simplex) noteRow(i, j int) {
	x, lo, up := s.x[j], s.lo[j], s.up[j]
	w, bit := uint(i)/64, uint64(1)<<(uint(i)%64)
	// Most rows are within their bounds: the tolerances (tol > 0) are
	// worked out only for a value past one.
	switch below, above := lo-x, x-up; {
	case below > 0 && below > tol(lo):
		s.violSq[i] = below * below
	case above > 0 && above > tol(up):
		s.violSq[i] = above * above
	default:
		s.infeasible[w] &^= bit
		return
	}
	s.violWeight[i] = s.dualWeights[j]
	s.infeasible[w] |= bit
}

// markRow marks row i as one whose basic variable's value or weight may
// have changed.
func (s *simplex) markRow(i int) { s.maybeInfeasible[uint(i)/64] |= 1 << (uint(i) % 64) }

// markAllRows marks every row, after the basic values were recomputed or
// the weights reset.
func (s *simplex) markAllRows() {
	n := (s.m + 63) / 64
	if cap(s.maybeInfeasible) < n {
		s.maybeInfeasible = make([]uint64, n)
		s.infeasible = make([]uint64, n)
	}
	s.maybeInfeasible = s.maybeInfeasible[:n]
	s.infeasible = s.infeasible[:n]
	for w := range s.maybeInfeasible {
		s.maybeInfeasible[w] = ^uint64(0)
	}
	if rem := s.m % 64; rem != 0 {
		s.maybeInfeasible[n-1] = 1<<rem - 1
	}
	clear(s.infeasible)
	if len(s.violSq) < s.m {
		s.violSq = make([]float64, s.m)
		s.violWeight = make([]float64, s.m)
	}
}

// makeDualFeasible moves every nonbasic variable to the bound its reduced
// cost favours (in the current basis), boxing those whose favoured bound
// is infinite, and returns the boxes.
func (s *simplex) makeDualFeasible() []box {
	for i, j := range s.head {
		s.cb[i] = s.cost[j]
	}
	copy(s.y, s.cb)
	s.btran(s.y)
	var boxes []box
	for j := range s.n + s.m {
		if s.where[j] >= 0 || s.lo[j] == s.up[j] {
			continue
		}
		d := s.reducedCost(j, false)
		if math.Abs(d) <= spxDualTol*math.Sqrt(s.cnorm[j]) {
			continue
		}
		lo, up := s.lo[j], s.up[j]
		if d > 0 {
			if math.IsInf(lo, -1) {
				boxes = append(boxes, box{j, lo, up})
				s.lo[j] = min(s.x[j], up) - dualBox
				lo = s.lo[j]
			}
			s.x[j] = lo
		} else {
			if math.IsInf(up, 1) {
				boxes = append(boxes, box{j, lo, up})
				s.up[j] = max(s.x[j], lo) + dualBox
				up = s.up[j]
			}
			s.x[j] = up
		}
	}
	return boxes
}

// unbox restores the bounds that makeDualFeasible boxed; a nonbasic
// variable left at a box stays where it is, inside its true bounds, for
// the primal simplex to move.
func (s *simplex) unbox(boxes []box) {
	for _, b := range boxes {
		s.lo[b.j], s.up[b.j] = b.lo, b.up
	}
}

// slackBasis reports whether every basic variable is a logical, where the
// dual steepest-edge weights ‖eᵢᵀB⁻¹‖² are all exactly 1.
func (s *simplex) slackBasis() bool {
	for _, v := range s.head {
		if v < s.n {
			return false
		}
	}
	return true
}

// rhoNorm returns ‖ρ‖², the leaving row's exact dual steepest-edge weight
// (pivotRow listed ρ's nonzeros).
func (s *simplex) rhoNorm() float64 {
	var norm float64
	for _, i := range s.rhoNZ {
		norm += s.rho[i] * s.rho[i]
	}
	return norm
}

// weighNewRows sets the steepest-edge weight of each row added since the
// weights were kept (weight 0), whose logical is basic, from a factor just
// rebuilt. Such a row r is off the bump, so ρᵣ = B⁻ᵀeᵣ is 1 on r and, on
// the bump, −B₁₁⁻ᵀdᵣ, where dᵣ holds r's entries in the bump's basic
// columns (simplex.btranUnit): a solve with B₁₁'s factor, which the file
// holds alone, for up to maxBlockLanes rows at a time.
func (s *simplex) weighNewRows(ctx context.Context) error {
	var rows []int
	for i, j := range s.head {
		if j == s.n+i && !s.inBump[i] && s.dualWeights[j] == 0 {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	lanes := min(maxBlockLanes, len(rows))
	v := make([]float64, s.m*lanes)
	for len(rows) > 0 {
		// Weighing 15,000 rows took 0.7 s (the noisy 2,000 jobs of
		// docs/benchmarks/oef.md): a deadline is checked between blocks.
		if err := ctx.Err(); err != nil {
			return err
		}
		block := rows[:min(lanes, len(rows))]
		rows = rows[len(block):]
		for l, i := range block {
			for _, e := range s.bumpEntries(i) {
				v[e.row*lanes+l] -= e.val
			}
		}
		s.eta.btranBlock(v, lanes)
		var w [maxBlockLanes]float64
		for _, p := range s.bumpRows {
			x := v[p*lanes : (p+1)*lanes]
			for l, a := range x {
				w[l] += a * a
			}
			clear(x)
		}
		for l, i := range block {
			s.dualWeights[s.n+i] = 1 + w[l]
		}
	}
	return nil
}

// resetDualWeights sets every row weight of the dual phase's pricing to 1:
// a new reference framework for Devex, and the exact steepest-edge weights
// of a slack basis. The weights are kept per variable, so that a
// refactorisation, which may move basic variables to other positions,
// keeps them.
func (s *simplex) resetDualWeights() {
	if len(s.dualWeights) != s.n+s.m {
		s.dualWeights = make([]float64, s.n+s.m)
	}
	for j := range s.dualWeights {
		s.dualWeights[j] = 1
	}
}
