package alloc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// sharingClasses are the classes of interchangeable jobs and the columns
// of co-located time between them.
type sharingClasses struct {
	rc     rowClasses
	labels []string // label of each class
	cols   []sharingColumn
	rows   []columnRow // the partner formulation's balance and degree rows
}

// sharingColumn is one variable of co-located time on type k. In the class
// formulation it is the time that pairs of a c-job and a d-job run (two
// sides, one where c = d), each pair occupying a gang; in the partner
// formulation it is the time that c-jobs run beside jobs of one label (one
// side), each such job occupying half a gang.
type sharingColumn struct {
	k     int
	gpus  float64 // GPUs of type k that one unit occupies
	sides []columnSide
	// a, b and pairTime: one unit adds pairTime to PairShare (a, b, k).
	a, b     string
	pairTime float64
}

// columnSide is a class's part of a column: each of its jobs spends share
// of the column's time in it, at rate, beside jobs labelled with.
type columnSide struct {
	c           int
	with        string
	share, rate float64
}

// columnRow is a constraint over columns: Σ coef·column op 0.
type columnRow struct {
	name  string
	cols  []int
	coefs []float64
	op    lp.Op
}

// Solve returns the space-sharing allocation with its pair times.
func (s SpaceSharing) Solve(ctx context.Context, p *Problem) (*SharingResult, error) {
	sp, err := s.prepare(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil { // classes and norms take long at scale
		return nil, fmt.Errorf("alloc: %s: %w", s.Name(), err)
	}
	sm, sol, err := s.optimise(ctx, sp.p, sp.sc, sp.norm, sp.sumWeight, sp.in.ents)
	if err != nil {
		return nil, err
	}
	res := sp.sc.result(sp.p, sol, sm.x, sm.y, sm.thr)
	res.Labels = slices.Clone(s.JobTypes)
	if res.Labels == nil {
		res.Labels = sp.p.JobIDs()
	}
	for i := range res.Throughput {
		res.Throughput[i] *= sp.ref
	}
	return res, nil
}

// sharingPrep is what Solve's LPs are built from: the problem normalised
// (its rates over ref), the objective's per-job inputs, the classes with
// their columns, and the objective's weights (objectiveWeights).
type sharingPrep struct {
	p               *Problem
	ref             float64
	in              sharingInputs
	sc              sharingClasses
	norm, sumWeight []float64
}

// prepare validates p and s's inputs and returns what Solve's LPs are
// built from, the pair rates normalised as p's rates are.
func (s SpaceSharing) prepare(p *Problem) (sharingPrep, error) {
	p, ref, err := p.validNormalised()
	if err != nil {
		return sharingPrep{}, err
	}
	s.Pairs = append([]PairRate(nil), s.Pairs...)
	for q, pr := range s.Pairs {
		s.Pairs[q].RateA, s.Pairs[q].RateB = canonical(pr.RateA/ref), canonical(pr.RateB/ref)
	}
	sp := sharingPrep{p: p, ref: ref}
	if sp.in, err = s.jobInputs(p, ref); err != nil {
		return sharingPrep{}, err
	}
	if sp.sc, err = s.classes(p, sp.in.own()); err != nil {
		return sharingPrep{}, err
	}
	if sp.norm, sp.sumWeight, err = s.objectiveWeights(p, sp.sc, sp.in); err != nil {
		return sharingPrep{}, err
	}
	return sp, nil
}

// sharingInputs are the per-job inputs of SpaceSharing's objective, which
// split classes: the makespan objectives' work left (in the normalised
// problem's units), SharingFIFO's rank weights, SharingHierarchical's
// entities. At most one is set.
type sharingInputs struct {
	steps, weight []float64
	ents          *entities
}

// own returns the per-job key that splits classes, or nil.
func (in sharingInputs) own() []float64 {
	switch {
	case in.steps != nil:
		return in.steps
	case in.weight != nil:
		return in.weight
	case in.ents != nil:
		return in.ents.key
	}
	return nil
}

// jobInputs validates and returns the per-job inputs that s's objective
// reads.
func (s SpaceSharing) jobInputs(p *Problem, ref float64) (sharingInputs, error) {
	var in sharingInputs
	var err error
	switch s.Objective {
	case SharingMinMakespan, SharingMinMakespanThenTotal:
		in.steps, err = makespanWork(p, ref, "SpaceSharing.RemainingSteps", s.Name(), s.RemainingSteps)
	case SharingFIFO:
		in.weight, err = s.fifoWeights(p)
	case SharingHierarchical:
		in.ents, err = newEntities(p, s.FIFO, "SpaceSharing.FIFO")
	}
	return in, err
}

// objectiveWeights returns, per class, the factor of its throughput in a
// max-min's level rows (norm), or its weight in SharingFIFO's total
// (sumWeight); both nil for SharingMaxTotal.
func (s SpaceSharing) objectiveWeights(p *Problem, sc sharingClasses, in sharingInputs) (norm, sumWeight []float64, err error) {
	n := sc.rc.numClasses()
	switch s.Objective {
	case SharingMaxTotal:
	case SharingFIFO:
		sumWeight = make([]float64, n)
		for c, i := range sc.rc.rep {
			sumWeight[c] = in.weight[i]
		}
	case SharingMaxMin, SharingMaxMinThenTotal, SharingWaterFilling, SharingHierarchical:
		// Gang/(Weight·equal-share rate); the hierarchy weighs jobs by
		// their level's slope instead (Hierarchical).
		rates, zero := p.equalShareThroughputs()
		if zero >= 0 {
			return nil, nil, gpufair.Invalid("Throughputs", string(p.Jobs[zero].ID), gpufair.ErrValue, "%s: the job runs on no GPU type (all rates zero)", s.Name())
		}
		norm = make([]float64, n)
		for c, i := range sc.rc.rep {
			w := p.Jobs[i].Weight
			if in.ents != nil {
				w = 1
			}
			norm[c] = float64(p.Jobs[i].Gang) / (w * rates[i])
		}
	case SharingMinMakespan, SharingMinMakespanThenTotal:
		// 1/steps: the level is the reciprocal of the makespan.
		norm = make([]float64, n)
		for c, i := range sc.rc.rep {
			norm[c] = 1 / in.steps[i]
		}
	default:
		return nil, nil, gpufair.Invalid("SpaceSharing.Objective", "", gpufair.ErrValue, "unknown objective %d", s.Objective)
	}
	return norm, sumWeight, nil
}

// optimise solves s's objective over sc: one LP; a second one holding the
// first one's level (the then-total objectives); or water filling's rounds.
// It returns the model whose columns the solution values.
func (s SpaceSharing) optimise(ctx context.Context, p *Problem, sc sharingClasses, norm, sumWeight []float64, ents *entities) (sharingModel, *lp.Solution, error) {
	if s.Objective == SharingWaterFilling || s.Objective == SharingHierarchical {
		ew := sc.singleEntities()
		if ents != nil {
			jobW := make([]float64, sc.rc.numClasses())
			for c, i := range sc.rc.rep {
				jobW[c] = p.Jobs[i].Weight
			}
			ew = ents.weights(p, sc.rc, jobW)
		}
		return sc.waterFill(ctx, p, norm, ew, s.Name())
	}
	sm := sc.model(p, norm, sumWeight, levelForm{})
	if s.Objective != SharingMaxMinThenTotal && s.Objective != SharingMinMakespanThenTotal {
		sol, err := gavelSolve(ctx, s.Name(), sm.m, nil)
		return sm, sol, err
	}
	sol, err := sc.thenTotal(ctx, sm, s.Name())
	return sm, sol, err
}

// thenTotal solves the then-total objectives' two LPs on one model kept
// loaded in CLP: the max-min level, then, with the level held by its
// column's bound, the sum of the level rows' left-hand sides (normalised
// throughputs, or throughputs over work left). The second solve goes on
// from the first's optimum, which stays feasible, by CLP's primal simplex:
// 1,000 jobs of Gavel's makespan trace took 4.2 s so against 10.4 s for
// its dual simplex from scratch (docs/benchmarks/gavel.md). The pure-Go
// primal simplex took 19,315 iterations and 13.1 s from that optimum
// against 4.7 s from scratch, so with PureGo both LPs are solved cold
// (thenTotalCold).
func (sc sharingClasses) thenTotal(ctx context.Context, sm sharingModel, policy string) (*lp.Solution, error) {
	if lp.Default.Resolve() != lp.CLP {
		return sc.thenTotalCold(ctx, sm, policy)
	}
	sol, err := sc.thenTotalWarm(ctx, sm)
	if err != nil && ctx.Err() == nil {
		// The two LPs again, each cold and with second opinions.
		return sc.thenTotalCold(ctx, sm, policy)
	}
	if err != nil {
		return nil, fmt.Errorf("alloc: %s: %w", policy, err)
	}
	return sol, nil
}

// thenTotalWarm is thenTotal's CLP path, one model kept loaded.
func (sc sharingClasses) thenTotalWarm(ctx context.Context, sm sharingModel) (*lp.Solution, error) {
	in, err := lp.NewIncremental(sm.m, nil)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	sol, err := in.Solve(ctx)
	if err != nil {
		return nil, err
	}
	in.SetVarBounds(sm.level, heldLevel(sol.Value(sm.level)), lp.Inf)
	for v, c := range sc.sumObjective(sm.m.NumVars(), sm.levelRows) {
		in.SetObjective(lp.Var(v), c)
	}
	sol, err = in.Solve(ctx)
	if err == nil || errors.Is(err, lp.ErrViolation) {
		// The primal simplex's point carries its updates' roundoff (a row
		// 1.8e-6 off at 1,000 jobs): the dual simplex, warm from the basis
		// it ended at, computes the point afresh, in no pivot (1e-15).
		sol, err = in.Solve(ctx)
	}
	if err == nil && sol.MaxViolation > thenTotalViolation {
		// A basis infeasible within CLP's tolerance (1e-7): the
		// throughputs would exceed what the cluster can give, and the
		// Pareto check found them out of reach (a rapid case of
		// TestPropertySpaceSharingThenTotalPareto, kept).
		return nil, fmt.Errorf("%w: CLP's primal simplex ended %.2g off a row", lp.ErrViolation, sol.MaxViolation)
	}
	return sol, err
}

// thenTotalViolation is the largest scaled violation thenTotalWarm
// accepts, the pure-Go simplex's primal tolerance: the Pareto check holds
// every job within 1e-9 of its throughput.
const thenTotalViolation = 1e-9

// thenTotalCold is thenTotal with each LP solved from scratch, and
// another backend's opinion where one fails (gavelSolve).
func (sc sharingClasses) thenTotalCold(ctx context.Context, sm sharingModel, policy string) (*lp.Solution, error) {
	second := sm.m.Clone()
	sol, err := gavelSolve(ctx, policy, sm.m, nil)
	if err != nil {
		return nil, err
	}
	second.AddConstraint("held level", []lp.Term{{Var: sm.level, Coef: 1}}, lp.GE, heldLevel(sol.Value(sm.level)))
	for v, c := range sc.sumObjective(second.NumVars(), sm.levelRows) {
		second.SetObjective(lp.Var(v), c)
	}
	return gavelSolve(ctx, policy, second, nil)
}

// heldLevel is the least level the then-total objectives' second LP
// holds, given the first's optimum.
func heldLevel(level float64) float64 { return level * (1 - heldLevelSlack) }

// fifoWeights validates SharingFIFO's Arrival and returns FIFO's weight
// of each job's throughput (rankWeights).
func (s SpaceSharing) fifoWeights(p *Problem) ([]float64, error) {
	key := s.Arrival
	if key == nil {
		key = make([]float64, len(p.Jobs))
	} else if err := checkAligned("SpaceSharing.Arrival", key, p.JobIDs(), nonNegative); err != nil {
		return nil, err
	}
	return rankWeights(p, func(i int) float64 { return key[i] }), nil
}

// classes validates the labels and pairs, groups the jobs (by label, gang,
// weight and rates, and by own, a per-job input, where it is not nil) and
// builds the columns of co-located time, in whichever formulation has
// fewer.
func (s SpaceSharing) classes(p *Problem, own []float64) (sharingClasses, error) {
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
		key := []float64{float64(labelIndex[labels[i]]), float64(j.Gang), j.Weight}
		if own != nil {
			key = append(key, own[i])
		}
		return append(key, p.Throughputs.Row(i)...)
	})
	sc := sharingClasses{rc: rc, labels: make([]string, rc.numClasses())}
	for c, i := range rc.rep {
		sc.labels[c] = labels[i]
	}
	rates, err := s.pairTable(p, labelIndex, "SpaceSharing.Pairs")
	if err != nil {
		return sharingClasses{}, err
	}
	// The pairs are found from the pair table, not by testing every pair
	// of classes: with every job its own class, that was 2·10^10 lookups
	// at 100,000 jobs.
	byLabel := make(map[string][]int, len(labelIndex))
	jobs := make(map[string]int, len(labelIndex))
	gangs := make(map[string][2]int, len(labelIndex)) // smallest and largest
	for c, l := range sc.labels {
		g := p.Jobs[rc.rep[c]].Gang
		r, ok := gangs[l]
		if !ok {
			r = [2]int{g, g}
		}
		gangs[l] = [2]int{min(r[0], g), max(r[1], g)}
		byLabel[l] = append(byLabel[l], c)
		jobs[l] += rc.size[c]
	}
	var found []pairKey // (a, b, k) with a's index ≤ b's, each once
	classCols, partnerCols := 0, 0
	for key, r := range rates {
		if labelIndex[key.a] > labelIndex[key.b] || r[0]+r[1] == 0 || key.a == key.b && jobs[key.a] < 2 {
			continue
		}
		found = append(found, key)
		na, nb := len(byLabel[key.a]), len(byLabel[key.b])
		if lo, hi := min(gangs[key.a][0], gangs[key.b][0]), max(gangs[key.a][1], gangs[key.b][1]); lo != hi {
			return sharingClasses{}, gpufair.Invalid("SpaceSharing.Pairs", key.a+"+"+key.b, gpufair.ErrValue, "co-located jobs have gangs %d and %d", lo, hi)
		}
		if key.a == key.b {
			classCols += na * (na + 1) / 2
			partnerCols += na
		} else {
			classCols += na * nb
			partnerCols += na + nb
		}
	}
	slices.SortFunc(found, func(x, y pairKey) int {
		return cmp.Or(cmp.Compare(labelIndex[x.a], labelIndex[y.a]), cmp.Compare(labelIndex[x.b], labelIndex[y.b]), cmp.Compare(x.k, y.k))
	})
	if s.formulation == partnerFormulation || s.formulation == fewerColumns && partnerCols < classCols {
		sc.partnerColumns(p, found, rates, byLabel)
	} else {
		sc.classColumns(p, found, rates, byLabel)
	}
	return sc, nil
}

