package alloc

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// sharingClasses are the classes of interchangeable jobs and the pairs
// between them that have measured rates.
type sharingClasses struct {
	rc     rowClasses
	labels []string // label of each class
	pairs  []classPair
}

// classPair is one pair variable: classes c ≤ d on type k. rate[0] is a
// c-job's rate, rate[1] a d-job's.
type classPair struct {
	c, d, k int
	rate    [2]float64
}

// Solve returns the space-sharing allocation with its pair times.
func (s SpaceSharing) Solve(ctx context.Context, p *Problem) (*SharingResult, error) {
	p, ref, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	s.Pairs = append([]PairRate(nil), s.Pairs...)
	for q, pr := range s.Pairs {
		s.Pairs[q].RateA, s.Pairs[q].RateB = canonical(pr.RateA/ref), canonical(pr.RateB/ref)
	}
	sc, err := s.classes(p)
	if err != nil {
		return nil, err
	}
	var norm []float64 // Gang/(Weight·equal-share rate) per class, for max-min
	if s.Objective == SharingMaxMin || s.Objective == SharingMaxMinThenTotal {
		rates, zero := p.equalShareThroughputs()
		if zero >= 0 {
			return nil, gpufair.Invalid("Throughputs", string(p.Jobs[zero].ID), gpufair.ErrValue, "%s: the job runs on no GPU type (all rates zero)", s.Name())
		}
		norm = make([]float64, sc.rc.numClasses())
		for c, i := range sc.rc.rep {
			norm[c] = float64(p.Jobs[i].Gang) / (p.Jobs[i].Weight * rates[i])
		}
	} else if s.Objective != SharingMaxTotal {
		return nil, gpufair.Invalid("SpaceSharing.Objective", "", gpufair.ErrValue, "unknown objective %d", s.Objective)
	}
	if err := ctx.Err(); err != nil { // classes and norms take long at scale
		return nil, fmt.Errorf("alloc: %s: %w", s.Name(), err)
	}
	sm := sc.model(p, norm)
	var second *lp.Model // SharingMaxMinThenTotal's: the same model, its objective changed below
	if s.Objective == SharingMaxMinThenTotal {
		second = sm.m.Clone()
	}
	sol, err := gavelSolve(ctx, s.Name(), sm.m, nil)
	if err != nil {
		return nil, err
	}
	if second != nil {
		// The level held, and the sum of the normalised throughputs
		// (the level rows' left-hand sides) as the objective.
		level := sol.Value(sm.level) * (1 - heldLevelSlack)
		second.SetObjective(sm.level, 0)
		second.AddConstraint("held level", []lp.Term{{Var: sm.level, Coef: 1}}, lp.GE, level)
		sc.setSumObjective(second, sm.levelRows)
		if sol, err = gavelSolve(ctx, s.Name(), second, nil); err != nil {
			return nil, err
		}
	}
	res := sc.result(p, sol, sm.x, sm.y, sm.thr)
	res.Labels = slices.Clone(s.JobTypes)
	if res.Labels == nil {
		res.Labels = p.JobIDs()
	}
	for i := range res.Throughput {
		res.Throughput[i] *= ref
	}
	return res, nil
}

