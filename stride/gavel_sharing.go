package stride

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// gavelPartner is a job's target time sharing gangs of type Type (an index
// into the ledger's types) with a job labelled With (Gavel §3.1, space
// sharing).
type gavelPartner struct {
	With string  `json:"with"`
	Type int     `json:"type"`
	Time float64 `json:"time"`
}

// colocated fills sol from a space-sharing solution r over jobs in: each
// job's time alone as its target, its co-located time by partner label and
// type, and its label. cols maps the problem's types to the ledger's.
func colocated(sol gavelState, r *alloc.SharingResult, in []*round.Job, types []topology.GPUType, cols []int) gavelState {
	sol.Partners, sol.Labels = map[alloc.JobID][]gavelPartner{}, map[alloc.JobID]string{}
	for i, j := range in {
		x := make([]float64, len(types))
		for c, k := range cols {
			x[k] = grain(r.Alone[i][c])
		}
		sol.Target[j.ID] = x
		sol.Labels[j.ID] = r.Labels[i]
		for _, ps := range r.Partners[i] {
			if t := grain(ps.Time); t > 0 {
				sol.Partners[j.ID] = append(sol.Partners[j.ID], gavelPartner{With: ps.With, Type: slices.Index(types, ps.Type), Time: t})
			}
		}
	}
	return sol
}

// jobPairs returns the pairs of jobs of the allocation in force whose
// partners are named by job ID (alloc.GandivaPacking's), each once, in ID
// order.
func (st *gavelState) jobPairs() []alloc.JobPair {
	var out []alloc.JobPair
	used := map[alloc.JobID]bool{}
	for _, id := range slices.Sorted(maps.Keys(st.Partners)) {
		for _, p := range st.Partners[id] {
			if with := alloc.JobID(p.With); id < with && st.Labels[with] == p.With && !used[id] && !used[with] {
				out = append(out, alloc.JobPair{A: id, B: with})
				used[id], used[with] = true, true
			}
		}
	}
	return out
}

// pairTime returns the time job id should share gangs of type k, with
// any partner.
func (st *gavelState) pairTime(id alloc.JobID, k int) float64 {
	t := 0.0
	for _, p := range st.Partners[id] {
		if p.Type == k {
			t += p.Time
		}
	}
	return t
}

// pairsWith reports whether job id should share gangs of type k with a job
// labelled label.
func (st *gavelState) pairsWith(id alloc.JobID, label string, k int) bool {
	for _, p := range st.Partners[id] {
		if p.Type == k && p.With == label {
			return true
		}
	}
	return false
}

// wantsPartner reports whether job j, about to run on type k, is behind on
// its co-located time there: the part of its time on k it has shared is at
// most the part its allocation shares, its time counted as the priority
// pass counts it (since the latest reset of f_mk, if there is one), as ran
// returns it.
func (st *gavelState) wantsPartner(j *round.Job, k int, alone float64, ran func(*round.Job, int) (float64, float64)) bool {
	pair := st.pairTime(j.ID, k)
	if pair <= 0 {
		return false
	}
	r, shared := ran(j, k)
	if r == 0 {
		return true
	}
	return shared/r <= pair/(pair+alone)
}

// partner returns the waiting job (index into jobs) that job m should share
// gangs of type k with: one whose label m's allocation pairs it with on k,
// and whose allocation pairs it with m's label, of the same gang, not yet
// placed (chosen 0), highest priority on k first (ties: arrival order);
// -1 if none. byLabel lists the jobs of each label in arrival order.
func (st *gavelState) partner(jobs []*round.Job, m, k int, chosen []int, prio func(int, int) float64, byLabel map[string][]int) int {
	jm := jobs[m]
	best, bestPrio := -1, 0.0
	for _, p := range st.Partners[jm.ID] {
		if p.Type != k {
			continue
		}
		for _, n := range byLabel[p.With] {
			jn := jobs[n]
			if n == m || chosen[n] != 0 || jn.Gang != jm.Gang || !(jn.Rates[k] > 0) || !st.pairsWith(jn.ID, st.Labels[jm.ID], k) {
				continue
			}
			if q := prio(n, k); best < 0 || q > bestPrio || (q == bestPrio && n < best) {
				best, bestPrio = n, q
			}
		}
	}
	return best
}

// gavelMate is a pair of the lease in force, keyed by its first job (the
// lesser ID): its second job, and the first's Shared (round.Job.Shared)
// when the lease was decided, so that what the first has shared since is
// the time the two ran together.
type gavelMate struct {
	With   alloc.JobID `json:"with"`
	Shared []float64   `json:"shared"`
}

