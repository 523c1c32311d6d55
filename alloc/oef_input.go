package alloc

import (
	"errors"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
)

// oefInstance is OEF's view of a Problem: virtual users (one per user and
// job type, OEF section 4.2.4) with their speedup vectors and weights.
type oefInstance struct {
	count  []float64   // m_k
	speed  [][]float64 // speed[v]: v's speedups relative to the slowest type
	weight []float64   // π_v: the owner's weight over its number of job types
	jobs   [][]int     // jobs[v]: v's jobs, indices into Problem.Jobs
}

// newOEFInstance validates p and builds its virtual users, in order of
// their first job.
func newOEFInstance(p *Problem) (*oefInstance, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, err
	}
	if p.Tenants == nil {
		return nil, gpufair.Invalid("Tenants", "", gpufair.ErrEmpty, "OEF allocates to users: Problem.Tenants is nil")
	}
	for i, j := range p.Jobs {
		if isZero(p.Throughputs.Row(i)) {
			return nil, gpufair.Invalid("Throughputs", string(j.ID), gpufair.ErrValue, "the job runs on no GPU type")
		}
	}
	norm, err := p.Throughputs.RelativeToSlowest()
	if err != nil {
		var cell *speedup.CellError
		if errors.As(err, &cell) {
			return nil, gpufair.Invalid("Throughputs", cell.Row, gpufair.ErrValue,
				"zero throughput on %q, the slowest type, OEF's normaliser", cell.Type)
		}
		return nil, gpufair.Invalid("Throughputs", "", gpufair.ErrValue, "%v", err)
	}
	owner := make(map[TenantID]int, len(p.Tenants))
	for u, usr := range p.Tenants {
		owner[usr.ID] = u
	}
	ownerOf := func(i int) int { return owner[p.Jobs[i].Owner] }
	types := groupRows(len(p.Jobs), func(i int) []float64 {
		return append([]float64{float64(ownerOf(i))}, norm.Row(i)...)
	})
	nv := types.numClasses()
	in := &oefInstance{
		count:  append([]float64(nil), p.Capacity.Count...),
		speed:  make([][]float64, nv),
		weight: make([]float64, nv),
		jobs:   make([][]int, nv),
	}
	typesOf := make([]int, len(p.Tenants))
	for v, i := range types.rep {
		in.speed[v] = norm.Row(i)
		typesOf[ownerOf(i)]++
	}
	for i, v := range types.of {
		in.jobs[v] = append(in.jobs[v], i)
	}
	for v, i := range types.rep {
		u := ownerOf(i)
		in.weight[v] = p.Tenants[u].Weight / float64(typesOf[u])
	}
	return in, nil
}

func isZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// identityClasses puts each of n rows in a class of its own.
func identityClasses(n int) rowClasses {
	rc := rowClasses{rep: make([]int, n), size: make([]int, n), of: make([]int, n)}
	for i := range n {
		rc.rep[i], rc.size[i], rc.of[i] = i, 1, i
	}
	return rc
}

// oefLP is the data of OEF's LP over classes of interchangeable virtual
// users: class c has speedups s[c] and weight w[c], the sum of its
// members' weights. Solvers return y[c], the bundle of one unit of weight.
type oefLP struct {
	s     [][]float64
	w     []float64
	count []float64
}

// classProblem merges the virtual users of each class of cls.
func (in *oefInstance) classProblem(cls rowClasses) *oefLP {
	q := &oefLP{s: make([][]float64, cls.numClasses()), w: make([]float64, cls.numClasses()), count: in.count}
	for c, v := range cls.rep {
		q.s[c] = in.speed[v]
	}
	for v, c := range cls.of {
		q.w[c] += in.weight[v]
	}
	return q
}

// repair clips y to be non-negative and scales down every type used beyond
// its count, the small violations a simplex vertex may carry (LP-NOTES.md).
// Scaling a type down keeps every capacity row satisfied.
func (q *oefLP) repair(y [][]float64) {
	for k, m := range q.count {
		var used float64
		for c := range y {
			y[c][k] = max(y[c][k], 0)
			used += q.w[c] * y[c][k]
		}
		if used > m {
			for c := range y {
				y[c][k] *= m / used
			}
		}
	}
}

// allocation shares out each class's per-weight bundle: virtual user v gets
// π_v·y[class of v], split among v's jobs in proportion to Weight·Gang.
func (in *oefInstance) allocation(p *Problem, cls rowClasses, y [][]float64) *Allocation {
	a := NewAllocation(p.JobIDs(), p.Capacity)
	for v, jobs := range in.jobs {
		var total float64
		for _, i := range jobs {
			total += p.Jobs[i].Weight * float64(p.Jobs[i].Gang)
		}
		bundle := y[cls.of[v]]
		for _, i := range jobs {
			share := in.weight[v] * p.Jobs[i].Weight * float64(p.Jobs[i].Gang) / total
			for k, x := range bundle {
				a.GPUs[i][k] = share * x
			}
		}
	}
	return a
}
