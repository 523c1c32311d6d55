package lp

// Pricing of the pure-Go simplex: the pivot row, the reduced costs, and the
// choice of the entering variable.
//
// Each basis change needs the pivot row α_j = ρᵀa_j (ρ = B⁻ᵀe_r) over the
// nonbasic variables: Devex's weights grow with it, and in phase 2 the
// reduced costs are updated along it (d_j −= (d_q/α_q)·α_j) instead of being
// recomputed from y = B⁻ᵀc_B over every column. ρ is often sparse (about 20
// nonzeros in 2,000 rows for MaxTotalThroughput's LP), so the row is summed
// over a row-wise copy of A, touching only the rows where ρ is nonzero; a
// dense ρ is summed column by column instead. Pricing every column in every
// iteration (a btran and two passes over A) was two thirds of
// MaxTotalThroughput's pure-Go time.
//
// Even with the reduced costs at hand, scanning every column for the best
// Devex score cost as much again. Phase 2 therefore keeps a short list of
// candidates: a full scan keeps the priceList best scores and the best
// score left out (threshold); a basis change alters the scores of the
// pivot row's variables and of the leaving one only, and those rising
// above the threshold join the list. While the list's best is at least the
// threshold it is a best score of all (the one a full scan would choose,
// but among exact ties with the threshold); otherwise, or when the
// weights, the reduced costs or nonbasic values change in other ways, the
// next price scans in full.

// rowwiseShare is the fraction of A's nonzeros above which the rows that ρ
// touches are summed column by column instead: the row-wise sum scatters,
// the column-wise one streams.
const rowwiseShare = 0.5

// buildRows makes the row-wise copy of A when it is missing or stale (rows
// added since): row i is rowEnt[rowStart[i]:rowStart[i+1]], each entry
// naming its column in row, columns in increasing order.
func (s *simplex) buildRows() {
	if len(s.rowStart) == s.m+1 {
		return
	}
	s.rowStart = make([]int, s.m+1)
	for _, e := range s.colEnt {
		s.rowStart[e.row+1]++
	}
	for i := range s.m {
		s.rowStart[i+1] += s.rowStart[i]
	}
	s.rowEnt = make([]spxEntry, len(s.colEnt))
	next := append([]int(nil), s.rowStart[:s.m]...)
	for j := range s.n {
		for _, e := range s.col(j) {
			s.rowEnt[next[e.row]] = spxEntry{row: j, val: e.val}
			next[e.row]++
		}
	}
}

// pivotRow sets s.alpha[j] = ρᵀa_j, with ρ in s.rho, for the nonbasic
// variables j, and lists in s.alphaNZ those where it may be nonzero; every
// other entry of s.alpha is zero. Both sums add a column's terms in
// increasing row order, so the two ways give the same values.
func (s *simplex) pivotRow() {
	if len(s.alpha) != s.n+s.m {
		s.alpha = make([]float64, s.n+s.m)
		s.inRow = make([]bool, s.n+s.m)
		s.alphaNZ = s.alphaNZ[:0]
	}
	for _, j := range s.alphaNZ {
		s.alpha[j] = 0
	}
	s.alphaNZ = s.alphaNZ[:0]
	s.buildRows()
	s.rhoNZ = s.rhoNZ[:0]
	work := 0
	for i, v := range s.rho {
		if v != 0 {
			s.rhoNZ = append(s.rhoNZ, i)
			work += s.rowStart[i+1] - s.rowStart[i]
		}
	}
	if float64(work) > rowwiseShare*float64(len(s.colEnt)) {
		for j := range s.n {
			if s.where[j] >= 0 {
				continue
			}
			var a float64
			for _, e := range s.col(j) {
				a += e.val * s.rho[e.row]
			}
			if a != 0 {
				s.alpha[j] = a
				s.alphaNZ = append(s.alphaNZ, j)
			}
		}
	} else {
		if !s.basicOK {
			s.syncBasic()
		} else if s.checkBasic {
			s.verifyBasic()
		}
		for _, i := range s.rhoNZ {
			r := s.rho[i]
			for _, e := range s.rowEnt[s.rowStart[i]:s.rowStart[i+1]] {
				j := e.row
				if s.isBasic[j] {
					continue
				}
				if !s.inRow[j] {
					s.inRow[j] = true
					s.alphaNZ = append(s.alphaNZ, j)
				}
				s.alpha[j] += e.val * r
			}
		}
		for _, j := range s.alphaNZ {
			s.inRow[j] = false
		}
	}
	for _, i := range s.rhoNZ {
		if j := s.n + i; s.where[j] < 0 {
			s.alpha[j] = s.rho[i]
			s.alphaNZ = append(s.alphaNZ, j)
		}
	}
}

// verifyBasic counts a check of isBasic against where (for tests, when
// checkBasic is set), and each variable where they disagree.
func (s *simplex) verifyBasic() {
	s.basicChecks++
	for j, p := range s.where {
		if s.isBasic[j] != (p >= 0) {
			s.basicWrong++
		}
	}
}

// syncBasic sets isBasic from where. Every change of where but a pivot's
// (basisChange, which keeps isBasic) clears basicOK.
func (s *simplex) syncBasic() {
	if len(s.isBasic) != len(s.where) {
		s.isBasic = make([]bool, len(s.where))
	}
	for j, p := range s.where {
		s.isBasic[j] = p >= 0
	}
	s.basicOK = true
}