// sharingFormulation chooses the columns of co-located time.
type sharingFormulation int

const (
	fewerColumns       sharingFormulation = iota // whichever has fewer columns
	classFormulation                             // classColumns
	partnerFormulation                           // partnerColumns
)

// sameLabelRate is the rate of either job of a pair of one label, whose
// measurement does not say which is "A": the average of the two.
func sameLabelRate(r [2]float64) float64 { return (r[0] + r[1]) / 2 }

// classColumns adds a column for each pair of classes c ≤ d with a rate on
// type k: the time that pairs of a c-job and a d-job run there, which each
// c-job shares equally (1/|c| of it, or 2/|c| within one class).
func (sc *sharingClasses) classColumns(p *Problem, found []pairKey, rates map[pairKey][2]float64, byLabel map[string][]int) {
	var cols [][3]int // (c, d, k) with c ≤ d
	for _, key := range found {
		for _, c := range byLabel[key.a] {
			for _, d := range byLabel[key.b] {
				if key.a != key.b || c <= d {
					cols = append(cols, [3]int{min(c, d), max(c, d), key.k})
				}
			}
		}
	}
	slices.SortFunc(cols, func(a, b [3]int) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]), cmp.Compare(a[2], b[2]))
	})
	for _, f := range cols {
		c, d, k := f[0], f[1], f[2]
		if c == d && sc.rc.size[c] < 2 {
			continue
		}
		r := rates[pairKey{sc.labels[c], sc.labels[d], k}]
		col := sharingColumn{k: k, gpus: float64(p.Jobs[sc.rc.rep[c]].Gang), a: sc.labels[c], b: sc.labels[d], pairTime: 1}
		if c == d {
			col.sides = []columnSide{{c: c, with: sc.labels[c], share: 2 / float64(sc.rc.size[c]), rate: sameLabelRate(r)}}
		} else {
			col.sides = []columnSide{
				{c: c, with: sc.labels[d], share: 1 / float64(sc.rc.size[c]), rate: r[0]},
				{c: d, with: sc.labels[c], share: 1 / float64(sc.rc.size[d]), rate: r[1]},
			}
		}
		sc.cols = append(sc.cols, col)
	}
}

