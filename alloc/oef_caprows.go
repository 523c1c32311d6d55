package alloc

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// capLadders is the structure that demand caps give cooperative OEF's envy
// rows: classes with the same speedup vector (one job type, split by cap
// per unit of weight) form a ladder, sorted by effective cap, and a few of
// the capped envy rows imply all others (see impliedEnvy).
type capLadders struct {
	ladder [][]int   // ladder[t]: the classes of job type t, by effective cap, then class
	typ    []int     // typ[c]: c's job type
	pos    []int     // pos[c]: c's place in ladder[typ[c]]
	ecap   []float64 // ecap[c]: c's effective cap, ĉ_c
	basis  [][]int   // basis[c]: the classes d, ascending, with impliedEnvy(c, d)
	// below[t][d] is the place in ladder[t] of the last class whose
	// effective cap is at most d's, -1 if none.
	below [][]int
}

// capLadders returns the ladders of q's classes, or nil without caps.
//
// Cost: O(C² + C·T·log C + C·K) for C classes of T job types over K GPU
// types.
func (q *oefLP) capLadders() *capLadders {
	if q.cap == nil {
		return nil
	}
	C := len(q.s)
	types := groupRows(C, func(c int) []float64 { return q.s[c] })
	l := &capLadders{
		ladder: make([][]int, types.numClasses()),
		typ:    types.of,
		pos:    make([]int, C),
		ecap:   make([]float64, C),
		below:  make([][]int, types.numClasses()),
	}
	for c := range C {
		l.ecap[c] = q.effectiveCap(c)
	}
	for c, t := range types.of {
		l.ladder[t] = append(l.ladder[t], c)
	}
	for t, lad := range l.ladder {
		slices.SortFunc(lad, func(a, b int) int { return cmp.Or(cmp.Compare(l.ecap[a], l.ecap[b]), cmp.Compare(a, b)) })
		for i, c := range lad {
			l.pos[c] = i
		}
		l.below[t] = make([]int, C)
		for d := range C {
			l.below[t][d] = sortSearch(len(lad), func(i int) bool { return l.ecap[lad[i]] > l.ecap[d] }) - 1
		}
	}
	l.basis = make([][]int, C)
	for c := range C {
		for d := range C {
			if d != c && l.impliedEnvy(c, d) {
				l.basis[c] = append(l.basis[c], d)
			}
		}
	}
	return l
}

// sortSearch is sort.Search: the least i in [0, n) with f(i), or n.
func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f(m) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// impliedEnvy reports whether class c's envy row against d is one of the
// rows that imply all others (the basis, below): rows between neighbours
// on a ladder, and across job types the rows from the one or two classes
// of c's ladder whose caps bracket d's.
//
// Why they imply all (ĉ for effective caps, v_e = s·y_e for the classes e
// of one ladder, which share s). A row reads s_c·y_c ≥ min(1, ĉ_c/ĉ_d)·s_c·y_d.
// Lemma: if c and c' share s and ĉ_c' lies between ĉ_c and ĉ_d
// (inclusive), rows (c, c') and (c', d) imply (c, d). If ĉ_c ≤ ĉ_c' ≤ ĉ_d,
// v_c ≥ (ĉ_c/ĉ_c')·v_c' ≥ (ĉ_c/ĉ_c')(ĉ_c'/ĉ_d)·s·y_d = (ĉ_c/ĉ_d)·s·y_d; if
// ĉ_d ≤ ĉ_c' ≤ ĉ_c, v_c ≥ v_c' ≥ s·y_d; both factors are non-negative, as
// s, y ≥ 0. (A zero effective cap makes a row trivial: r = 0, or y_d = 0.)
// Along a ladder, sorted by cap, the lemma chains the rows between
// neighbours into every row within the ladder. Across types, let p be the
// last class of c's ladder with cap at most ĉ_d: every class at or below p
// reaches p by the chain with p between it and d, every class above p
// reaches p+1 likewise, so rows (p, d) and (p+1, d) imply the rest; where
// ĉ_p = ĉ_d, p is between d and every class of the ladder, and (p, d)
// alone does.
// So at most 2(C−T) rows within ladders and 2·T·C across them, against
// C·(C−1) in all; with every job type at every cap, only the rows between
// classes of equal caps are left across types.
//
// A nil *capLadders (no caps) keeps every row.
func (l *capLadders) impliedEnvy(c, d int) bool {
	if l == nil {
		return true
	}
	t := l.typ[c]
	if t == l.typ[d] {
		return l.pos[c]-l.pos[d] == 1 || l.pos[d]-l.pos[c] == 1
	}
	p := l.below[t][d]
	if p >= 0 && l.ecap[l.ladder[t][p]] == l.ecap[d] {
		return l.pos[c] == p
	}
	return l.pos[c] == p || l.pos[c] == p+1
}