// classes validates the labels and pairs and groups the jobs.
func (s SpaceSharing) classes(p *Problem) (sharingClasses, error) {
	if err := p.Validate(); err != nil {
		return sharingClasses{}, err
	}
	labels := s.JobTypes
	if labels == nil {
		labels = p.JobIDs()
	} else if len(labels) != len(p.Jobs) {
		return sharingClasses{}, gpufair.Invalid("SpaceSharing.JobTypes", "", gpufair.ErrShape, "%d labels for %d jobs", len(labels), len(p.Jobs))
	}
	labelIndex := map[string]int{}
	for _, l := range labels {
		if _, ok := labelIndex[l]; !ok {
			labelIndex[l] = len(labelIndex)
		}
	}
	rc := groupRows(len(p.Jobs), func(i int) []float64 {
		j := p.Jobs[i]
		return append([]float64{float64(labelIndex[labels[i]]), float64(j.Gang), j.Weight}, p.Throughputs.Row(i)...)
	})
	sc := sharingClasses{rc: rc, labels: make([]string, rc.numClasses())}
	for c, i := range rc.rep {
		sc.labels[c] = labels[i]
	}
	rates, err := s.pairTable(p, labelIndex, "SpaceSharing.Pairs")
	if err != nil {
		return sharingClasses{}, err
	}
	// The pairs of classes are found from the pair table, not by testing
	// every pair of classes: with every job its own class, that was
	// 2·10^10 lookups at 100,000 jobs.
	byLabel := make(map[string][]int, len(labelIndex))
	for c, l := range sc.labels {
		byLabel[l] = append(byLabel[l], c)
	}
	var found [][3]int // (c, d, k) with c ≤ d
	for key := range rates {
		for _, c := range byLabel[key.a] {
			for _, d := range byLabel[key.b] {
				if c <= d {
					found = append(found, [3]int{c, d, key.k})
				}
			}
		}
	}
	slices.SortFunc(found, func(a, b [3]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	})
	for _, f := range found {
		c, d, k := f[0], f[1], f[2]
		if c == d && rc.size[c] < 2 {
			continue
		}
		r := rates[pairKey{sc.labels[c], sc.labels[d], k}]
		if r[0]+r[1] == 0 {
			continue
		}
		if gc, gd := p.Jobs[rc.rep[c]].Gang, p.Jobs[rc.rep[d]].Gang; gc != gd {
			return sharingClasses{}, gpufair.Invalid("SpaceSharing.Pairs", sc.labels[c]+"+"+sc.labels[d], gpufair.ErrValue, "co-located jobs have gangs %d and %d", gc, gd)
		}
		if c == d { // either job of a same-class pair may be "A": average
			avg := (r[0] + r[1]) / 2
			r = [2]float64{avg, avg}
		}
		sc.pairs = append(sc.pairs, classPair{c: c, d: d, k: k, rate: r})
	}
	return sc, nil
}

type pairKey struct {
	a, b string
	k    int
}

// pairTable indexes Pairs by (A, B, type) in both orders, skipping labels
// no job has; its errors name field.
func (s SpaceSharing) pairTable(p *Problem, labels map[string]int, field string) (map[pairKey][2]float64, error) {
	t := make(map[pairKey][2]float64, 2*len(s.Pairs))
	for _, pr := range s.Pairs {
		id := pr.A + "+" + pr.B
		k, ok := p.Capacity.TypeIndex(pr.Type)
		if !ok {
			return nil, gpufair.Invalid(field, id, gpufair.ErrUnknownID, "GPU type %q is not in the cluster", pr.Type)
		}
		for _, r := range []float64{pr.RateA, pr.RateB} {
			if !(r >= 0) || math.IsInf(r, 0) {
				return nil, gpufair.Invalid(field, id, gpufair.ErrValue, "rate %v on %q", r, pr.Type)
			}
		}
		if _, ok := labels[pr.A]; !ok {
			continue
		}
		if _, ok := labels[pr.B]; !ok {
			continue
		}
		key := pairKey{pr.A, pr.B, k}
		if _, dup := t[key]; dup {
			return nil, gpufair.Invalid(field, id, gpufair.ErrDuplicate, "listed twice on %q", pr.Type)
		}
		t[key] = [2]float64{pr.RateA, pr.RateB}
		if pr.A != pr.B {
			t[pairKey{pr.B, pr.A, k}] = [2]float64{pr.RateB, pr.RateA}
		}
	}
	return t, nil
}

