package alloc_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/gen"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// maxMinSizes keeps generated problems small enough for the pure-Go LP
// backend as well (the masters have K+1 variables; the Pareto check is an
// LP over every job and type).
var maxMinSizes = gen.ProblemSizes{Types: 3, Users: 3, Jobs: 8, Zeros: true}

// fitShares scales p's counts down, when needed, so that every job's
// weighted equal share w_m/Σw of every type fits its gang (Σ_k share ≤
// gang): the condition under which the share itself is a Gavel allocation.
func fitShares(p *alloc.Problem) {
	var total, wsum float64
	for _, n := range p.Capacity.Count {
		total += n
	}
	for _, j := range p.Jobs {
		wsum += j.Weight
	}
	f := 1.0
	for _, j := range p.Jobs {
		f = min(f, float64(j.Gang)*wsum/(total*j.Weight))
	}
	for k := range p.Capacity.Count {
		p.Capacity.Count[k] *= f
	}
}

// nearTie reports whether some job has two positive rates within a
// relative 1e-3 of each other.
func nearTie(p *alloc.Problem) bool {
	for _, r := range p.Throughputs.Values() {
		for k, a := range r {
			for _, b := range r[k+1:] {
				if a > 0 && b > 0 && math.Abs(a-b) < 1e-3*max(a, b) {
					return true
				}
			}
		}
	}
	return false
}

// allocateWithin runs pol with a deadline, so that a solver that fails to
// converge fails the property instead of hanging it.
func allocateWithin(pol alloc.Policy, p *alloc.Problem) (*alloc.Allocation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return pol.Allocate(ctx, p)
}

func jobWeights(p *alloc.Problem) []float64 {
	w := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		w[i] = j.Weight
	}
	return w
}

func gangCaps(p *alloc.Problem) []float64 {
	g := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		g[i] = float64(j.Gang)
	}
	return g
}

func linears(p *alloc.Problem) []alloc.Linear {
	var out []alloc.Linear
	for _, v := range p.Valuations() {
		out = append(out, v.(alloc.Linear))
	}
	return out
}

// TestPropertyMaxMinSharingIncentive checks Gavel §4.4's claim where it
// holds: when every job's weighted equal share fits its time, the share is
// feasible with the same normalised value C/Σw for everyone, so the
// max-min level, and every job, is at least there. Water filling only
// raises values. The same holds for space sharing's max-min and water
// filling, without pairs here (with pairs, no job's level falls:
// TestSharingWaterFillingLeximin).
func TestPropertyMaxMinSharingIncentive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := gen.Problem(maxMinSizes).Draw(t, "problem")
		fitShares(p)
		for _, pol := range []alloc.Policy{alloc.MaxMin{}, alloc.WaterFilling{},
			alloc.SpaceSharing{Objective: alloc.SharingMaxMin}, alloc.SpaceSharing{Objective: alloc.SharingWaterFilling}} {
			a, err := allocateWithin(pol, p)
			if err != nil {
				t.Fatalf("%s: %v", pol.Name(), err)
			}
			r, err := alloc.SharingIncentive(a, p.Capacity, p.Valuations(), jobWeights(p))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Holds {
				t.Fatalf("%s: job %d margin %v below its weighted equal share\nrates %v count %v\nalloc %v", pol.Name(), r.Worst, r.Margin[r.Worst], p.Throughputs.Values(), p.Capacity.Count, a.GPUs)
			}
		}
	})
}

// paretoSlack is the total relative gain a Pareto witness must exceed to
// count: the decomposition solves each round to 1e-9 of the level, or to
// 1e-6 when CLP's tolerances stall it (stallTol), and a job holding a
// small share sees that error relative to its own value, accumulated over
// the rounds (rapid found gains of 1.43e-6 and 1.06e-5 from GPUs left idle
// by 4.8e-7 in hierarchical water filling).
const paretoSlack = 1e-4

// strictLoss is the largest relative loss a Pareto witness may impose on a
// row and still count as an improvement.
const strictLoss = 1e-9

