package lp

import "math"

// etaFile is a matrix inverse in product form, that of the pure-Go
// simplex's bump B₁₁ (simplex.ftran): B₁₁ = E_1 E_2 … E_k, each E an
// identity matrix whose column piv is replaced by a vector w. Solving
// with B₁₁ applies the inverses in order (FTRAN), solving with B₁₁ᵀ
// applies their transposes in reverse (BTRAN); each costs O(k + total
// nonzeros). A refactorisation starts the file again with the LU factors
// as etas (L's columns, then U's last first: see simplex.refactor), and
// each later pivot appends the eta of its column, so the same file holds
// the factor and the updates.
//
// A row eta (row[k]) is an identity matrix whose row piv is replaced: 1 on
// the pivot and, off it, the entries' values. FTRAN then subtracts from
// v[piv] the entries' dot product with v, BTRAN subtracts v[piv] times the
// entries from v: the transposes of a column eta's steps (simplex.grow).
type etaFile struct {
	piv   []int     // the pivot row of each eta
	pval  []float64 // w[piv]
	row   []bool    // a row eta
	start []int     // eta k's off-pivot entries are idx/val[start[k]:start[k+1]]
	idx   []int
	val   []float64
}

// etaDropTol is the magnitude below which an off-pivot entry of an eta is
// dropped: it changes no result by more than roundoff.
const etaDropTol = 1e-14

func (f *etaFile) reset() {
	f.piv, f.pval, f.row, f.idx, f.val = f.piv[:0], f.pval[:0], f.row[:0], f.idx[:0], f.val[:0]
	f.start = append(f.start[:0], 0)
}

func (f *etaFile) len() int { return len(f.piv) }

func (f *etaFile) nnz() int { return len(f.idx) }

// push appends the eta with column w pivoting on row r, restricted to the
// rows where keep is true; nz lists the positions of w's nonzeros, or is
// nil when w is to be scanned in full.
func (f *etaFile) push(r int, w []float64, nz []int, keep []bool) {
	f.piv = append(f.piv, r)
	f.pval = append(f.pval, w[r])
	f.row = append(f.row, false)
	add := func(i int) {
		if v := w[i]; i != r && keep[i] && math.Abs(v) > etaDropTol {
			f.idx = append(f.idx, i)
			f.val = append(f.val, v)
		}
	}
	if nz == nil {
		for i := range w {
			add(i)
		}
	} else {
		for _, i := range nz {
			add(i)
		}
	}
	f.start = append(f.start, len(f.idx))
}

// pushLColumn appends the eta of L's column for a refactorisation pivot on
// row r: 1 on r and, off it, w's entries on the rows still free (free[i])
// divided by w[r]. nz lists w's nonzeros. It appends nothing, and returns
// false, when there are none, the eta being the identity.
func (f *etaFile) pushLColumn(r int, w []float64, nz []int, free []bool) bool {
	n := len(f.idx)
	for _, i := range nz {
		if l := w[i] / w[r]; free[i] && i != r && math.Abs(l) > etaDropTol {
			f.idx = append(f.idx, i)
			f.val = append(f.val, l)
		}
	}
	return f.close(r, 1, n)
}

// pushUColumn appends the eta of U's column for a refactorisation pivot on
// row r: w[r] on r and, off it, w's entries on the rows already pivoted
// (free[i] false). nz lists w's nonzeros. It appends nothing when the eta
// is the identity.
func (f *etaFile) pushUColumn(r int, w []float64, nz []int, free []bool) {
	n := len(f.idx)
	for _, i := range nz {
		if v := w[i]; !free[i] && math.Abs(v) > etaDropTol {
			f.idx = append(f.idx, i)
			f.val = append(f.val, v)
		}
	}
	f.close(r, w[r], n)
}