// share returns how much of pair q's time each job of class c spends in
// it: 1/|c|, or 2/|c| when both jobs are of class c.
func (sc sharingClasses) share(q classPair, c int) float64 {
	if q.c == q.d {
		return 2 / float64(sc.rc.size[c])
	}
	return 1 / float64(sc.rc.size[c])
}

// heldLevelSlack is how far below the max-min level
// SharingMaxMinThenTotal's second LP may go, relative: the solvers' noise
// (LP-NOTES), the largest slack water filling allows itself (levelSlack).
const heldLevelSlack = 1e-7

// sharingModel is the class LP: x the time alone, y the pairs' time, thr[c]
// the terms of a c-job's throughput; with max-min, level the level and
// levelRows[c] the terms of c's normalised throughput (over ref).
type sharingModel struct {
	m         *lp.Model
	x         lp.Grid
	y         []lp.Var
	thr       [][]lp.Term
	level     lp.Var
	levelRows [][]lp.Term
}

// model builds the class LP. norm nil means max total; otherwise max-min
// of norm_c·throughput_c.
func (sc sharingClasses) model(p *Problem, norm []float64) sharingModel {
	nc, types := sc.rc.numClasses(), p.Capacity.NumTypes()
	m := lp.NewModel(lp.Maximize)
	x := m.AddGrid("X", nc, types, 0, 1)
	y := make([]lp.Var, len(sc.pairs))
	timeRow := make([][]lp.Term, nc)
	thr := make([][]lp.Term, nc)
	capRow := make([][]lp.Term, types)
	for c, i := range sc.rc.rep {
		g, n := float64(p.Jobs[i].Gang), float64(sc.rc.size[c])
		for k := range types {
			timeRow[c] = append(timeRow[c], lp.Term{Var: x.At(c, k), Coef: 1})
			capRow[k] = append(capRow[k], lp.Term{Var: x.At(c, k), Coef: n * g})
			if r := p.Throughputs.At(i, k); r != 0 {
				thr[c] = append(thr[c], lp.Term{Var: x.At(c, k), Coef: r})
			}
		}
	}
	for q, pr := range sc.pairs {
		y[q] = m.AddVar(fmt.Sprintf("Y[%d,%d,%d]", pr.c, pr.d, pr.k), 0, lp.Inf, 0)
		g := float64(p.Jobs[sc.rc.rep[pr.c]].Gang)
		capRow[pr.k] = append(capRow[pr.k], lp.Term{Var: y[q], Coef: g})
		for side, c := range []int{pr.c, pr.d} {
			if side == 1 && pr.c == pr.d {
				break
			}
			sh := sc.share(pr, c)
			timeRow[c] = append(timeRow[c], lp.Term{Var: y[q], Coef: sh})
			if r := pr.rate[side]; r != 0 {
				thr[c] = append(thr[c], lp.Term{Var: y[q], Coef: sh * r})
			}
		}
	}
	for c := range timeRow {
		m.AddConstraint("time", timeRow[c], lp.LE, 1)
	}
	for k, n := range p.Capacity.Count {
		m.AddConstraint("capacity", capRow[k], lp.LE, n)
	}
	if norm == nil {
		sc.setSumObjective(m, thr)
		return sharingModel{m: m, x: x, y: y, thr: thr}
	}
	// Max-min: norm_c·throughput_c/ref ≥ μ, maximise N·μ, with ref the
	// lowest level a class reaches alone on the whole cluster, so μ is
	// about 1 (LP-NOTES on scaling).
	ref := math.Inf(1)
	for c, i := range sc.rc.rep {
		ref = math.Min(ref, norm[c]*p.bestAlone(i))
	}
	mu := m.AddVar("level", 0, lp.Inf, float64(len(p.Jobs)))
	levelRows := make([][]lp.Term, len(thr))
	for c, terms := range thr {
		row := make([]lp.Term, 0, len(terms)+1)
		for _, t := range terms {
			row = append(row, lp.Term{Var: t.Var, Coef: t.Coef * norm[c] / ref})
		}
		levelRows[c] = row
		m.AddConstraint("level", append(slices.Clip(row), lp.Term{Var: mu, Coef: -1}), lp.GE, 0)
	}
	return sharingModel{m: m, x: x, y: y, thr: thr, level: mu, levelRows: levelRows}
}