// computeReducedCosts sets s.y = B⁻ᵀc_B for the objective and s.d to the
// reduced costs of every nonbasic variable (0 for basic ones).
func (s *simplex) computeReducedCosts() {
	if len(s.d) != s.n+s.m {
		s.d = make([]float64, s.n+s.m)
	}
	for i, j := range s.head {
		s.cb[i] = s.cost[j]
	}
	copy(s.y, s.cb)
	s.btran(s.y)
	for j := range s.n + s.m {
		if s.where[j] >= 0 {
			s.d[j] = 0
			continue
		}
		s.d[j] = s.reducedCost(j, false)
	}
	s.dOK = true
	s.listOK = false
}

// updateReducedCosts moves the reduced costs to the basis in which q enters
// at position r, given the pivot row (pivotRow) of the basis before and
// α_q = s.w[r] from the column: d_j −= θ·α_j with θ = d_q/α_q, which zeroes
// d_q; the leaving variable, whose α is 1, gets −θ. s.y is left stale.
func (s *simplex) updateReducedCosts(q, r int) {
	theta := s.d[q] / s.w[r]
	for _, j := range s.alphaNZ {
		s.d[j] -= theta * s.alpha[j]
	}
	s.d[q] = 0
	s.d[s.head[r]] = -theta
}

const (
	// priceList is how many of a full scan's best candidates phase 2's
	// pricing keeps.
	priceList = 64
	// priceListMax is the length beyond which the list is rebuilt by a
	// full scan.
	priceListMax = 4 * priceList
)

// scored is a pricing candidate.
type scored struct {
	j     int
	score float64
}

// priceScore returns the Devex score of nonbasic variable j with reduced
// cost d, and the direction it would move (+1 up, -1 down), or 0, 0 when
// it does not improve: it sits at the bound that d pushes it past, or d is
// within the dual tolerance.
func (s *simplex) priceScore(j int, d float64) (score, dir float64) {
	switch {
	case d < 0 && s.x[j] < s.up[j]:
		dir = 1
	case d > 0 && s.x[j] > s.lo[j]:
		dir = -1
	default:
		return 0, 0
	}
	if d*d/s.cnorm[j] <= spxDualTol*spxDualTol {
		return 0, 0
	}
	return d * d / s.devex[j], dir
}

// price chooses the entering variable and its direction (+1 up, -1 down),
// or q < 0 when no nonbasic variable improves the phase's measure: Devex
// pricing, the first best score by index, or Bland's rule (the smallest
// index) when bland is set. Phase 2 reads the reduced costs s.d, from its
// candidate list when it can; phase 1 computes them from s.y.
func (s *simplex) price(phase1, bland bool) (q int, dir float64) {
	if !phase1 && !bland && s.listOK {
		q, dir, best := -1, 0.0, 0.0
		for _, j := range s.list {
			if s.where[j] >= 0 || s.rejected[j] == s.rejectEpoch {
				continue
			}
			sc, dj := s.priceScore(j, s.d[j])
			if sc > best || (sc == best && sc > 0 && j < q) {
				q, dir, best = j, dj, sc
			}
		}
		if q >= 0 && best >= s.threshold {
			return q, dir
		}
	}
	return s.priceAll(phase1, bland)
}

// priceAll is price over every column; in phase 2 without bland it
// rebuilds the candidate list. The list ignores rejections, which end
// with the next basis change.
func (s *simplex) priceAll(phase1, bland bool) (q int, dir float64) {
	keep := !phase1 && !bland
	if keep {
		if len(s.inList) != s.n+s.m {
			s.inList = make([]bool, s.n+s.m)
		}
		for _, j := range s.list {
			s.inList[j] = false
		}
		s.list = s.list[:0]
		s.topHeap = s.topHeap[:0]
		s.threshold = 0
	}
	q = -1
	var best float64
	for j := range s.n + s.m {
		if s.where[j] >= 0 {
			continue
		}
		var d float64
		if phase1 {
			d = s.reducedCost(j, true)
		} else {
			d = s.d[j]
		}
		sc, dj := s.priceScore(j, d)
		if sc == 0 {
			continue
		}
		if keep {
			s.keepTop(j, sc)
		}
		if s.rejected[j] == s.rejectEpoch {
			continue
		}
		if bland {
			return j, dj
		}
		if sc > best {
			q, dir, best = j, dj, sc
		}
	}
	if keep {
		for _, c := range s.topHeap {
			s.list = append(s.list, c.j)
			s.inList[c.j] = true
		}
		s.listOK = true
	}
	return q, dir
}

// keepTop offers j with score sc to the min-heap of the priceList best
// scores; whatever the heap turns away raises the threshold.
func (s *simplex) keepTop(j int, sc float64) {
	h := s.topHeap
	if len(h) == priceList {
		if sc <= h[0].score {
			s.threshold = max(s.threshold, sc)
			return
		}
		s.threshold = max(s.threshold, h[0].score)
		h[0] = scored{j, sc}
	} else {
		h = append(h, scored{j, sc})
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p].score <= h[i].score {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		s.topHeap = h
		return
	}
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && h[r].score < h[l].score {
			m = r
		}
		if h[i].score <= h[m].score {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// noteRepriced adds to the candidate list the variables whose score a basis
// change may have raised above the threshold: those of the pivot row
// (alphaNZ) and out, the variable that left.
func (s *simplex) noteRepriced(out int) {
	if !s.listOK || !s.dOK {
		s.listOK = false
		return
	}
	note := func(j int) {
		if s.inList[j] || s.where[j] >= 0 {
			return
		}
		if sc, _ := s.priceScore(j, s.d[j]); sc > s.threshold {
			s.inList[j] = true
			s.list = append(s.list, j)
		}
	}
	for _, j := range s.alphaNZ {
		note(j)
	}
	note(out)
	if len(s.list) > priceListMax {
		s.listOK = false
	}
}