// appendReversed appends u's etas to f, last first: U⁻¹ applies U's
// columns from the last pivot back (back substitution).
func (f *etaFile) appendReversed(u *etaFile) {
	for k := u.len() - 1; k >= 0; k-- {
		f.piv = append(f.piv, u.piv[k])
		f.pval = append(f.pval, u.pval[k])
		f.row = append(f.row, false)
		f.idx = append(f.idx, u.idx[u.start[k]:u.start[k+1]]...)
		f.val = append(f.val, u.val[u.start[k]:u.start[k+1]]...)
		f.start = append(f.start, len(f.idx))
	}
}

// pushRow appends the row eta pivoting on row r with the entries in ent
// (rows and values); it appends nothing when there are none.
func (f *etaFile) pushRow(r int, ent []spxEntry) {
	if len(ent) == 0 {
		return
	}
	for _, e := range ent {
		f.idx = append(f.idx, e.row)
		f.val = append(f.val, e.val)
	}
	f.piv = append(f.piv, r)
	f.pval = append(f.pval, 1)
	f.row = append(f.row, true)
	f.start = append(f.start, len(f.idx))
}

// close ends the eta pivoting on row r with value pval whose off-pivot
// entries were appended from idx[from]; it drops them, and reports false,
// when the eta is the identity.
func (f *etaFile) close(r int, pval float64, from int) bool {
	if len(f.idx) == from && pval == 1 {
		return false
	}
	f.piv = append(f.piv, r)
	f.pval = append(f.pval, pval)
	f.row = append(f.row, false)
	f.start = append(f.start, len(f.idx))
	return true
}

// scalePivot divides v's entry at eta k's pivot by the pivot value and
// returns it: the multiple of eta k's column to subtract from v.
func (f *etaFile) scalePivot(k int, v []float64) float64 {
	r := f.piv[k]
	if v[r] == 0 {
		return 0
	}
	v[r] /= f.pval[k]
	return v[r]
}

// rowStep applies row eta k to v in FTRAN.
func (f *etaFile) rowStep(k int, v []float64) {
	r := f.piv[k]
	s := v[r]
	for p := f.start[k]; p < f.start[k+1]; p++ {
		s -= f.val[p] * v[f.idx[p]]
	}
	v[r] = s
}

// ftran overwrites v with the solution of the product of the etas.
func (f *etaFile) ftran(v []float64) {
	for k := range f.piv {
		if f.row[k] {
			f.rowStep(k, v)
			continue
		}
		if a := f.scalePivot(k, v); a != 0 {
			f.subtract(k, v, a)
		}
	}
}

// subtract takes a times eta k's off-pivot entries from v.
func (f *etaFile) subtract(k int, v []float64, a float64) {
	val := f.val[f.start[k]:f.start[k+1]]
	for p, i := range f.idx[f.start[k]:f.start[k+1]] {
		v[i] -= val[p] * a
	}
}

// ftran2 is ftran for v and u in one pass over the file.
func (f *etaFile) ftran2(v, u []float64) {
	for k, r := range f.piv {
		if f.row[k] {
			f.rowStep(k, v)
			f.rowStep(k, u)
			continue
		}
		if v[r] == 0 && u[r] == 0 {
			continue
		}
		// One of the two is often zero on the pivot (the entering
		// column is sparser than ρ): the loop then leaves it alone.
		a, b := f.scalePivot(k, v), f.scalePivot(k, u)
		switch {
		case a != 0 && b != 0:
			idx, val := f.idx[f.start[k]:f.start[k+1]], f.val[f.start[k]:f.start[k+1]]
			for p, i := range idx {
				v[i] -= val[p] * a
				u[i] -= val[p] * b
			}
		case a != 0:
			f.subtract(k, v, a)
		default:
			f.subtract(k, u, b)
		}
	}
}

// btran overwrites v with the solution of the transposed product of the
// etas.
func (f *etaFile) btran(v []float64) {
	for k := len(f.piv) - 1; k >= 0; k-- {
		r := f.piv[k]
		if f.row[k] {
			if a := v[r]; a != 0 {
				for p := f.start[k]; p < f.start[k+1]; p++ {
					v[f.idx[p]] -= f.val[p] * a
				}
			}
			continue
		}
		s := v[r]
		for p := f.start[k]; p < f.start[k+1]; p++ {
			s -= f.val[p] * v[f.idx[p]]
		}
		v[r] = s / f.pval[k]
	}
}