// setSumObjective sets m's objective to the sum over jobs of the terms of
// their class's row in rows.
func (sc sharingClasses) setSumObjective(m *lp.Model, rows [][]lp.Term) {
	obj := make([]float64, m.NumVars())
	for c, terms := range rows {
		for _, t := range terms {
			obj[t.Var] += float64(sc.rc.size[c]) * t.Coef
		}
	}
	for v, c := range obj {
		if c != 0 {
			m.SetObjective(lp.Var(v), c)
		}
	}
}

// result turns a solution of the class LP into per-job values.
func (sc sharingClasses) result(p *Problem, sol *lp.Solution, x lp.Grid, y []lp.Var, thr [][]lp.Term) *SharingResult {
	nc, types := sc.rc.numClasses(), p.Capacity.NumTypes()
	alone := x.Values(sol)
	// Per-class GPUs: alone, then half of each pair's gang per member.
	gpus := make([][]float64, nc)
	for c, i := range sc.rc.rep {
		gpus[c] = make([]float64, types)
		for k, f := range alone[c] {
			gpus[c][k] = min(max(f, 0), 1) * float64(p.Jobs[i].Gang)
		}
	}
	res := &SharingResult{Allocation: NewAllocation(p.JobIDs(), p.Capacity), Throughput: make([]float64, len(p.Jobs))}
	partners := make([][]PartnerShare, nc)
	for q, pr := range sc.pairs {
		t := max(sol.Value(y[q]), 0)
		if t == 0 {
			continue
		}
		tk := p.Capacity.Types[pr.k]
		res.Pairs = append(res.Pairs, PairShare{A: sc.labels[pr.c], B: sc.labels[pr.d], Type: tk, Time: t})
		partners[pr.c] = append(partners[pr.c], PartnerShare{With: sc.labels[pr.d], Type: tk, Time: sc.share(pr, pr.c) * t})
		if pr.c != pr.d {
			partners[pr.d] = append(partners[pr.d], PartnerShare{With: sc.labels[pr.c], Type: tk, Time: sc.share(pr, pr.d) * t})
		}
		g := float64(p.Jobs[sc.rc.rep[pr.c]].Gang)
		gpus[pr.c][pr.k] += sc.share(pr, pr.c) * t * g / 2
		if pr.c != pr.d {
			gpus[pr.d][pr.k] += sc.share(pr, pr.d) * t * g / 2
		}
	}
	classThr := make([]float64, nc)
	for c, terms := range thr {
		for _, t := range terms {
			classThr[c] += t.Coef * max(sol.Value(t.Var), 0)
		}
	}
	res.Alone, res.Partners = make([][]float64, len(p.Jobs)), make([][]PartnerShare, len(p.Jobs))
	for i := range p.Jobs {
		c := sc.rc.of[i]
		copy(res.Allocation.GPUs[i], gpus[c])
		res.Throughput[i] = classThr[c]
		res.Alone[i] = make([]float64, types)
		for k, f := range alone[c] {
			res.Alone[i][k] = min(max(f, 0), 1)
		}
		res.Partners[i] = slices.Clone(partners[c])
	}
	clampToCapacity(res.Allocation, p.Capacity)
	return res
}

// clampToCapacity scales down any column used beyond its count, the repair
// of solver noise (LP-NOTES: up to a few 1e-6).
func clampToCapacity(a *Allocation, c Capacity) {
	for k, used := range a.Used() {
		if n := c.Count[k]; used > n {
			for i := range a.GPUs {
				a.GPUs[i][k] *= n / used
			}
		}
	}
}
