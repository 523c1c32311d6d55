package alloc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpufair/gpufair/topology"
)

// ftfWorkload is gavelWorkload with each job's work left, time since it
// started and isolated time drawn as a scheduler mid-run would see them:
// steps for 1 to 100 hours alone at its isolated rate, elapsed 0 to 50 hours,
// isolated elapsed 0.5 to 1.5 times the elapsed.
func ftfWorkload(b testing.TB, jobs int, seed uint64) (*Problem, FinishTimeFairness) {
	p := gavelWorkload(b, jobs, seed)
	r := rand.New(rand.NewPCG(seed, 2))
	rates, _ := p.isolatedThroughputs()
	pol := FinishTimeFairness{
		RemainingSteps:  make([]float64, jobs),
		Elapsed:         make([]float64, jobs),
		IsolatedElapsed: make([]float64, jobs),
	}
	for m := range jobs {
		pol.RemainingSteps[m] = rates[m] * 3600 * (1 + 99*r.Float64())
		pol.Elapsed[m] = 3600 * 50 * r.Float64()
		pol.IsolatedElapsed[m] = pol.Elapsed[m] * (0.5 + r.Float64())
	}
	return p, pol
}

// ftfPolicy is FinishTimeFairness over ftfWorkload's jobs with method m.
func ftfPolicy(ftf FinishTimeFairness, m MaxMinMethod) Policy {
	ftf.Method = m
	return ftf
}

// makespanPolicy is Makespan over ftfWorkload's work with method m.
func makespanPolicy(ftf FinishTimeFairness, m MaxMinMethod) Policy {
	return Makespan{RemainingSteps: ftf.RemainingSteps, Method: m}
}