// TestPropertyWaterFillingPareto checks Gavel §4.4's Pareto efficiency of
// water filling under the per-job caps (Σ_k X_mk ≤ 1, a cap of gang GPUs),
// for the single-level and the hierarchical forms, over MaxMin's LP and
// over space sharing's (without pairs: with them, checkSharingPareto).
func TestPropertyWaterFillingPareto(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := gen.Problem(maxMinSizes).Draw(t, "problem")
		if nearTie(p) {
			// A job almost indifferent between two types turns the LP's
			// rounding (a time row slack by 2.5e-9) into a Pareto gain of
			// 3.5e-4 for another job (rapid found rates 1.0000610 and
			// 1.0000305): a lever on solver noise, not a policy fault.
			t.Skip("a job has two rates within 1e-3 of each other")
		}
		var fifo []alloc.TenantID
		for _, u := range p.Tenants {
			if rapid.Bool().Draw(t, "fifo") {
				fifo = append(fifo, u.ID)
			}
		}
		for _, pol := range []alloc.Policy{alloc.WaterFilling{}, alloc.Hierarchical{FIFO: fifo},
			alloc.SpaceSharing{Objective: alloc.SharingWaterFilling}, alloc.SpaceSharing{Objective: alloc.SharingHierarchical, FIFO: fifo}} {
			a, err := allocateWithin(pol, p)
			if err != nil {
				t.Fatalf("%s: %v", pol.Name(), err)
			}
			r, err := alloc.ParetoEfficiency(context.Background(), a, p.Capacity, linears(p), &alloc.ParetoSettings{RowCap: gangCaps(p)})
			if err != nil {
				t.Fatal(err)
			}
			// The checker accepts witnesses that lower a row by up to
			// about the LP's tolerance. A job almost indifferent between
			// two types lets another gain a lot for a tiny loss: rapid
			// found rates 1.00024 and 1.00049 (a gain of 6e-4 for a loss
			// of 5e-8) and a job whose cap on its second type is 2.4e-5
			// below the level (3e-5 for 2.3e-10). Such levers trade at
			// most 1/(relative rate difference), up to 1e7 in cases
			// rapid found; a real improvement lowers no row beyond
			// rounding, so only witnesses whose losses are below
			// strictLoss count.
			if r.Gain > paretoSlack && -slices.Min(r.Gains) <= strictLoss {
				t.Fatalf("%s: not Pareto-efficient under the caps: gains %v\nrates %v\nalloc %v", pol.Name(), r.Gains, p.Throughputs.Values(), a.GPUs)
			}
		}
	})
}

// TestPropertyMaxMinDeterministic checks that the same input gives a
// bit-identical allocation.
func TestPropertyMaxMinDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := gen.Problem(maxMinSizes).Draw(t, "problem")
		for _, pol := range []alloc.Policy{alloc.MaxMin{}, alloc.MaxMinAgnostic{}, alloc.WaterFilling{}, alloc.Hierarchical{}} {
			a, err := allocateWithin(pol, p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := allocateWithin(pol, p)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: two runs differ:\n%v\n%v", pol.Name(), a.GPUs, b.GPUs)
			}
		}
	})
}

// gavelOnOEFExample is an OEF example's speedups as jobs of gang 1, one per user.
func gavelOnOEFExample(t testing.TB, e testcases.OEFExample, speedups [][]float64) *alloc.Problem {
	t.Helper()
	types := make([]topology.GPUType, len(e.Types))
	for k, n := range e.Types {
		types[k] = topology.GPUType(n)
	}
	jobs := make([]alloc.Job, len(e.Users))
	for i, u := range e.Users {
		jobs[i] = alloc.Job{ID: alloc.JobID(u), Gang: 1, Weight: 1}
	}
	tp, err := speedup.New(e.Users, types, speedups)
	if err != nil {
		t.Fatal(err)
	}
	p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: e.Count}, nil, jobs, tp)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMaxMinOEFExpression3 reproduces OEF §2.4's expression (3), Gavel's
// allocation of the speedups <1,2>, <1,3>, <1,4> on one GPU of each type,
// and its properties: sharing-incentive, not envy-free (u3 envies u2), and
// Pareto-efficient only under Gavel's per-job cap (ERRATA.md). Water
// filling, and space sharing's max-min and water filling without pairs,
// give the same allocation, so they lack envy-freeness too.
func TestMaxMinOEFExpression3(t *testing.T) {
	for _, pol := range maxMinFamily {
		t.Run(pol.Name(), func(t *testing.T) { checkOEFExpression3(t, pol) })
	}
}

// maxMinFamily are the policies that allocate as MaxMin where every job
// can use every type and no pairs are given.
var maxMinFamily = []alloc.Policy{alloc.MaxMin{}, alloc.WaterFilling{},
	alloc.SpaceSharing{Objective: alloc.SharingMaxMin}, alloc.SpaceSharing{Objective: alloc.SharingWaterFilling}}