// jobTypeSeedPays reports whether jobTypeSeed's extra LP, over T job
// types, is worth solving for C classes: when caps split each job type
// into two classes or more on average.
func jobTypeSeedPays(T, C int) bool { return 2*T <= C }

// jobTypeSeed returns the seed of capped cooperative OEF where classes
// share job types: it solves cooperative OEF without caps over the job
// types (each ladder merged into one class of their summed weight, a
// problem T/C the size), and returns, for each envy row of job type t
// against t' that carries a multiplier there, the basis rows from the
// classes of t's ladder against those of t' in that direction only (in
// both, unless leanRows), every sharing floor, the cap rows of classes
// whose cap their job type's bundle there exceeds, and a mask holding each
// class's columns at zero outside that bundle. If that solve fails it
// returns the near-neighbour seed.
// The job types' LP starts from no envy rows: with as few classes as job
// types the near-neighbour seed is most of its model (570 of 650 rows at
// 26 job types × 10 types), and its cold solve took 5.5 ms where five
// rounds from no rows take 2.1 ms; the capped model then took 45 to 47 ms
// in all against 33 to 36 ms (six instances: 51 ms geometric mean against
// 45 to 49 ms), as its multipliers, among the many optimal ones of that
// degenerate LP, seed the capped model better.
//
// Why: the capped optimum keeps much of the uncapped one's shape. At
// 1,000 users × 10 GPU types of 26 job types with 1 to 4 jobs each (156
// classes; BenchmarkOEFCapped), 144 of the 196 rows with multipliers at
// the capped optimum are in this seed of 333 rows, and classes keep to
// their job type's GPU types (about 30 of the 1,400 held columns price
// in). A multiplier on t's row against t' says that t's envy of t' binds,
// not the reverse: seeding the reverse rows as well, and the rows between
// neighbours on each ladder (which the optimum needs in 21 of 130 cases),
// grew the model to 777 rows, and the pure-Go simplex took 87 ms where
// this seed takes 42 ms (both without dropping rows; 6 instances: 124 ms
// geometric mean against 56 ms with the other row-generation changes of
// violatedEnvy). The floors stay in: without them the relaxations stray,
// while all but 4 of 156 are idle at the optimum. Columns that the duals
// price in are freed (attractiveColumns), so the result is exact.
func (q *oefLP) jobTypeSeed(ctx context.Context, set *lp.Settings, l *capLadders) ([]envyPair, *columnMask, error) {
	u := &oefLP{s: make([][]float64, len(l.ladder)), w: make([]float64, len(l.ladder)), count: q.count, unseeded: true}
	for t, lad := range l.ladder {
		u.s[t] = q.s[lad[0]]
		for _, c := range lad {
			u.w[t] += q.w[c]
		}
	}
	yu, d, err := u.coopRowGen(ctx, set)
	if err != nil {
		if ctx.Err() != nil {
			if stop := (*coopStop)(nil); errors.As(err, &stop) {
				err = stop.err // u's classes are job types, not q's
			}
			return nil, nil, err
		}
		near, err := q.neighbourEnvyRows(ctx, neighboursPerClass(len(q.count)), nil)
		return append(q.sideRows(), near...), nil, err
	}
	var rows []envyPair
	seen := make(map[envyPair]bool)
	add := func(r envyPair) {
		// Flows of t against t' and of t' against t, both seeded in both
		// directions, would give each row twice.
		if !seen[r] && l.impliedEnvy(r[0], r[1]) {
			seen[r] = true
			rows = append(rows, r)
		}
	}
	lean := leanRows(set)
	for _, f := range d.flows {
		for _, a := range l.ladder[f.c] {
			for _, b := range l.ladder[f.d] {
				add(envyPair{a, b})
				if !lean {
					add(envyPair{b, a})
				}
			}
		}
	}
	cols := &columnMask{held: make([][]bool, len(q.s))}
	for c := range q.s {
		bundle := yu[l.typ[c]]
		if q.floor[c] > 0 {
			rows = append(rows, envyPair{c, floorRow})
		}
		if sum(bundle) > q.cap[c] {
			rows = append(rows, envyPair{c, capRow})
		}
		cols.held[c] = make([]bool, len(q.count))
		if sum(bundle) <= 0 {
			continue // nothing to go by: every column free
		}
		for k, x := range bundle {
			if x <= 0 {
				cols.held[c][k] = true
				cols.n++
			}
		}
	}
	return rows, cols, nil
}

