package auction

import (
	"math"
	"slices"
	"time"

	"github.com/gpufair/gpufair/ftf"
)

// search is the exact product-maximising search over bid tables: depth-first
// branch and bound on Σ log v, bids in a fixed order, each node bounded by
// the Lagrangian relaxation of the per-server capacities (bound.go).
//
// Allocations are compared lexicographically: first p, the number of bids
// with a positive value (a bid with RhoNone = +Inf counts only with a row),
// then l = Σ log v over those. For the bound both are folded into one
// weight: a bid with RhoNone = +Inf is worth -big without a row, where big
// exceeds any difference of l between two allocations, so that W = l -
// big·(unserved such bids) orders allocations exactly as (p, l) does.
type search struct {
	offer ftf.Offer
	bids  []Bid
	// logv[i][r] is log(1/rho) of row r of bid i; base[i] the same without a
	// row (-Inf when RhoNone is +Inf) and weight[i] its weight in W (-big
	// instead of -Inf).
	logv   [][]float64
	base   []float64
	weight []float64
	// rows[i] are bid i's candidate rows, best value first: those better
	// than no row and not dominated by a row using no more GPUs anywhere.
	rows  [][]srow
	order []int // bids by decreasing best gain
	// limit bounds the search; nodes counts its nodes over every run, and
	// partial records that a run stopped at its bound.
	limit   limit
	nodes   int
	partial bool
	// prices are the last root's Lagrange multipliers, the start of the
	// next search's.
	prices []float64
}

// srow is a candidate row in sparse form: GPUs cnt[k] of server srv[k].
type srow struct {
	row int
	w   float64
	srv []int
	cnt []int
}

func newSearch(o ftf.Offer, bids []Bid) *search {
	n := len(bids)
	sr := &search{offer: o, bids: bids, logv: make([][]float64, n), base: make([]float64, n), weight: make([]float64, n),
		rows: make([][]srow, n), prices: make([]float64, len(o.Free))}
	gain := make([]float64, n)
	big := 1.0
	for i, b := range bids {
		sr.base[i] = -math.Log(b.Table.RhoNone)
		sr.logv[i] = make([]float64, len(b.Table.Rows))
		hi, lo := math.Inf(-1), math.Inf(1)
		if !math.IsInf(sr.base[i], -1) {
			hi, lo = sr.base[i], sr.base[i]
		}
		for r, row := range b.Table.Rows {
			sr.logv[i][r] = -math.Log(row.Rho)
			hi, lo = max(hi, sr.logv[i][r]), min(lo, sr.logv[i][r])
		}
		if len(b.Table.Rows) > 0 || !math.IsInf(sr.base[i], -1) {
			big += max(0, hi) + max(0, -lo)
		}
		sr.rows[i] = sr.candidates(i)
		gain[i] = math.Inf(-1)
		if len(sr.rows[i]) > 0 {
			gain[i] = sr.rows[i][0].w - sr.base[i]
		}
		sr.order = append(sr.order, i)
	}
	for i := range bids {
		sr.weight[i] = sr.base[i]
		if math.IsInf(sr.base[i], -1) {
			sr.weight[i] = -big
		}
	}
	slices.SortStableFunc(sr.order, func(a, b int) int { return cmpDesc(gain[a], gain[b]) })
	return sr
}

// cmpDesc orders larger values first (+Inf before finite before -Inf).
func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// candidates returns bid i's rows worth more than no row, best first (table
// order among equals), without those dominated by another row that uses no
// more GPUs on any server and is worth at least as much: swapping in the
// dominating row never hurts, so the optimum is unchanged.
func (sr *search) candidates(i int) []srow {
	t := sr.bids[i].Table
	var out []srow
	for r, row := range t.Rows {
		if sr.logv[i][r] <= sr.base[i] {
			continue
		}
		c := srow{row: r, w: sr.logv[i][r]}
		for s, k := range row.Counts {
			if k > 0 {
				c.srv, c.cnt = append(c.srv, s), append(c.cnt, k)
			}
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b srow) int { return cmpDesc(a.w, b.w) })
	kept := out[:0]
	for a, ra := range out {
		dominated := false
		for b, rb := range out {
			// rb (better or equal, earlier on ties) dominates ra.
			if b != a && (rb.w > ra.w || (rb.w == ra.w && b < a)) && covers(t.Rows[ra.row].Counts, t.Rows[rb.row].Counts) {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, ra)
		}
	}
	return kept
}

// covers reports whether a ≥ b on every server.
func covers(a, b []int) bool {
	for s := range a {
		if a[s] < b[s] {
			return false
		}
	}
	return true
}

func (sr *search) value(i, r int) float64 {
	if r < 0 {
		return 1 / sr.bids[i].Table.RhoNone
	}
	return 1 / sr.bids[i].Table.Rows[r].Rho
}

// score returns the number of bids with a positive value and the sum of
// their logs, leaving out bid skip.
func (sr *search) score(rows []int, skip int) (int, float64) {
	var p int
	var l float64
	for i, r := range rows {
		if i == skip {
			continue
		}
		v := sr.base[i]
		if r >= 0 {
			v = sr.logv[i][r]
		}
		if !math.IsInf(v, -1) {
			p++
			l += v
		}
	}
	return p, l
}

// weigh returns W of rows leaving out bid skip.
func (sr *search) weigh(rows []int, skip int) float64 {
	var w float64
	for i, r := range rows {
		switch {
		case i == skip:
		case r >= 0:
			w += sr.logv[i][r]
		default:
			w += sr.weight[i]
		}
	}
	return w
}

type solution struct {
	rows []int
	p    int
	l    float64
}

// better reports whether (p, l) beats (bp, bl) lexicographically; l must
// exceed bl by more than rounding.
func better(p int, l float64, bp int, bl float64) bool {
	if p != bp {
		return p > bp
	}
	return l > bl+tieTol*max(1, math.Abs(bl))
}

// tieTol is the relative margin by which a log product must beat another to
// count as better; within it the allocation found first stands.
const tieTol = 1e-12

// ctxEvery is how many nodes the search visits between checks of its
// context, and clockEvery between readings of the clock for its deadline.
const (
	ctxEvery   = 256
	clockEvery = 16
)

// limit bounds a search: a node cap and a deadline over all its runs, and
// the part of them the current run may use.
type limit struct {
	nodes  int       // cap on the nodes of all runs; 0: none
	end    time.Time // deadline of all runs; zero: none
	runCap int       // node count at which the current run stops, if nodes > 0
	runEnd time.Time // the current run's deadline; zero: none
}

func newLimit(nodes int, budget time.Duration) limit {
	l := limit{nodes: nodes}
	if budget > 0 {
		l.end = time.Now().Add(budget)
	}
	return l
}

// share gives the next run 1/k of what is left of the limit, used nodes
// having been spent.
func (l *limit) share(k int, used int) {
	k = max(k, 1)
	if l.nodes > 0 {
		l.runCap = used + (l.nodes-used)/k
	}
	if !l.end.IsZero() {
		l.runEnd = time.Now().Add(time.Until(l.end) / time.Duration(k))
	}
}
