package stride

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Tenant is a user of the rounding placer and the jobs it wants to run;
// each job's Gang is the GPUs it needs at once.
type Tenant struct {
	ID   alloc.UserID
	Jobs []alloc.Job
}

type tenantState struct {
	Tenant
	minGang int
	dev     []float64 // carried deviation per type
}

// Rounder is OEF's placer (section 4.3): each round it turns every user's
// fractional GPUs of each type, ideal_j(t), into whole GPUs real_j(t) by
// rounding ideal_j(t) + dev_j(t), and carries dev_j(t+1) = dev_j(t) +
// ideal_j(t) − real_j(t) forward, so the GPUs a user gets approach its
// allocation over time. Rounding is done per type as largest-remainder
// apportionment, which is round() when the total allows it and never hands
// out more GPUs than the type has. A share below the user's smallest job is
// set to 0 (its GPUs stay idle that round) and the deviation builds up until
// the user's share reaches a job. Each user's share is then filled with its
// jobs largest first, and all chosen jobs are placed largest first on the
// fewest servers.
//
// The deviation stays within (−1, max(1, smallest gang)) when the ideal
// shares of a type add up to at most its GPUs.
//
// The zero value is not usable; build one with NewRounder.
type Rounder struct {
	types   []topology.GPUType
	count   []int
	placer  *topology.Placer
	tenants []*tenantState
	last    int
	ran     bool
}

// NewRounder returns the placer for tenants on cluster c, with shares given
// over types (each a type of c). It returns an *alloc.InputError for no
// types or tenants, unknown types (ErrUnknownType), duplicate or empty IDs,
// jobs with gangs below 1 (alloc.ErrValue) and a tenant whose smallest job
// is larger than every type (ErrTooLarge).
func NewRounder(c topology.Cluster, types []topology.GPUType, tenants []Tenant) (*Rounder, error) {
	p, err := topology.NewPlacer(c)
	if err != nil {
		return nil, err
	}
	if len(types) == 0 {
		return nil, inputErr("Types", "", alloc.ErrEmpty, "no GPU types")
	}
	if len(tenants) == 0 {
		return nil, inputErr("Tenants", "", alloc.ErrEmpty, "no tenants")
	}
	ct, cc := c.Capacity()
	r := &Rounder{types: slices.Clone(types), count: make([]int, len(types)), placer: p}
	largest := 0
	for k, t := range types {
		i := slices.Index(ct, t)
		if i < 0 {
			return nil, inputErr("Types", string(t), ErrUnknownType, "the cluster has no %q", t)
		}
		if slices.Index(types[:k], t) >= 0 {
			return nil, inputErr("Types", string(t), alloc.ErrDuplicate, "listed twice")
		}
		r.count[k] = cc[i]
		largest = max(largest, cc[i])
	}
	seen := map[alloc.UserID]bool{}
	jobs := map[alloc.JobID]bool{}
	for _, tn := range tenants {
		id := string(tn.ID)
		if tn.ID == "" || seen[tn.ID] {
			return nil, inputErr("Tenant.ID", id, alloc.ErrDuplicate, "empty or listed twice")
		}
		seen[tn.ID] = true
		st := &tenantState{Tenant: Tenant{ID: tn.ID, Jobs: slices.Clone(tn.Jobs)}, dev: make([]float64, len(types))}
		for _, j := range tn.Jobs {
			if j.ID == "" || jobs[j.ID] {
				return nil, inputErr("Tenant.Jobs", id, alloc.ErrDuplicate, "job %q empty or listed twice", j.ID)
			}
			jobs[j.ID] = true
			if j.Gang < 1 {
				return nil, inputErr("Tenant.Jobs", string(j.ID), alloc.ErrValue, "gang %d", j.Gang)
			}
			if st.minGang == 0 || j.Gang < st.minGang {
				st.minGang = j.Gang
			}
		}
		if st.minGang > largest {
			return nil, inputErr("Tenant.Jobs", id, ErrTooLarge, "smallest job of %d GPUs, largest type has %d", st.minGang, largest)
		}
		// Larger jobs first, then in the tenant's order.
		slices.SortStableFunc(st.Jobs, func(a, b alloc.Job) int { return cmp.Compare(b.Gang, a.Gang) })
		r.tenants = append(r.tenants, st)
	}
	return r, nil
}

// Deviation returns tenant i's carried deviation on each type.
func (r *Rounder) Deviation(i int) []float64 { return slices.Clone(r.tenants[i].dev) }