// maxBlockLanes is the most vectors btranBlock solves at once. A pass over
// the etas costs about as much for 8 vectors as for 32, as it is the
// reading of the etas that takes the time: weighing the rows added in the
// rounds of the noisy 2,000 jobs of docs/benchmarks/oef.md took 2.4 s with
// 8 lanes, 1.4 s with 16 and 1.15 s with 32.
const maxBlockLanes = 32

// btranBlock is btran for lanes ≤ maxBlockLanes vectors at once, in a file
// of column etas only: v holds them interleaved, the entry of row i of
// vector l at v[i*lanes+l]. One pass over the etas for all of them reads
// each entry once instead of once a vector.
func (f *etaFile) btranBlock(v []float64, lanes int) {
	for k := len(f.piv) - 1; k >= 0; k-- {
		// The pivot's lanes are summed in place: an eta holds no entry
		// on its own pivot row, so they overlap none of the others.
		r := f.piv[k] * lanes
		s := v[r : r+lanes : r+lanes]
		for p := f.start[k]; p < f.start[k+1]; p++ {
			a, i := f.val[p], f.idx[p]*lanes
			x := v[i : i+lanes : i+lanes]
			x = x[:len(s)]
			// Four lanes a step: a quarter less time than one a step
			// (a scratch benchmark of this loop alone), the same sums.
			l := 0
			for ; l+4 <= len(s); l += 4 {
				ss, xx := s[l:l+4:l+4], x[l:l+4:l+4]
				ss[0] -= a * xx[0]
				ss[1] -= a * xx[1]
				ss[2] -= a * xx[2]
				ss[3] -= a * xx[3]
			}
			for ; l < len(s); l++ {
				s[l] -= a * x[l]
			}
		}
		d := 1 / f.pval[k]
		for l := range s {
			s[l] *= d
		}
	}
}

// sparseFtran is ftran for a sparse v during refactorisation, where every
// row is the pivot of at most one eta (etaOf[r], or -1): it applies only the
// etas whose pivot entry is nonzero, in order, found with a heap. nz lists
// v's nonzero positions on entry and is returned extended with those that
// fill in; mark must be false everywhere on entry and is left true on the
// returned positions.
func (f *etaFile) sparseFtran(v []float64, nz []int, mark []bool, etaOf []int, h *intHeap) []int {
	h.reset()
	for _, i := range nz {
		mark[i] = true
		if k := etaOf[i]; k >= 0 {
			h.push(k)
		}
	}
	last := -1
	for h.len() > 0 {
		k := h.pop()
		if k == last {
			continue // pushed twice
		}
		last = k
		a := f.scalePivot(k, v)
		if a == 0 {
			continue
		}
		for p := f.start[k]; p < f.start[k+1]; p++ {
			i := f.idx[p]
			if !mark[i] {
				mark[i] = true
				nz = append(nz, i)
				// An eta before k whose pivot fills in now was a no-op
				// when its turn came.
				if e := etaOf[i]; e > k {
					h.push(e)
				}
			}
			v[i] -= f.val[p] * a
		}
	}
	return nz
}

// intHeap is a binary min-heap of ints.
type intHeap struct{ a []int }

func (h *intHeap) reset()   { h.a = h.a[:0] }
func (h *intHeap) len() int { return len(h.a) }

func (h *intHeap) push(x int) {
	h.a = append(h.a, x)
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.a[p] <= x {
			break
		}
		h.a[i] = h.a[p]
		i = p
	}
	h.a[i] = x
}

func (h *intHeap) pop() int {
	top := h.a[0]
	n := len(h.a) - 1
	x := h.a[n]
	h.a = h.a[:n]
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.a[c+1] < h.a[c] {
			c++
		}
		if x <= h.a[c] {
			break
		}
		h.a[i] = h.a[c]
		i = c
	}
	h.a[i] = x
	return top
}
