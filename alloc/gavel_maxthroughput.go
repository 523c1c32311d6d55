package alloc

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpufair/gpufair/lp"
)

// MaxTotalThroughput is Gavel's throughput-maximising policy (§3.1): over
// time fractions X,
//
//	maximise  Σ_m Σ_k T_mk·X_mk
//	s.t.      Σ_k X_mk ≤ 1 for every job m,  Σ_m Gang_m·X_mk ≤ Count_k for every type k,  X ≥ 0.
//
// The sum adds the rates of Problem.Throughputs as they are: to sum
// normalised throughputs instead (speedups, or rates relative to an equal
// share), build the Problem from speedup.Matrix.RelativeToEqualShare or
// RelativeTo. Jobs with a zero row get nothing.
//
// Cost: one LP with classes×types columns and classes+types rows, a class
// being the jobs of equal rates and gang (interchangeable here: the
// optimum that splits each class evenly is returned). From
// throughputDualMinClasses classes on, its dual, which has one variable
// per type, is solved by cutting planes instead, and the allocation
// recovered from the prices and certified optimal by duality
// (gavel_maxthroughput_dual.go): 20,000 distinct jobs × 4 types in tens of
// milliseconds rather than seconds.
//
// Properties: Pareto-efficient in effective throughput (any improvement for
// one job that hurts nobody would raise the sum) and work-conserving. It is
// not fair: it gives nothing to jobs that make poor use of every type, so it
// is neither sharing-incentive nor envy-free. The optimum is often not
// unique; which optimal vertex the solver returns is deterministic for a
// given input but otherwise unspecified.
type MaxTotalThroughput struct {
	// LP tunes the LP solve; nil means lp's defaults.
	LP *lp.Settings
}

// Name returns "max-total-throughput".
func (MaxTotalThroughput) Name() string { return "max-total-throughput" }

// Allocate returns a throughput-maximising allocation.
func (pol MaxTotalThroughput) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	rc := p.rateClasses(nil)
	if rc.numClasses() >= throughputDualMinClasses && !gonumBackend(pol.LP) {
		x, ok, err := newThroughputDual(p, rc).solve(ctx, pol.LP)
		if err != nil {
			return nil, fmt.Errorf("alloc: %s: %w", pol.Name(), err)
		}
		if ok {
			return timeFractionsToAllocation(p, rc.split(x)), nil
		}
	}
	return pol.allocateLP(ctx, p, rc)
}

// allocateLP solves the full LP over the classes rc of p (normalised).
func (pol MaxTotalThroughput) allocateLP(ctx context.Context, p *Problem, rc rowClasses) (*Allocation, error) {
	m := lp.NewModel(lp.Maximize)
	v := addClassTimeFractions(m, p, rc)
	for c := range v.rc.numClasses() {
		for _, t := range v.throughput(c, 1) {
			m.SetObjective(t.Var, t.Coef)
		}
	}
	v.greedyStart(m)
	sol, err := gavelSolve(ctx, pol.Name(), m, pol.LP)
	if err != nil {
		return nil, err
	}
	return v.allocation(sol), nil
}

// greedyStart hints a feasible start to the LP solver (lp.Model.SetStart):
// (class, type) pairs in order of throughput per GPU, each given as much
// time as its class and the type have left. The pure-Go simplex then
// skips its first phase and starts from a vertex close to the optimum;
// CLP ignores the hints.
func (v timeFractions) greedyStart(m *lp.Model) {
	type cell struct {
		c, k  int
		value float64
	}
	n, types := v.rc.numClasses(), v.p.Capacity.NumTypes()
	cells := make([]cell, 0, n*types)
	gang := v.gang
	for c, i := range v.rc.rep {
		for k, r := range v.p.Throughputs.Row(i) {
			if r > 0 {
				cells = append(cells, cell{c, k, r / gang[c]})
			}
		}
	}
	slices.SortStableFunc(cells, func(a, b cell) int { return cmp.Compare(b.value, a.value) })
	time := make([]float64, n)
	for c := range time {
		time[c] = float64(v.rc.size[c])
	}
	left := slices.Clone(v.p.Capacity.Count)
	x := make([][]float64, n)
	for c := range x {
		x[c] = make([]float64, types)
	}
	for _, e := range cells {
		t := min(time[e.c], left[e.k]/gang[e.c])
		if t <= 0 {
			continue
		}
		x[e.c][e.k] = t
		time[e.c] -= t
		left[e.k] -= t * gang[e.c]
	}
	for c, row := range x {
		for k, t := range row {
			m.SetStart(v.x.At(c, k), t)
		}
	}
}
