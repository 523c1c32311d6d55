package alloc

import (
	"errors"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
)

// oefInstance is OEF's view of a Problem: virtual users (one per user and
// job type, OEF section 4.2.4) with their speedup vectors, weights and
// demand caps.
type oefInstance struct {
	count  []float64   // m_k
	speed  [][]float64 // speed[v]: v's speedups (oefSpeedups)
	weight []float64   // π_v: the owner's weight over its number of job types
	cap    []float64   // cap[v]: the GPUs v may hold at once, +Inf for none; nil when OEF has no caps
	jobs   [][]int     // jobs[v]: v's jobs, indices into Problem.Jobs
	// ghosts are the departed jobs that the solve keeps as classes after
	// those of its rowClasses (oef_ghosts.go).
	ghosts []ghost
}

// newOEFInstance validates p and o's caps and declared job types, and
// builds the virtual users, in order of their first job.
func newOEFInstance(p *Problem, o OEF) (*oefInstance, error) {
	// OEF sees rates only relative to each job's slowest type; those
	// speedups are rounded as validNormalised rounds rates, so that the
	// unit of the rates cannot change them.
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Tenants == nil {
		return nil, gpufair.Invalid("Tenants", "", gpufair.ErrEmpty, "OEF allocates to users: Problem.Tenants is nil")
	}
	if err := o.checkOptions(p); err != nil {
		return nil, err
	}
	norm, err := p.Throughputs.RelativeToSlowestRunnable()
	if err != nil {
		var cell *speedup.CellError
		if errors.As(err, &cell) {
			return nil, gpufair.Invalid("Throughputs", cell.Row, gpufair.ErrValue, "the job runs on no GPU type")
		}
		return nil, gpufair.Invalid("Throughputs", "", gpufair.ErrValue, "%v", err)
	}
	if norm, err = canonicalMatrix(norm); err != nil {
		return nil, err
	}
	owner := make(map[TenantID]int, len(p.Tenants))
	for u, usr := range p.Tenants {
		owner[usr.ID] = u
	}
	ownerOf := func(i int) int { return owner[p.Jobs[i].Owner] }
	// A declared type groups by its label (a NaN-free key cannot collide
	// with a row: its second entry is -1), an inferred one by the row.
	label := map[string]float64{}
	types := groupRows(len(p.Jobs), func(i int) []float64 {
		if l, ok := o.JobTypes[p.Jobs[i].ID]; ok {
			if _, seen := label[l]; !seen {
				label[l] = float64(len(label))
			}
			return []float64{float64(ownerOf(i)), -1, label[l]}
		}
		return append([]float64{float64(ownerOf(i))}, norm.Row(i)...)
	})
	nv := types.numClasses()
	in := &oefInstance{
		count:  append([]float64(nil), p.Capacity.Count...),
		speed:  make([][]float64, nv),
		weight: make([]float64, nv),
		jobs:   make([][]int, nv),
	}
	for i, v := range types.of {
		in.jobs[v] = append(in.jobs[v], i)
	}
	typesOf := make([]int, len(p.Tenants))
	for v, jobs := range in.jobs {
		in.speed[v] = oefSpeedups(p, norm, jobs)
		typesOf[ownerOf(jobs[0])]++
	}
	for v, jobs := range in.jobs {
		u := ownerOf(jobs[0])
		in.weight[v] = p.Tenants[u].Weight / float64(typesOf[u])
	}
	if o.DemandCaps || o.Caps != nil {
		in.cap = o.virtualCaps(p, in.jobs, ownerOf)
	}
	return in, nil
}

// oefSpeedups returns the speedup vector of a virtual user with jobs: for
// an inferred type the jobs' common normalised row; for a declared one, on
// each GPU type, the mean of the speedups of the jobs that can run there,
// weighted by Weight·Gang, as allocation shares the user's GPUs of that type
// among those jobs in that proportion.
func oefSpeedups(p *Problem, norm *speedup.Matrix, jobs []int) []float64 {
	if len(jobs) == 1 {
		return norm.Row(jobs[0])
	}
	s := make([]float64, len(p.Capacity.Types))
	total := make([]float64, len(s))
	for _, i := range jobs {
		w := p.Jobs[i].Weight * float64(p.Jobs[i].Gang)
		for k, x := range norm.Row(i) {
			if x > 0 {
				s[k] += w * x
				total[k] += w
			}
		}
	}
	for k := range s {
		if total[k] > 0 {
			s[k] /= total[k]
		}
	}
	return s
}

// checkOptions checks o's caps and declared job types against p.
func (o OEF) checkOptions(p *Problem) error {
	tenants := make(map[TenantID]bool, len(p.Tenants))
	for _, u := range p.Tenants {
		tenants[u.ID] = true
	}
	for _, id := range sortedKeys(o.Caps) {
		c := o.Caps[id]
		switch {
		case !tenants[id]:
			return gpufair.Invalid("OEF.Caps", string(id), gpufair.ErrUnknownID, "no such tenant")
		case !(c >= 0) || math.IsInf(c, 0) || c != math.Trunc(c):
			return gpufair.Invalid("OEF.Caps", string(id), gpufair.ErrValue, "cap %v is not a whole number of GPUs (gangs are whole)", c)
		}
	}
	jobs := make(map[JobID]bool, len(p.Jobs))
	for _, j := range p.Jobs {
		jobs[j.ID] = true
	}
	for _, id := range sortedKeys(o.JobTypes) {
		switch {
		case !jobs[id]:
			return gpufair.Invalid("OEF.JobTypes", string(id), gpufair.ErrUnknownID, "no such job")
		case o.JobTypes[id] == "":
			return gpufair.Invalid("OEF.JobTypes", string(id), gpufair.ErrValue, "empty job type")
		}
	}
	return nil
}

