package auction

import (
	"context"
	"math"
	"slices"
	"time"
)

// Subgradient steps on the Lagrange multipliers: many at the root of the
// full search, fewer at the root of a re-solve (warm-started from the
// previous search's prices), a few at each node (from its parent's).
const (
	rootSteps    = 60
	resolveSteps = 12
	nodeSteps    = 4
)

// bnb is one branch-and-bound run of a search, without bid skip.
type bnb struct {
	*search
	ctx   context.Context
	skip  int
	order []int // bids branched on, in search order
	free  []int
	cur   []int
	best  solution
	bestW float64
	// Per depth: the multipliers, the options tried, and their keys.
	lam  [][]float64
	opts [][]option
	// Scratch for the bound: each bid's relaxed choice, GPUs used, subgradient.
	pick []int
	used []int
	grad []float64
	err  error
	// stopped: the run spent its part of the search's limit.
	stopped bool
}

// option is one branch at a node: candidate index c (-1: no row) and its
// value after prices, the branching key.
type option struct {
	c   int
	adj float64
}

// run returns the best rows with bid skip left out (-1: none), starting
// from the incumbent start when given (improved row by row). It fails only
// on ctx; at its part of the limit it stops with the best rows found.
func (sr *search) run(ctx context.Context, skip int, start []int) (solution, error) {
	if err := ctx.Err(); err != nil {
		return solution{}, err
	}
	n, m := len(sr.bids), len(sr.offer.Free)
	b := &bnb{search: sr, ctx: ctx, skip: skip, free: slices.Clone(sr.offer.Free), cur: make([]int, n),
		pick: make([]int, n), used: make([]int, m), grad: make([]float64, m)}
	b.best = solution{rows: make([]int, n)}
	for i := range b.cur {
		b.cur[i], b.best.rows[i] = -1, -1
	}
	if start != nil {
		copy(b.best.rows, start)
		b.best.rows[skip] = -1
	}
	b.best.p, b.best.l = sr.score(b.best.rows, skip)
	b.bestW = sr.weigh(b.best.rows, skip)
	var w0 float64 // weight of bids with no candidate row, fixed at none
	for _, i := range sr.order {
		switch {
		case i == skip:
		case len(sr.rows[i]) == 0:
			w0 += sr.weight[i]
		default:
			b.order = append(b.order, i)
		}
	}
	if start != nil {
		b.improve(b.best.rows)
	}
	b.lam = make([][]float64, len(b.order)+1)
	b.opts = make([][]option, len(b.order)+1)
	for d := range b.lam {
		b.lam[d] = make([]float64, m)
	}
	copy(b.lam[0], sr.prices)
	b.greedy(b.lam[0])
	if b.spent() {
		b.stopped, b.partial = true, true
		return b.best, nil // the greedy and improved incumbents stand
	}
	steps := rootSteps
	if skip >= 0 {
		steps = resolveSteps // the prices come warm from the full search
	}
	b.bound(b.order, b.lam[0], w0, steps)
	b.greedy(b.lam[0])
	copy(sr.prices, b.lam[0])
	b.dfs(0, w0)
	return b.best, b.err
}

// greedy offers each bid in order its best fitting row at prices lam, and
// keeps the result if it beats the incumbent.
func (b *bnb) greedy(lam []float64) {
	rows := slices.Clone(b.cur)
	free := slices.Clone(b.free)
	for _, i := range b.order {
		bestAdj, pick := b.weight[i], -1
		for c, r := range b.rows[i] {
			if r.w <= bestAdj || !fitsIn(r, free) {
				continue
			}
			if a := r.w - priceOf(r, lam); a > bestAdj {
				bestAdj, pick = a, c
			}
		}
		if pick >= 0 {
			r := b.rows[i][pick]
			rows[i] = r.row
			for k, s := range r.srv {
				free[s] -= r.cnt[k]
			}
		}
	}
	b.offer(rows)
}

// offer makes rows the incumbent if they beat it.
func (b *bnb) offer(rows []int) {
	p, l := b.score(rows, b.skip)
	if better(p, l, b.best.p, b.best.l) {
		b.best.p, b.best.l = p, l
		copy(b.best.rows, rows)
		b.bestW = b.weigh(rows, b.skip)
	}
}

