package alloc

import (
	"context"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/lp"
)

// TestSharingWaterFillingLeximin: SharingWaterFilling without pairs reaches
// WaterFilling's levels, job for job in sorted order (the leximin vector
// is unique); with pairs, its lowest level is SharingMaxMin's, it is
// leximin-optimal and Pareto-efficient, and the class and pairwise
// formulations reach the same levels.
func TestSharingWaterFillingLeximin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, labels, pairs, perJob := drawSharingInstance(t)
		solve := func(obj SharingObjective, labels []string, pairs []PairRate) *SharingResult {
			r, err := SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs}.Solve(context.Background(), p)
			if err != nil {
				t.Fatalf("%d: %v", obj, err)
			}
			checkGavelFeasible(t, p, r.Allocation)
			checkPartners(t, p, r)
			return r
		}
		plain, err := WaterFilling{}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		alone := solve(SharingWaterFilling, labels, nil)
		checkSameLevels(t, "without pairs", sortedLevels(p, alone.Throughput), sortedLevels(p, throughputs(p, plain)))

		shared := solve(SharingWaterFilling, labels, pairs)
		levels := sortedLevels(p, shared.Throughput)
		if mm := sortedLevels(p, solve(SharingMaxMin, labels, pairs).Throughput); !relClose(levels[0], mm[0], 1e-6) {
			t.Fatalf("lowest level %v, max-min's %v", levels[0], mm[0])
		}
		checkLeximin(t, p, perJob, shared.Throughput)
		checkSharingPareto(t, p, perJob, shared.Throughput)
		pairwise := solve(SharingWaterFilling, nil, perJob)
		checkSameLevels(t, "pairwise", levels, sortedLevels(p, pairwise.Throughput))
	})
}

// sortedLevels returns max-min's normalised throughputs,
// Gang·throughput/(Weight·equal-share throughput), in increasing order.
func sortedLevels(p *Problem, thr []float64) []float64 {
	eq, _ := p.equalShareThroughputs()
	v := make([]float64, len(thr))
	for i, x := range thr {
		v[i] = x * float64(p.Jobs[i].Gang) / (p.Jobs[i].Weight * eq[i])
	}
	slices.Sort(v)
	return v
}

// checkSameLevels fails t unless got and want agree level by level.
func checkSameLevels(t *rapid.T, what string, got, want []float64) {
	for i := range got {
		if !relClose(got[i], want[i], 1e-6) {
			t.Fatalf("%s: levels %v, want %v", what, got, want)
		}
	}
}

// checkLeximin checks that no job's level can rise, in Gavel's pairwise
// LP, while every job at or below it keeps its own: the allocation
// maximises the sorted levels lexicographically (were one to rise so, a
// small step towards it would raise the sorted vector; and where none can,
// no allocation is lexicographically above).
func checkLeximin(t *rapid.T, p *Problem, perJob []PairRate, thr []float64) {
	eq, _ := p.equalShareThroughputs()
	level := make([]float64, len(thr))
	for i, x := range thr {
		level[i] = x * float64(p.Jobs[i].Gang) / (p.Jobs[i].Weight * eq[i])
	}
	for j := range thr {
		m, rows := pairwiseSharingLP(p, perJob)
		for v := range m.NumVars() {
			m.SetObjective(lp.Var(v), 0)
		}
		for _, term := range rows[j] {
			m.SetObjective(term.Var, term.Coef)
		}
		for i, row := range rows {
			if i != j && level[i] <= level[j]*(1+1e-9) {
				m.AddConstraint("kept", row, lp.GE, thr[i]*(1-1e-9))
			}
		}
		sol, err := lp.Solve(context.Background(), m, nil)
		if err != nil {
			t.Fatalf("raising job %d: %v", j, err)
		}
		if sol.Objective > thr[j]*(1+1e-6)+1e-9 {
			t.Fatalf("job %d can rise from %v to %v while every job at or below its level %v keeps its own (levels %v)", j, thr[j], sol.Objective, level[j], level)
		}
	}
}