// columnMask marks the bundle columns y_ck that row generation holds at
// zero (bounds [0, 0]) until their reduced cost says they would raise the
// objective. A nil *columnMask holds none.
type columnMask struct {
	held [][]bool // held[c][k]: y_ck is held at zero
	n    int      // the number held
}

// any reports whether m holds a column.
func (m *columnMask) any() bool { return m != nil && m.n > 0 }

// apply holds m's columns at zero in in, whose bundles are y.
func (m *columnMask) apply(in *lp.Incremental, y lp.Grid) {
	if !m.any() {
		return
	}
	for c, row := range m.held {
		for k, h := range row {
			if h {
				in.SetVarBounds(y.At(c, k), 0, 0)
			}
		}
	}
}

// release frees the columns cols (pairs c, k) in m and in in.
func (m *columnMask) release(in *lp.Incremental, y lp.Grid, cols [][2]int) {
	for _, ck := range cols {
		c, k := ck[0], ck[1]
		if m.held[c][k] {
			m.held[c][k] = false
			m.n--
			in.SetVarBounds(y.At(c, k), 0, lp.Inf)
		}
	}
}

// releaseAll frees every column m holds.
func (m *columnMask) releaseAll(in *lp.Incremental, y lp.Grid) {
	for c, row := range m.held {
		for k, h := range row {
			if h {
				m.release(in, y, [][2]int{{c, k}})
			}
		}
	}
}

// colPriceTol is the shortfall of a held column's dual constraint,
// relative to max(1, w_c·s_ck), above which the column is freed: well
// below certGapTol's share, so that a finished model's duals certify it,
// and above the ~1e-12 noise of duals computed from an optimal basis.
const colPriceTol = 1e-9

// attractiveColumns returns the columns m holds whose dual constraint d
// breaks by more than colPriceTol (dualShortfall): those that would enter
// the basis of the LP with every column free. Without duals it returns
// every column m holds.
func (q *oefLP) attractiveColumns(m *columnMask, d coopDual) [][2]int {
	if !m.any() {
		return nil
	}
	var out [][2]int
	if d.price == nil {
		for c, row := range m.held {
			for k, h := range row {
				if h {
					out = append(out, [2]int{c, k})
				}
			}
		}
		return out
	}
	for c, short := range q.dualShortfall(d) {
		for k, sh := range short {
			if m.held[c][k] && sh > colPriceTol*max(1, q.w[c]*q.s[c][k]) {
				out = append(out, [2]int{c, k})
			}
		}
	}
	return out
}
