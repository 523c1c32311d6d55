package alloc

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
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

// TestSharingHierarchicalAsHierarchical: without pairs, SharingHierarchical
// allocates as Hierarchical, on Gavel's example (§4.3) and on
// TestHierarchicalFIFO's two entities, one of them FIFO.
func TestSharingHierarchicalAsHierarchical(t *testing.T) {
	gavel := gavelHierarchyExample(t)
	fifo := gavelHierarchyExample(t)
	fifo.Tenants = []Tenant{{ID: "fair", Weight: 1}, {ID: "queue", Weight: 2}}
	for i := range fifo.Jobs {
		fifo.Jobs[i].Owner = fifo.Tenants[i%2].ID
	}
	for _, tc := range []struct {
		name string
		p    *Problem
		fifo []TenantID
		want [][]float64
	}{
		{"gavel", gavel, nil, [][]float64{{1}, {1}, {1}, {1}}},
		// 4 GPUs: the queue's head j1 rises twice as fast as each of the
		// fair entity's jobs (weight 2 against 1 shared by two), to its
		// cap; then j3, the next in line, rises with j0 and j2.
		{"fifo", fifo, []TenantID{"queue"}, [][]float64{{1}, {1}, {1}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, gpus := range []float64{4, 3, 2} {
				tc.p.Capacity.Count = []float64{gpus}
				h, err := Hierarchical{FIFO: tc.fifo}.Allocate(context.Background(), tc.p)
				if err != nil {
					t.Fatal(err)
				}
				s, err := SpaceSharing{Objective: SharingHierarchical, FIFO: tc.fifo}.Allocate(context.Background(), tc.p)
				if err != nil {
					t.Fatal(err)
				}
				if gpus == 4 {
					if diff := cmp.Diff(tc.want, s.GPUs, cmpopts.EquateApprox(0, 1e-7)); diff != "" {
						t.Errorf("4 GPUs (-want +got):\n%s", diff)
					}
				}
				if diff := cmp.Diff(h.GPUs, s.GPUs, cmpopts.EquateApprox(0, 1e-7)); diff != "" {
					t.Errorf("%v GPUs: Hierarchical (-) against SharingHierarchical (+):\n%s", gpus, diff)
				}
			}
		})
	}
}

// TestSharingHierarchicalFIFOErrors: FIFO names tenants, each once.
func TestSharingHierarchicalFIFOErrors(t *testing.T) {
	p := gavelHierarchyExample(t)
	for _, tc := range []struct {
		fifo []TenantID
		want error
	}{
		{[]TenantID{"nobody"}, gpufair.ErrUnknownID},
		{[]TenantID{"u1", "u1"}, gpufair.ErrDuplicate},
	} {
		_, err := SpaceSharing{Objective: SharingHierarchical, FIFO: tc.fifo}.Allocate(context.Background(), p)
		wantRefusal(t, err, "SpaceSharing.FIFO", tc.want)
	}
}

// TestPropertySharingHierarchical: on random tenants (some FIFO) and job
// weights, without
// pairs SharingHierarchical gives every job Hierarchical's throughput;
// with pairs it is Pareto-efficient, and the class and pairwise
// formulations give every job the same throughput.
func TestPropertySharingHierarchical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, labels, pairs, perJob := drawSharingInstance(t)
		nt := rapid.IntRange(1, 3).Draw(t, "tenants")
		var fifo []TenantID
		for s := range nt {
			id := TenantID(fmt.Sprint("u", s))
			p.Tenants = append(p.Tenants, Tenant{ID: id, Weight: float64(rapid.IntRange(1, 3).Draw(t, "tenantWeight"))})
			if rapid.Bool().Draw(t, "fifo") {
				fifo = append(fifo, id)
			}
		}
		for i := range p.Jobs {
			p.Jobs[i].Owner = p.Tenants[rapid.IntRange(0, nt-1).Draw(t, "owner")].ID
			p.Jobs[i].Weight = float64(rapid.IntRange(1, 3).Draw(t, "jobWeight"))
		}
		solve := func(labels []string, pairs []PairRate) *SharingResult {
			r, err := SpaceSharing{Objective: SharingHierarchical, JobTypes: labels, Pairs: pairs, FIFO: fifo}.Solve(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			checkGavelFeasible(t, p, r.Allocation)
			checkPartners(t, p, r)
			return r
		}
		h, err := Hierarchical{FIFO: fifo}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		checkSameThroughputs(t, "without pairs", solve(labels, nil).Throughput, throughputs(p, h))
		shared := solve(labels, pairs)
		checkSharingPareto(t, p, perJob, shared.Throughput)
		checkSameThroughputs(t, "pairwise", shared.Throughput, solve(nil, perJob).Throughput)
	})
}

// checkSameThroughputs fails t unless got and want agree job by job.
func checkSameThroughputs(t *rapid.T, what string, got, want []float64) {
	for i := range got {
		if !relClose(got[i]+1, want[i]+1, 1e-6) {
			t.Fatalf("%s: throughputs %v, want %v", what, got, want)
		}
	}
}