// pairOrder returns a and b, the lesser ID first: the key of their
// co-located time.
func pairOrder(a, b alloc.JobID) (alloc.JobID, alloc.JobID) {
	if b < a {
		return b, a
	}
	return a, b
}

// creditPairs adds to st.PairRan the time each pair of the lease just
// credited (round.Ledger.Begin) ran together, and forgets pairs with a job
// that has left. New maps: the state Decide saved for a rollback keeps the
// old.
func (st *gavelState) creditPairs(l *round.Ledger) {
	if len(st.PairRan) == 0 && len(st.Mates) == 0 {
		return
	}
	in := func(id alloc.JobID) bool { _, ok := l.Job(id); return ok }
	ran := map[alloc.JobID]map[alloc.JobID][]float64{}
	add := func(a, b alloc.JobID, x []float64) {
		if ran[a] == nil {
			ran[a] = map[alloc.JobID][]float64{}
		}
		if y := ran[a][b]; y != nil {
			for k := range y {
				y[k] += x[k]
			}
			return
		}
		ran[a][b] = slices.Clone(x)
	}
	for a, row := range st.PairRan {
		for b, x := range row {
			if in(a) && in(b) {
				add(a, b, x)
			}
		}
	}
	for a, m := range st.Mates {
		j, ok := l.Job(a)
		if !ok || !in(m.With) || j.Shared == nil {
			continue
		}
		x := make([]float64, len(j.Shared))
		for k := range x {
			x[k] = max(j.Shared[k]-m.Shared[k], 0)
		}
		add(a, m.With, x)
	}
	st.PairRan, st.Mates = ran, nil
	if len(ran) == 0 {
		st.PairRan = nil
	}
}

// recordMates keeps the pairs of d (st.Mates), to credit when its lease
// has run.
func (st *gavelState) recordMates(l *round.Ledger, d *round.Decision) {
	st.Mates = nil
	for _, p := range d.Placements {
		if len(p.Jobs) != 2 {
			continue
		}
		a, b := pairOrder(p.Jobs[0], p.Jobs[1])
		j, _ := l.Job(a)
		shared := make([]float64, len(l.Types()))
		if j != nil && j.Shared != nil {
			copy(shared, j.Shared)
		}
		if st.Mates == nil {
			st.Mates = map[alloc.JobID]gavelMate{}
		}
		st.Mates[a] = gavelMate{With: b, Shared: shared}
	}
}

// since returns when job j's time run starts to count: the latest reset
// (GavelSettings.ResetInterval) if it arrived before it, else its arrival.
func (g *Gavel) since(j *round.Job) float64 {
	if g.sinceReset(j) {
		return g.st.ResetAt
	}
	return j.Arrival
}

// gavelCombination is a candidate of a priority pass: job m alone (n < 0)
// or jobs m < n together (indices in the ledger's (arrival, ID) order), on
// type k.
type gavelCombination struct {
	prio, x float64
	m, n, k int
}