// checkOEFExpression3 checks pol's allocation of OEF's example against
// expression (3) and its verdicts.
func checkOEFExpression3(t *testing.T, pol alloc.Policy) {
	e := testcases.OEFGavel()
	p := gavelOnOEFExample(t, e, e.Speedups)
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range e.Alloc {
		for k := range e.Alloc[i] {
			if d := a.GPUs[i][k] - e.Alloc[i][k]; d > 1e-7 || d < -1e-7 {
				t.Fatalf("%s = %v, want expression (3) %v", pol.Name(), a.GPUs, e.Alloc)
			}
		}
	}
	envy, err := alloc.EnvyFreeness(a, p.Valuations(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if envy.Holds || envy.Envier != e.Envier || envy.Envied != e.Envied {
		t.Errorf("envy: holds %v, worst pair (%d, %d); want u3 envying u2", envy.Holds, envy.Envier, envy.Envied)
	}
	si, err := alloc.SharingIncentive(a, p.Capacity, p.Valuations(), nil)
	if err != nil || !si.Holds {
		t.Errorf("sharing incentive: %+v, %v", si, err)
	}
	capped, err := alloc.ParetoEfficiency(context.Background(), a, p.Capacity, linears(p), &alloc.ParetoSettings{RowCap: gangCaps(p)})
	if err != nil || !capped.Holds {
		t.Errorf("Pareto under the per-job cap: %+v, %v", capped, err)
	}
	free, err := alloc.ParetoEfficiency(context.Background(), a, p.Capacity, linears(p), nil)
	if err != nil || free.Holds {
		t.Errorf("Pareto without caps: holds %v (%v), want a trade that helps (u1 and u2 trade)", free != nil && free.Holds, err)
	}
}

// policyMechanism runs pol on reported speedups, one gang-1 job per row.
func policyMechanism(e testcases.OEFExample, pol alloc.Policy) alloc.Mechanism {
	return func(ctx context.Context, reported [][]float64) (*alloc.Allocation, error) {
		types := make([]topology.GPUType, len(e.Types))
		for k, n := range e.Types {
			types[k] = topology.GPUType(n)
		}
		jobs := make([]alloc.Job, len(reported))
		ids := make([]string, len(reported))
		for i := range reported {
			ids[i] = fmt.Sprint("r", i)
			jobs[i] = alloc.Job{ID: alloc.JobID(ids[i]), Gang: 1, Weight: 1}
		}
		tp, err := speedup.New(ids, types, reported)
		if err != nil {
			return nil, err
		}
		p, err := alloc.NewProblem(alloc.Capacity{Types: types, Count: e.Count}, nil, jobs, tp)
		if err != nil {
			return nil, err
		}
		return pol.Allocate(ctx, p)
	}
}

// TestMaxMinNotStrategyProof shows OEF §2.4's lie: u1 inflating its speedup
// on GPU2 from 2 to 2.5 gets more throughput under its true speedups, under
// MaxMin and every policy that allocates as it does here.
func TestMaxMinNotStrategyProof(t *testing.T) {
	for _, pol := range maxMinFamily {
		t.Run(pol.Name(), func(t *testing.T) { checkInflationPays(t, pol) })
	}
}

// checkInflationPays checks that u1's inflated report pays under pol, and
// that ProbeStrategyProofness finds a profitable lie.
func checkInflationPays(t *testing.T, pol alloc.Policy) {
	e := testcases.OEFGavel()
	mech := policyMechanism(e, pol)
	truth, err := mech(context.Background(), e.Speedups)
	if err != nil {
		t.Fatal(err)
	}
	lie := [][]float64{{1, 2.5}, e.Speedups[1], e.Speedups[2]}
	lied, err := mech(context.Background(), lie)
	if err != nil {
		t.Fatal(err)
	}
	u1 := alloc.Linear(e.Speedups[0])
	if gain := u1.Value(lied.GPUs[0]) / u1.Value(truth.GPUs[0]); gain <= 1+1e-6 {
		t.Errorf("u1's true throughput ratio after lying = %v, want > 1", gain)
	}
	r, err := alloc.ProbeStrategyProofness(context.Background(), mech, e.Speedups, &alloc.ProbeSettings{Trials: -1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holds {
		t.Errorf("the probe found no profitable inflation")
	}
}