// virtualCaps returns each virtual user's cap: with DemandCaps its demand
// (the sum of its jobs' gangs), and a tenant's cap in o.Caps split among
// its virtual users in proportion to their demands; +Inf where none holds.
func (o OEF) virtualCaps(p *Problem, jobs [][]int, ownerOf func(int) int) []float64 {
	demand := make([]float64, len(jobs))
	tenantDemand := make([]float64, len(p.Tenants))
	for v, js := range jobs {
		for _, i := range js {
			demand[v] += float64(p.Jobs[i].Gang)
		}
		tenantDemand[ownerOf(js[0])] += demand[v]
	}
	caps := make([]float64, len(jobs))
	for v, js := range jobs {
		caps[v] = math.Inf(1)
		if o.DemandCaps {
			caps[v] = demand[v]
		}
		u := ownerOf(js[0])
		if c, ok := o.Caps[p.Tenants[u].ID]; ok {
			caps[v] = min(caps[v], c*demand[v]/tenantDemand[u])
		}
	}
	return caps
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
// With caps (oef_caps.go), cap[c] bounds Σ_k y[c][k], and floor[c], in
// cooperative mode, is c's capped sharing-incentive value.
type oefLP struct {
	s     [][]float64
	w     []float64
	count []float64
	cap   []float64 // nil without caps; +Inf for an uncapped class
	// capLimit bounds the effective caps (effectiveCap): the whole
	// cluster per unit of the smallest virtual user's weight.
	capLimit float64
	floor    []float64 // nil but in capped cooperative mode
	// cellFloor is the smallest ε of the cells that seed row generation
	// (cellSeedRows): a cells' LP is seeded by coarser cells than its own.
	cellFloor float64
	// unseeded starts row generation from the side rows alone
	// (jobTypeSeed's LP over job types).
	unseeded bool
	// warm holds the envy rows of OEFSettings.WarmRows, as class pairs:
	// row generation starts from them (seedEnvyRows).
	warm []envyPair
	// orphans are the classes of warm rows whose other job departed.
	orphans []int
	// hint is OEFSettings.WarmBasis by classes, for the first model of
	// row generation (envyModel), which clears it; nil for none.
	hint *classBasis
	// ghosts counts the last classes of s, of weight zero, that are
	// departed jobs kept from the warm basis (oef_ghosts.go).
	ghosts int
}

// classKey returns the key by which virtual user v is grouped into
// classes: its speedups, and with caps its cap per unit of weight.
func (in *oefInstance) classKey(v int) []float64 {
	if in.cap == nil {
		return in.speed[v]
	}
	return append(slices.Clone(in.speed[v]), in.cap[v]/in.weight[v])
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
	if in.cap != nil {
		q.capLimit = sum(in.count) / slices.Min(in.weight)
		q.cap = make([]float64, len(q.s))
		for c, v := range cls.rep {
			q.cap[c] = in.cap[v] / in.weight[v]
		}
	}
	return q
}

// repair clips y to be non-negative, zero where its class has speedup 0
// (a tie the solver may break either way: such GPUs are worth nothing to
// it), and scales down every type used beyond its count, and every bundle
// beyond its cap, the small violations a simplex vertex may carry
// (LP-NOTES.md). Scaling down keeps every capacity row satisfied.
func (q *oefLP) repair(y [][]float64) {
	for c := range y {
		for k := range y[c] {
			if y[c][k] < 0 || q.s[c][k] == 0 {
				y[c][k] = 0
			}
		}
	}
	for k, m := range q.count {
		var used float64
		for c := range y {
			used += q.w[c] * y[c][k]
		}
		if used > m {
			for c := range y {
				y[c][k] *= m / used
			}
		}
	}
	for c, b := range q.cap {
		if t := sum(y[c]); t > b {
			for k := range y[c] {
				y[c][k] *= b / t
			}
		}
	}
}

// allocation shares out each class's per-weight bundle: virtual user v gets
// π_v·y[class of v], each type's GPUs split among v's jobs that can run on
// it in proportion to Weight·Gang (for an inferred type, all of them).
func (in *oefInstance) allocation(p *Problem, cls rowClasses, y [][]float64) *Allocation {
	a := NewAllocation(p.JobIDs(), p.Capacity)
	for v, jobs := range in.jobs {
		bundle := y[cls.of[v]]
		for k, x := range bundle {
			var total float64
			for _, i := range jobs {
				if p.Throughputs.At(i, k) > 0 {
					total += p.Jobs[i].Weight * float64(p.Jobs[i].Gang)
				}
			}
			for _, i := range jobs {
				if p.Throughputs.At(i, k) > 0 {
					a.GPUs[i][k] = in.weight[v] * x * p.Jobs[i].Weight * float64(p.Jobs[i].Gang) / total
				}
			}
		}
	}
	return a
}