// sortCombinations orders candidates by decreasing priority; ties: larger
// X, then jobs and type in order, a job alone before its pairs.
func sortCombinations(cand []gavelCombination) {
	slices.SortFunc(cand, func(a, b gavelCombination) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(b.x, a.x); c != 0 {
			return c
		}
		if c := cmp.Compare(a.m, b.m); c != 0 {
			return c
		}
		if c := cmp.Compare(a.n, b.n); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
}

// combinationPass is the priority pass of Gavel's Algorithm 1 with space
// sharing (GavelSettings.PairPriorities): every job alone and every pair
// the allocation co-locates is a candidate on each type it has time on,
// ranked by X / f (+Inf before it has run there); a candidate runs if none
// of its jobs is placed (chosen) and its gang fits what is left, in the
// order of sortCombinations.
func (g *Gavel) combinationPass(now float64, jobs []*round.Job, chosen, mate, left []int, byLabel map[string][]int) {
	st := &g.st
	ratio := func(x, ran, from float64) float64 {
		if el := now - from; el > 0 && ran > 0 {
			return x / (ran / el)
		}
		return math.Inf(1)
	}
	// perPeer is job i's co-located time with label on type k, spread
	// evenly over the jobs of that label other than i: X of each such pair
	// from i's side. The two sides agree while the jobs are those the
	// allocation was solved for; a pair's X is the lesser.
	type peerKey struct {
		i     int
		label string
		k     int
	}
	memo := map[peerKey]float64{}
	perPeer := func(i int, label string, k int) float64 {
		key := peerKey{i, label, k}
		if x, ok := memo[key]; ok {
			return x
		}
		peers := len(byLabel[label])
		if st.Labels[jobs[i].ID] == label {
			peers--
		}
		x := 0.0
		if peers > 0 {
			for _, p := range st.Partners[jobs[i].ID] {
				if p.Type == k && p.With == label {
					x += p.Time
				}
			}
			x /= float64(peers)
		}
		memo[key] = x
		return x
	}
	var cand []gavelCombination
	for m, j := range jobs {
		x := st.Target[j.ID]
		if x == nil || chosen[m] != 0 {
			continue
		}
		for k, xk := range x {
			if xk > 0 && j.Rates[k] > 0 {
				ran, shared := g.ran(j, k)
				cand = append(cand, gavelCombination{prio: ratio(xk, ran-shared, g.since(j)), x: xk, m: m, n: -1, k: k})
			}
		}
		for _, p := range st.Partners[j.ID] {
			k := p.Type
			if !(j.Rates[k] > 0) {
				continue
			}
			mine := perPeer(m, p.With, k)
			for _, n := range byLabel[p.With] {
				jn := jobs[n]
				if n <= m || chosen[n] != 0 || jn.Gang != j.Gang || !(jn.Rates[k] > 0) {
					continue
				}
				// Zero unless n's allocation pairs it with m's label on k too.
				xp := min(mine, perPeer(n, st.Labels[j.ID], k))
				if !(xp > 0) {
					continue
				}
				a, b := pairOrder(j.ID, jn.ID)
				var ran float64
				if r := st.PairRan[a][b]; k < len(r) {
					ran = r[k]
				}
				cand = append(cand, gavelCombination{prio: ratio(xp, ran, max(g.since(j), g.since(jn))), x: xp, m: m, n: n, k: k})
			}
		}
	}
	sortCombinations(cand)
	for _, c := range cand {
		j := jobs[c.m]
		if chosen[c.m] != 0 || (c.n >= 0 && chosen[c.n] != 0) || j.Gang > left[c.k] {
			continue
		}
		chosen[c.m] = c.k + 1
		left[c.k] -= j.Gang
		if c.n >= 0 {
			chosen[c.n] = c.k + 1
			mate[c.m], mate[c.n] = c.n, c.m
		}
	}
}

// checkPairTimes checks a restored state's co-located times
// (GavelSettings.PairPriorities) against its ledger l: each pair in order,
// with a time for each type between 0 and both jobs' Shared; each mate a
// pair in order, with a Shared for each type between 0 and its first job's
// Shared now. A job that has left since the latest round has no Shared to
// check against; its pairs go at the next.
func checkPairTimes(st *gavelState, l *round.Ledger) error {
	sharedOf := func(j *round.Job, k int) float64 {
		if j.Shared == nil {
			return 0
		}
		return j.Shared[k]
	}
	bad := func(id alloc.JobID, format string, args ...any) error {
		return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, format, args...)
	}
	for _, a := range slices.Sorted(maps.Keys(st.PairRan)) {
		for _, b := range slices.Sorted(maps.Keys(st.PairRan[a])) {
			x := st.PairRan[a][b]
			ja, oka := l.Job(a)
			jb, okb := l.Job(b)
			switch {
			case !(a < b):
				return bad(a, "co-located time with %q out of order", b)
			case len(x) != len(l.Types()):
				return bad(a, "%d co-located times with %q for %d types", len(x), b, len(l.Types()))
			}
			for k, t := range x {
				// A job that has left keeps its pairs until the next round.
				if !(t >= 0) || (oka && t > sharedOf(ja, k)) || (okb && t > sharedOf(jb, k)) {
					return bad(a, "co-located time %v with %q on type %d, beyond what the two shared", t, b, k)
				}
			}
		}
	}
	for _, a := range slices.Sorted(maps.Keys(st.Mates)) {
		m := st.Mates[a]
		if !(a < m.With) || len(m.Shared) != len(l.Types()) {
			return bad(a, "mate %q out of order, or %d shared times for %d types", m.With, len(m.Shared), len(l.Types()))
		}
		j, ok := l.Job(a)
		for k, t := range m.Shared {
			if !(t >= 0) || (ok && t > sharedOf(j, k)) {
				return bad(a, "shared time %v on type %d when paired with %q, beyond its Shared", t, k, m.With)
			}
		}
	}
	return nil
}
