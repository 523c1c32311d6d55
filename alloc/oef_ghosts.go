package alloc

import (
	"math"
	"slices"
)

// Ghosts: jobs that departed since the warm basis was taken, kept in the
// next solve's LP as classes of weight zero.
//
// A departed job's columns and rows leave a warm basis with holes: columns
// left without a row, rows without a column. Refactorising fills them with
// logicals, which moves the prices of every column, and where the job held
// a pool's rows together the basis left is nearly singular and is dropped
// (classBasisFor). A ghost keeps the job's class, speedups and envy rows
// as they were, with weight zero: its bundle uses no capacity and adds
// nothing to the objective. The basis then fits the new LP as it stood,
// square and as well conditioned as before, and only the objective and
// capacity coefficients of the ghost's columns changed.
//
// The ghost leaves the optimum as it is. Its rows ask that it prefer its
// own bundle to every other and that no class envy it; any envy-free
// allocation of the real classes meets both with the ghost holding the
// bundle it likes best among theirs. So the LP with ghosts has the
// optimum of the LP without, and its bundles of the real classes are an
// optimal allocation. Its dual is turned into one of the LP without
// (withoutGhosts), which the certificate then checks as always.

// maxOEFGhosts bounds the ghosts of one solve: a ghost stays while later
// bases name it with more tight rows than shares, and a scheduler that
// loses a job each round could carry many. Beyond the bound the earliest
// ghosts are left out, as departed jobs were before ghosts.
const maxOEFGhosts = 64

// ghost is a departed job kept in the LP: its job and its class's
// speedups on the problem's GPU types.
type ghost struct {
	job   JobID
	speed []float64
}

// ghostsFor returns the jobs that b names but p no longer holds, whose
// speedups b records on every GPU type of p (OEFBasis.Speedups), and
// which hold more of b's tight rows than its basic shares: b's own ghosts
// first, then the others in the order b names them, at most maxOEFGhosts,
// the latest kept.
func ghostsFor(p *Problem, b OEFBasis) []ghost {
	if len(b.Speedups) == 0 {
		return nil
	}
	held := make(map[JobID]bool, len(p.Jobs))
	for _, j := range p.Jobs {
		held[j.ID] = true
	}
	at := make([]int, len(p.Capacity.Types)) // p's GPU type k is b.Types[at[k]]
	for k, t := range p.Capacity.Types {
		i := slices.Index(b.Types, t)
		if i < 0 {
			return nil
		}
		at[k] = i
	}
	// A departed job with as many tight rows as basic shares leaves the
	// basis square when both go, as most departures do, and needs no
	// ghost; one that holds more rows than shares (a pool's rows hang on
	// it) does. Ghosting every departed job made the scheduler's rounds
	// slower, not faster (docs/benchmarks/oef.md).
	shares, tight := map[JobID]int{}, map[JobID]int{}
	for _, s := range b.Shares {
		shares[s.Job]++
	}
	for _, r := range b.Tight {
		tight[r.Envier]++
		tight[r.Envied]++
	}
	var out []ghost
	seen := map[JobID]bool{}
	add := func(j JobID) {
		if held[j] || seen[j] {
			return
		}
		seen[j] = true
		if tight[j] <= shares[j] {
			return
		}
		// A basis is only a hint: speedups that no solve would have
		// recorded (not finite, negative) make no ghost rather than an
		// error.
		s, ok := b.Speedups[j]
		if !ok || len(s) != len(b.Types) || slices.ContainsFunc(s, func(x float64) bool { return !(x >= 0) || math.IsInf(x, 1) }) {
			return
		}
		g := ghost{job: j, speed: make([]float64, len(at))}
		for k, i := range at {
			g.speed[k] = s[i]
		}
		out = append(out, g)
	}
	for _, j := range b.Ghosts {
		add(j)
	}
	for _, s := range b.Shares {
		add(s.Job)
	}
	for _, r := range b.Tight {
		add(r.Envier)
		add(r.Envied)
	}
	return out[max(0, len(out)-maxOEFGhosts):]
}

// addGhosts appends gs to q as classes of weight zero, after its own.
func (q *oefLP) addGhosts(gs []ghost) {
	for _, g := range gs {
		q.s = append(q.s, g.speed)
		q.w = append(q.w, 0)
	}
	q.ghosts = len(gs)
}

// isGhost reports whether class c is one of q's ghosts.
func (q *oefLP) isGhost(c int) bool { return c >= len(q.s)-q.ghosts }

// withoutGhosts returns q without its ghosts, with y and d turned into
// bundles and a dual of that LP: the ghosts' bundles dropped, and every
// envy multiplier through a ghost g contracted. Flows a → g and g → d,
// of multipliers λ_ag and λ_gd, become a → d with λ_ag·λ_gd/Λ_g, Λ_g =
// Σ_d λ_gd. That keeps each a's outflow, and gives each d on every GPU
// type k an inflow Σ_a λ_ag·s_ak·λ_gd/Λ_g ≥ λ_gd·s_gk, since the dual
// constraint of the ghost's column y_gk (weight zero) is Λ_g·s_gk ≤
// Σ_a λ_ag·s_ak: at least what g sent (see certify). A ghost that sends
// nothing has its inflow dropped, which only loosens its senders'
// constraints. Flows from a class to itself cancel in its constraint and
// are dropped. d's basis, named by classes with the ghosts, is kept.
func (q *oefLP) withoutGhosts(y [][]float64, d coopDual) (*oefLP, [][]float64, coopDual) {
	if q.ghosts == 0 {
		return q, y, d
	}
	n := len(q.s) - q.ghosts
	// Each flow through a ghost waits at the first ghost it touches, in
	// class order, the order the ghosts are contracted in: a flow between
	// two ghosts is then among the first's, and every flow a contraction
	// makes touches later ghosts only.
	in, out := make([][]envyFlow, q.ghosts), make([][]envyFlow, q.ghosts)
	var flows []envyFlow
	place := func(f envyFlow) {
		switch {
		case f.c == f.d:
		case f.d >= n && (f.c < n || f.d < f.c):
			in[f.d-n] = append(in[f.d-n], f)
		case f.c >= n:
			out[f.c-n] = append(out[f.c-n], f)
		default:
			flows = append(flows, f)
		}
	}
	for _, f := range d.flows {
		place(f)
	}
	for g := range q.ghosts {
		var total float64
		for _, f := range out[g] {
			total += f.v
		}
		if total == 0 {
			continue
		}
		for _, a := range in[g] {
			for _, b := range out[g] {
				place(envyFlow{a.c, b.d, a.v * b.v / total})
			}
		}
	}
	d.flows = mergeFlows(flows)
	return q.cold(), y[:n:n], d
}

// cold returns q without its ghosts and its warm start: its warm rows,
// their orphans and its basis hint, which may name the ghosts.
func (q *oefLP) cold() *oefLP {
	n := len(q.s) - q.ghosts
	r := *q
	r.s, r.w, r.ghosts = q.s[:n:n], q.w[:n:n], 0
	r.warm, r.orphans, r.hint = nil, nil, nil
	return &r
}

// mergeFlows sums the flows of each (c, d), in order of first appearance.
func mergeFlows(fs []envyFlow) []envyFlow {
	at := make(map[envyPair]int, len(fs))
	out := fs[:0:0]
	for _, f := range fs {
		k := envyPair{f.c, f.d}
		if i, ok := at[k]; ok {
			out[i].v += f.v
			continue
		}
		at[k] = len(out)
		out = append(out, f)
	}
	return out
}
