package alloc_test

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// oefTol is the absolute tolerance for comparing OEF's solved values with
// exact rationals and for checking its constraints: the LPs are solved to
// about 1e-9.
const oefTol = 1e-7

// oefT is what the helpers need of *testing.T and *rapid.T.
type oefT interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// oefJob is one job of an OEF test instance: its owner (an index into the
// users) and its throughput row.
type oefJob struct {
	owner int
	rates []float64
	id    alloc.JobID // "j1", "j2", … by position when empty
}

// oefProblem builds a Problem from per-user jobs. weights nil means 1.
func oefProblem(t oefT, count []float64, weights []float64, jobs []oefJob) *alloc.Problem {
	t.Helper()
	types := make([]topology.GPUType, len(count))
	for k := range count {
		types[k] = topology.GPUType(fmt.Sprintf("T%d", k))
	}
	c, err := alloc.NewCapacity(types, count)
	if err != nil {
		t.Fatal(err)
	}
	nu := 0
	for _, j := range jobs {
		nu = max(nu, j.owner+1)
	}
	nu = max(nu, len(weights))
	users := make([]alloc.Tenant, nu)
	for u := range users {
		users[u] = alloc.Tenant{ID: alloc.TenantID(fmt.Sprintf("u%d", u+1)), Weight: 1}
		if weights != nil {
			users[u].Weight = weights[u]
		}
	}
	js := make([]alloc.Job, len(jobs))
	ids := make([]string, len(jobs))
	rows := make([][]float64, len(jobs))
	for i, j := range jobs {
		js[i] = alloc.Job{ID: j.id, Owner: users[j.owner].ID, Gang: 1, Weight: 1}
		if j.id == "" {
			js[i].ID = alloc.JobID(fmt.Sprintf("j%d", i+1))
		}
		ids[i], rows[i] = string(js[i].ID), j.rates
	}
	tp, err := speedup.New(ids, types, rows)
	if err != nil {
		t.Fatal(err)
	}
	p, err := alloc.NewProblem(c, users, js, tp)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// usersProblem builds a Problem with one job per user, the rows of rates.
func oefUsersProblem(t oefT, count []float64, weights []float64, rates [][]float64) *alloc.Problem {
	jobs := make([]oefJob, len(rates))
	for i, r := range rates {
		jobs[i] = oefJob{owner: i, rates: r}
	}
	return oefProblem(t, count, weights, jobs)
}

// allocateOEF runs OEF in mode with method and fails the test on error or
// an allocation that breaks capacity.
func allocateOEF(t oefT, p *alloc.Problem, mode alloc.OEFMode, method alloc.OEFMethod) *alloc.Allocation {
	t.Helper()
	a, err := alloc.OEF{Mode: mode, Settings: &alloc.OEFSettings{Method: method}}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatalf("OEF{%v, %v}.Allocate() error = %v", mode, method, err)
	}
	if err := a.Validate(p.Capacity); err != nil {
		t.Fatalf("OEF{%v}.Allocate() returned an invalid allocation: %v", mode, err)
	}
	return a
}

// speedups returns each job's throughputs relative to the slowest type, the
// rates OEF values bundles with.
func oefSpeedups(t oefT, p *alloc.Problem) [][]float64 {
	t.Helper()
	n, err := p.Throughputs.RelativeToSlowestRunnable()
	if err != nil {
		t.Fatal(err)
	}
	return n.Values()
}

// userBundles sums the jobs' rows of a by owner, in the order of p.Users.
func oefUserBundles(p *alloc.Problem, a *alloc.Allocation) [][]float64 {
	idx := make(map[alloc.TenantID]int, len(p.Tenants))
	for u, usr := range p.Tenants {
		idx[usr.ID] = u
	}
	b := make([][]float64, len(p.Tenants))
	for u := range b {
		b[u] = make([]float64, len(a.Types))
	}
	for i, j := range p.Jobs {
		for k, x := range a.GPUs[i] {
			b[idx[j.Owner]][k] += x
		}
	}
	return b
}

// jobValues returns each job's normalised throughput s_i·x_i.
func oefJobValues(t oefT, p *alloc.Problem, a *alloc.Allocation) []float64 {
	s := oefSpeedups(t, p)
	v := make([]float64, len(s))
	for i := range s {
		v[i] = alloc.Linear(s[i]).Value(a.GPUs[i])
	}
	return v
}

// totalValue returns Σ_i s_i·x_i over the jobs of p.
func oefTotal(t oefT, p *alloc.Problem, a *alloc.Allocation) float64 {
	var sum float64
	for _, v := range oefJobValues(t, p, a) {
		sum += v
	}
	return sum
}

// maxThroughput solves expression (4), the most efficient allocation with
// no fairness constraint, over the users of one-job-per-user problems, and
// returns its total.
func oefMaxThroughput(t oefT, s [][]float64, count []float64) float64 {
	t.Helper()
	m := lp.NewModel(lp.Maximize)
	x := m.AddGrid("x", len(s), len(count), 0, lp.Inf)
	for k, n := range count {
		m.AddConstraint("capacity", x.ColTerms(k, nil), lp.LE, n)
	}
	for i, r := range s {
		for k, w := range r {
			m.SetObjective(x.At(i, k), w)
		}
	}
	sol, err := lp.Solve(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sol.Objective
}

func oefApprox(a, b float64) bool { return a-b <= oefTol && b-a <= oefTol }