func fitsIn(r srow, free []int) bool {
	for k, s := range r.srv {
		if r.cnt[k] > free[s] {
			return false
		}
	}
	return true
}

func priceOf(r srow, lam []float64) float64 {
	var p float64
	for k, s := range r.srv {
		p += lam[s] * float64(r.cnt[k])
	}
	return p
}

// step counts a node and reports whether the search must stop: its
// context is done, or its run has spent its part of the limit.
func (b *bnb) step() bool {
	if b.halted() {
		return true
	}
	l := &b.limit
	if (l.nodes > 0 && b.nodes >= l.runCap) || (!l.runEnd.IsZero() && b.nodes%clockEvery == 0 && time.Now().After(l.runEnd)) {
		b.stopped, b.partial = true, true
		return true
	}
	b.nodes++
	if b.nodes%ctxEvery == 0 {
		b.err = b.ctx.Err()
	}
	return b.err != nil
}

// spent reports whether the run has used up its part of the limit.
func (b *bnb) spent() bool {
	l := &b.limit
	return (l.nodes > 0 && b.nodes >= l.runCap) || (!l.runEnd.IsZero() && time.Now().After(l.runEnd))
}

// halted reports whether the run has stopped, on an error or its limit.
func (b *bnb) halted() bool { return b.err != nil || b.stopped }

// improve raises each bid of rows in turn, in search order, to its best
// row that fits what the others leave, until a pass changes nothing, and
// offers the result as incumbent: the improvement step of a bounded
// re-solve started from x* without its bidder.
func (b *bnb) improve(rows []int) {
	rows = slices.Clone(rows)
	free := slices.Clone(b.free)
	counts := func(i int) []int { return b.bids[i].Table.Rows[rows[i]].Counts }
	for _, i := range b.order {
		if rows[i] >= 0 {
			for s, c := range counts(i) {
				free[s] -= c
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, i := range b.order {
			w := b.weight[i]
			if rows[i] >= 0 {
				w = b.logv[i][rows[i]]
				for s, c := range counts(i) {
					free[s] += c
				}
			}
			for _, r := range b.rows[i] { // best first
				if r.w <= w {
					break
				}
				if fitsIn(r, free) {
					rows[i], changed = r.row, true
					break
				}
			}
			if rows[i] >= 0 {
				for s, c := range counts(i) {
					free[s] -= c
				}
			}
		}
	}
	b.offer(rows)
}

// dfs branches on bid order[d] with weight w fixed by the bids before it.
func (b *bnb) dfs(d int, w float64) {
	if b.step() {
		return
	}
	if d == len(b.order) {
		b.offer(b.cur)
		return
	}
	lam := b.lam[d+1]
	copy(lam, b.lam[d])
	rest := b.order[d:]
	if w+b.bound(rest, lam, w, nodeSteps) <= b.bestW+b.tol() {
		return
	}
	i := b.order[d]
	opts := append(b.opts[d][:0], option{c: -1, adj: b.weight[i]})
	for c, r := range b.rows[i] {
		if fitsIn(r, b.free) {
			opts = append(opts, option{c: c, adj: r.w - priceOf(r, lam)})
		}
	}
	slices.SortStableFunc(opts, func(x, y option) int { return cmpDesc(x.adj, y.adj) })
	b.opts[d] = opts
	for _, o := range opts {
		if o.c < 0 {
			b.dfs(d+1, w+b.weight[i])
			continue
		}
		r := b.rows[i][o.c]
		b.take(r, 1)
		b.cur[i] = r.row
		b.dfs(d+1, w+r.w)
		b.cur[i] = -1
		b.take(r, -1)
		if b.halted() {
			return
		}
	}
}

func (b *bnb) take(r srow, sign int) {
	for k, s := range r.srv {
		b.free[s] -= sign * r.cnt[k]
	}
}

// tol is the margin within which a bound counts as no better than the
// incumbent (tieTol on its log product).
func (b *bnb) tol() float64 {
	return tieTol * max(1, math.Abs(b.best.l))
}