// Round runs round q with ideal[i][k] the fractional GPUs of tenant i (in
// the order given to NewRounder) on the k-th type, and returns the whole
// GPUs each tenant got (shares[i][k]) and the plan. q must exceed the
// previous round's index (ErrQuantum). It returns an *alloc.InputError for
// a matrix of the wrong shape, entries that are negative or not finite, and
// a type whose ideal shares add up to more than its GPUs (alloc.ErrValue);
// nothing changes then.
func (r *Rounder) Round(q int, ideal [][]float64) (shares [][]int, plan *RoundPlan, err error) {
	if r.ran && q <= r.last {
		return nil, nil, inputErr("Round", "", ErrQuantum, "round %d after %d", q, r.last)
	}
	if len(ideal) != len(r.tenants) {
		return nil, nil, inputErr("Ideal", "", alloc.ErrShape, "%d rows for %d tenants", len(ideal), len(r.tenants))
	}
	sum := make([]float64, len(r.types))
	for i, row := range ideal {
		if len(row) != len(r.types) {
			return nil, nil, inputErr("Ideal", string(r.tenants[i].ID), alloc.ErrShape, "%d shares for %d types", len(row), len(r.types))
		}
		for k, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, nil, inputErr("Ideal", string(r.tenants[i].ID), alloc.ErrValue, "%v GPUs of %q", x, r.types[k])
			}
			sum[k] += x
		}
	}
	for k, s := range sum {
		if s > float64(r.count[k])*(1+fracTol)+fracTol {
			return nil, nil, inputErr("Ideal", string(r.types[k]), alloc.ErrValue, "%v GPUs of %d", s, r.count[k])
		}
	}
	r.ran, r.last = true, q
	n := len(r.tenants)
	shares = make([][]int, n)
	for i := range shares {
		shares[i] = make([]int, len(r.types))
	}
	target := make([]float64, n)
	order := make([]int, n)
	for k := range r.types {
		var total float64
		given := 0
		for i, t := range r.tenants {
			target[i] = ideal[i][k] + t.dev[k]
			shares[i][k] = max(0, int(math.Floor(target[i])))
			given += shares[i][k]
			total += max(0, target[i])
			order[i] = i
		}
		// Largest remainders get the GPUs that round(Σ target) leaves,
		// never more than the type has.
		extra := min(int(math.Floor(total+0.5)), r.count[k]) - given
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Compare(target[b]-float64(shares[b][k]), target[a]-float64(shares[a][k]))
		})
		for _, i := range order {
			if extra <= 0 {
				break
			}
			if target[i]-float64(shares[i][k]) > 0 {
				shares[i][k]++
				extra--
			}
		}
		given = 0
		for i := range r.tenants {
			given += shares[i][k]
		}
		for given > r.count[k] {
			// Floors alone exceed the type only if deviations piled
			// up; take back from the most over-served holder.
			best := -1
			for i := range r.tenants {
				if shares[i][k] > 0 && (best < 0 || target[i]-float64(shares[i][k]) < target[best]-float64(shares[best][k])) {
					best = i
				}
			}
			shares[best][k]--
			given--
		}
		for i, t := range r.tenants {
			if shares[i][k] < t.minGang {
				shares[i][k] = 0
			}
			t.dev[k] += ideal[i][k] - float64(shares[i][k])
		}
	}
	plan = r.place(q, shares)
	return shares, plan, nil
}

// place fills each tenant's shares with its jobs, largest first, and places
// every chosen job, largest first, on the fewest servers.
func (r *Rounder) place(q int, shares [][]int) *RoundPlan {
	type pick struct {
		tenant int
		job    alloc.Job
		k      int
	}
	var picks []pick
	for i, t := range r.tenants {
		used := map[alloc.JobID]bool{}
		for k := range r.types {
			left := shares[i][k]
			for _, j := range t.Jobs {
				if !used[j.ID] && j.Gang <= left {
					used[j.ID] = true
					left -= j.Gang
					picks = append(picks, pick{i, j, k})
				}
			}
		}
	}
	slices.SortStableFunc(picks, func(a, b pick) int { return cmp.Compare(b.job.Gang, a.job.Gang) })
	r.placer.Reset()
	plan := &RoundPlan{Round: q}
	for _, p := range picks {
		gpus, err := r.placer.Place(r.types[p.k], p.job.Gang)
		if err != nil {
			// Shares of a type never exceed its GPUs.
			panic("stride: rounding placement failed: " + err.Error())
		}
		plan.Assignments = append(plan.Assignments, Assignment{Row: string(r.tenants[p.tenant].ID), Jobs: []alloc.JobID{p.job.ID}, Type: r.types[p.k], GPUs: gpus})
	}
	return plan
}