// benchMethods times the policy pol gives for each method on ftfWorkload's
// jobs (each with its own work and history, so no two share a class).
func benchMethods(b *testing.B, pol func(FinishTimeFairness, MaxMinMethod) Policy) {
	for _, n := range []int{256, 1024, 4096} {
		for _, m := range []struct {
			name   string
			method MaxMinMethod
		}{{"decomposed", Decomposed}, {"full-lp", FullLP}} {
			b.Run(fmt.Sprintf("jobs=%d/%s", n, m.name), func(b *testing.B) {
				p, ftf := ftfWorkload(b, n, 1)
				pol := pol(ftf, m.method)
				for b.Loop() {
					if _, err := pol.Allocate(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFinishTimeFairness times FinishTimeFairness.Allocate with its
// steps decomposed (the default) and as one LP each.
func BenchmarkFinishTimeFairness(b *testing.B) { benchMethods(b, ftfPolicy) }

// BenchmarkMakespan times Makespan.Allocate decomposed (the default) and as
// one LP.
func BenchmarkMakespan(b *testing.B) { benchMethods(b, makespanPolicy) }

// checkMethodsAgree fails unless, on 150 of ftfWorkload's jobs in each of
// four draws, the allocations the policy pol gives for both methods are
// feasible and score equally (to 1e-7) by score.
func checkMethodsAgree(t *testing.T, pol func(FinishTimeFairness, MaxMinMethod) Policy, score func(*Problem, FinishTimeFairness, *Allocation) float64) {
	t.Helper()
	for seed := range uint64(4) {
		p, ftf := ftfWorkload(t, 150, seed)
		var got [2]float64
		for i, m := range []MaxMinMethod{Decomposed, FullLP} {
			a, err := pol(ftf, m).Allocate(context.Background(), p)
			if err != nil {
				t.Fatalf("seed %d, method %d: %v", seed, m, err)
			}
			checkGavelFeasible(t, p, a)
			checkNoIdleWhileSpare(t, p, a)
			got[i] = score(p, ftf, a)
		}
		if !relClose(got[0], got[1], 1e-7) {
			t.Errorf("seed %d: decomposed %v, full LP %v", seed, got[0], got[1])
		}
	}
}

// checkNoIdleWhileSpare fails if a leaves GPUs of a type idle (beyond 1e-9
// of its count) while a job that can run there has time to spare (beyond
// 1e-9): what fillIdle hands out.
func checkNoIdleWhileSpare(t fataler, p *Problem, a *Allocation) {
	used := a.Used()
	for k, count := range p.Capacity.Count {
		if count-used[k] <= 1e-9*count {
			continue
		}
		for i, j := range p.Jobs {
			time := 0.0
			for _, g := range a.GPUs[i] {
				time += g / float64(j.Gang)
			}
			if p.Throughputs.At(i, k) > 0 && time < 1-1e-9 {
				t.Fatalf("%v of %v GPUs of type %d idle, and job %s, which runs there, has %v of its time", count-used[k], count, k, j.ID, time)
			}
		}
	}
}

// TestFinishTimeFairnessMethodsAgree: the decomposed steps reach the full
// LP's max ρ.
func TestFinishTimeFairnessMethodsAgree(t *testing.T) {
	checkMethodsAgree(t, ftfPolicy, func(p *Problem, ftf FinishTimeFairness, a *Allocation) float64 {
		rho, err := ftf.Rho(p, a)
		if err != nil {
			t.Fatal(err)
		}
		return maxOf(rho)
	})
}

// TestMakespanMethodsAgree: the decomposed LP reaches the full LP's
// makespan.
func TestMakespanMethodsAgree(t *testing.T) {
	checkMethodsAgree(t, makespanPolicy, func(p *Problem, ftf FinishTimeFairness, a *Allocation) float64 {
		return makespanOf(p, a, ftf.RemainingSteps)
	})
}

// TestFinishTimeFairnessStartsWithinCapacity: a decomposed step's solution
// used 2.00000000045 of 2 GPUs, and the next step, started from it, had a
// first point over every type's capacity, so its master was unbounded
// (TestPropertyAuditEveryPolicy found it; Allocate would now fall back to
// the full LP). Each step's solution is fitted to the capacity before the
// next starts from it, and every decomposed step succeeds.
func TestFinishTimeFairnessStartsWithinCapacity(t *testing.T) {
	rates := [][]float64{
		{0.11219689052034373, 0, 0.1632455124539584}, {2.553589458062927, 0.36787944117144233, 0},
		{1.0644944589178595, 0.1353352832366127, 0.44374731008107987}, {1.1331484530668263, 0.1353352832366127, 0.4723665527410147},
		{1.2062302494209807, 0.32465246735834974, 2.553589458062927}, {0.8290291181804003, 1.8682459574322223, 7.865609273944892},
		{0.391605626676799, 0.8290291181804003, 1}, {1.2062302494209807, 0.1353352832366127, 0.1353352832366127},
		{0.7788007830714049, 0.8290291181804003, 0},
	}
	gangs := []int{1, 2, 1, 2, 1, 2, 1, 1, 3}
	weights := []float64{1, 1, 1, 1, 1, 1, 1, 2, 2}
	p := mmProblem(t, []topology.GPUType{"k80", "p100", "v100"}, []float64{2, 1, 2}, rates, gangs, weights)
	pol := everyPolicy(p, 1)[6].(FinishTimeFairness)
	in, err := pol.inputs(p)
	if err != nil {
		t.Fatal(err)
	}
	_, x := in.p.isolatedThroughputs()
	thr := in.p.throughputsOf(x)
	rho := in.maxRho(thr)
	for step := 0; ; step++ {
		lv, classes, ok := in.levelStep(x, thr, rho)
		if !ok {
			t.Fatalf("step %d is not a level problem", step)
		}
		sol, err := solveLevelDecomposed(context.Background(), lv, classMeans(classes, in.p, x), nil)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		nx := fittedFractions(in.p, classTimeFractions(in.p, classes, sol.y))
		nthr := in.p.throughputsOf(nx)
		nrho := in.maxRho(nthr)
		if nrho >= rho || sol.t <= ftfTol {
			break
		}
		x, thr, rho = nx, nthr, nrho
	}
	if want := bisectRho(t, p, pol); !relClose(rho, want, 1e-6) {
		t.Fatalf("max ρ = %v, bisection = %v", rho, want)
	}
}