// partnerColumns adds, for each class c and label b with a rate on type k,
// a column Z: the total time c's jobs run beside b-jobs there (each c-job
// 1/|c| of it), each occupying half a gang. It grows with classes·labels
// where classColumns grows with classes², so it serves policies whose jobs
// are each a class of their own (SharingMinMakespan, SharingFIFO). Two
// kinds of row make
// the columns pairs of distinct jobs:
//
//   - balance, labels a ≠ b: Σ_{c∈a} Z_{c,b,k} = Σ_{d∈b} Z_{d,a,k}, the time
//     a-jobs spend beside b-jobs is the time b-jobs spend beside a-jobs;
//   - degree, within label a: 2·Z_{c,a,k}/|c| ≤ Σ_{c'∈a} Z_{c',a,k}, no job
//     is beside its own label for longer than all the others together.
//
// Both formulations have the same optimum. Any pairing of jobs gives such
// columns. Conversely, for a ≠ b, times t_i of the a-jobs and u_j of the
// b-jobs with equal sums are the margins of a nonnegative matrix of pair
// times (t_i·u_j/Σu); within a label, times d_i with 2·d_i ≤ Σd are the
// margins of a symmetric nonnegative matrix with a zero diagonal (pair the
// two largest, repeatedly). TestSharingPartnerFormulationExact checks the
// two optima against each other.
func (sc *sharingClasses) partnerColumns(p *Problem, found []pairKey, rates map[pairKey][2]float64, byLabel map[string][]int) {
	add := func(c int, with string, k int, rate, pairTime float64) int {
		sc.cols = append(sc.cols, sharingColumn{k: k, gpus: float64(p.Jobs[sc.rc.rep[c]].Gang) / 2, a: sc.labels[c], b: with, pairTime: pairTime,
			sides: []columnSide{{c: c, with: with, share: 1 / float64(sc.rc.size[c]), rate: rate}}})
		return len(sc.cols) - 1
	}
	for _, key := range found { // a's label index ≤ b's
		r := rates[key]
		if key.a != key.b {
			row := columnRow{name: "balance", op: lp.EQ}
			for _, c := range byLabel[key.a] {
				row.cols, row.coefs = append(row.cols, add(c, key.b, key.k, r[0], 1)), append(row.coefs, 1)
			}
			for _, d := range byLabel[key.b] {
				row.cols, row.coefs = append(row.cols, add(d, key.a, key.k, r[1], 0)), append(row.coefs, -1)
			}
			sc.rows = append(sc.rows, row)
			continue
		}
		var cols []int
		for _, c := range byLabel[key.a] {
			cols = append(cols, add(c, key.b, key.k, sameLabelRate(r), 0.5))
		}
		if len(cols) < 2 {
			continue // one class (of two jobs or more): its degree row always holds
		}
		// The label's total, a column of no class, keeps the degree rows
		// linear in the classes: S = Σ Z, then 2·Z_c/|c| − S ≤ 0.
		sc.cols = append(sc.cols, sharingColumn{k: key.k})
		total := len(sc.cols) - 1
		sum := columnRow{name: "label total", op: lp.EQ, cols: []int{total}, coefs: []float64{-1}}
		for _, q := range cols {
			sum.cols, sum.coefs = append(sum.cols, q), append(sum.coefs, 1)
			sc.rows = append(sc.rows, columnRow{name: "degree", op: lp.LE, cols: []int{q, total}, coefs: []float64{2 * sc.cols[q].sides[0].share, -1}})
		}
		sc.rows = append(sc.rows, sum)
	}
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

// heldLevelSlack is how far below the max-min level
// SharingMaxMinThenTotal's second LP may go, relative: the solvers' noise
// (LP-NOTES), the largest slack water filling allows itself (levelSlack).
const heldLevelSlack = 1e-7

// sharingModel is the class LP: x the time alone, y the pairs' time, thr[c]
// the terms of a c-job's throughput; with max-min, level the level,
// levelRows[c] the terms of c's normalised throughput (over ref) and
// levelRow[c] its row; with gains, gain[c] the column of c's rise in
// water filling's round LP.
type sharingModel struct {
	m         *lp.Model
	x         lp.Grid
	y         []lp.Var
	thr       [][]lp.Term
	level     lp.Var
	levelRows [][]lp.Term
	levelRow  []lp.Row
	gain      []lp.Var
}

// levelForm says how model writes a max-min's level rows: class c's
// normalised throughput less slope[c] times the level (nil: 1 for every
// class), at least 0; or, with gains, less a gain column of c's, for water
// filling's round LP (sharingRoundLP), whose rounds set the bounds.
type levelForm struct {
	slope []float64
	gains bool
}

// model builds the class LP. norm nil means max total, of
// sumWeight_c·throughput_c (sumWeight nil: 1); otherwise max-min of
// norm_c·throughput_c, its level rows written as form says.
func (sc sharingClasses) model(p *Problem, norm, sumWeight []float64, form levelForm) sharingModel {
	nc, types := sc.rc.numClasses(), p.Capacity.NumTypes()
	m := lp.NewModel(lp.Maximize)
	x := m.AddGrid("X", nc, types, 0, 1)
	y := make([]lp.Var, len(sc.cols))
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
	for q, col := range sc.cols {
		y[q] = m.AddVar(fmt.Sprintf("Y[%d,%d]", q, col.k), 0, lp.Inf, 0)
		if col.gpus != 0 {
			capRow[col.k] = append(capRow[col.k], lp.Term{Var: y[q], Coef: col.gpus})
		}
		for _, sd := range col.sides {
			timeRow[sd.c] = append(timeRow[sd.c], lp.Term{Var: y[q], Coef: sd.share})
			if sd.rate != 0 {
				thr[sd.c] = append(thr[sd.c], lp.Term{Var: y[q], Coef: sd.share * sd.rate})
			}
		}
	}
	for _, r := range sc.rows {
		terms := make([]lp.Term, len(r.cols))
		for i, q := range r.cols {
			terms[i] = lp.Term{Var: y[q], Coef: r.coefs[i]}
		}
		m.AddConstraint(r.name, terms, r.op, 0)
	}
	for c := range timeRow {
		m.AddConstraint("time", timeRow[c], lp.LE, 1)
	}
	for k, n := range p.Capacity.Count {
		m.AddConstraint("capacity", capRow[k], lp.LE, n)
	}
	if norm == nil {
		rows := thr
		if sumWeight != nil {
			rows = make([][]lp.Term, len(thr))
			for c, terms := range thr {
				for _, t := range terms {
					rows[c] = append(rows[c], lp.Term{Var: t.Var, Coef: t.Coef * sumWeight[c]})
				}
			}
		}
		sc.setSumObjective(m, rows)
		return sharingModel{m: m, x: x, y: y, thr: thr}
	}
	// Max-min: norm_c·throughput_c/ref ≥ μ, maximise N·μ.
	ref := sc.levelRef(p, norm)
	mu := m.AddVar("level", 0, lp.Inf, float64(len(p.Jobs)))
	levelRows := make([][]lp.Term, len(thr))
	levelRow := make([]lp.Row, len(thr))
	var gain []lp.Var
	for c, terms := range thr {
		row := make([]lp.Term, 0, len(terms)+1)
		for _, t := range terms {
			row = append(row, lp.Term{Var: t.Var, Coef: t.Coef * norm[c] / ref})
		}
		levelRows[c] = row
		minus := lp.Term{Var: mu, Coef: -1}
		switch {
		case form.gains:
			minus.Var = m.AddVar("gain", 0, 0, 0)
			gain = append(gain, minus.Var)
		case form.slope != nil:
			minus.Coef = -form.slope[c]
		}
		lhs := row
		if minus.Coef != 0 {
			lhs = append(slices.Clip(row), minus)
		}
		levelRow[c] = m.AddConstraint("level", lhs, lp.GE, 0)
	}
	return sharingModel{m: m, x: x, y: y, thr: thr, level: mu, levelRows: levelRows, levelRow: levelRow, gain: gain}
}

// levelRef is the unit of max-min's level: the lowest level a class
// reaches alone on the whole cluster, so that the level is about 1
// (LP-NOTES on scaling).
func (sc sharingClasses) levelRef(p *Problem, norm []float64) float64 {
	ref := math.Inf(1)
	for c, i := range sc.rc.rep {
		ref = math.Min(ref, norm[c]*p.bestAlone(i))
	}
	return ref
}

// setSumObjective sets m's objective to the sum over jobs of the terms of
// their class's row in rows.
func (sc sharingClasses) setSumObjective(m *lp.Model, rows [][]lp.Term) {
	for v, c := range sc.sumObjective(m.NumVars(), rows) {
		if c != 0 {
			m.SetObjective(lp.Var(v), c)
		}
	}
}

// sumObjective returns, for each of vars columns, its coefficient in the
// sum over jobs of the terms of their class's row in rows.
func (sc sharingClasses) sumObjective(vars int, rows [][]lp.Term) []float64 {
	obj := make([]float64, vars)
	for c, terms := range rows {
		for _, t := range terms {
			obj[t.Var] += float64(sc.rc.size[c]) * t.Coef
		}
	}
	return obj
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
	pairAt := map[pairKey]int{} // PairShare index by labels and type
	for q, col := range sc.cols {
		t := max(sol.Value(y[q]), 0)
		if t == 0 || len(col.sides) == 0 { // a label's total has no side
			continue
		}
		tk := p.Capacity.Types[col.k]
		if col.pairTime != 0 {
			key := pairKey{col.a, col.b, col.k}
			at, ok := pairAt[key]
			if !ok {
				at = len(res.Pairs)
				pairAt[key] = at
				res.Pairs = append(res.Pairs, PairShare{A: col.a, B: col.b, Type: tk})
			}
			res.Pairs[at].Time += col.pairTime * t
		}
		g := float64(p.Jobs[sc.rc.rep[col.sides[0].c]].Gang)
		for _, sd := range col.sides {
			partners[sd.c] = append(partners[sd.c], PartnerShare{With: sd.with, Type: tk, Time: sd.share * t})
			gpus[sd.c][col.k] += sd.share * t * g / 2
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
		clampToTime(res, i)
	}
	clampToCapacity(res.Allocation, p.Capacity)
	return res
}

// clampToTime scales down job i's times, GPUs and throughput where its
// time alone and co-located add up to more than all of its time: solver
// noise, as clampToCapacity repairs (the partner formulation's equality
// rows left 1.2e-7 with CLP).
func clampToTime(r *SharingResult, i int) {
	total := 0.0
	for _, f := range r.Alone[i] {
		total += f
	}
	for _, ps := range r.Partners[i] {
		total += ps.Time
	}
	if total <= 1 {
		return
	}
	for k := range r.Alone[i] {
		r.Alone[i][k] /= total
		r.Allocation.GPUs[i][k] /= total
	}
	for q := range r.Partners[i] {
		r.Partners[i][q].Time /= total
	}
	r.Throughput[i] /= total
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
