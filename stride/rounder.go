package stride

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Tenant is a user of the rounding placer and the jobs it wants to run;
// each job's Gang is the GPUs it needs at once.
type Tenant struct {
	ID   alloc.TenantID
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
// allocation over time. A share that rounds below the user's smallest job
// is set to 0 and the deviation builds up until the share reaches a job.
// Per type, rounding never hands out more GPUs than the type has: if the
// rounded shares do, they are cut one at a time, each cut the one that
// leaves its holder owed least (ideal + dev − real after it): a GPU, or the
// holder's whole share where one fewer would fall below its smallest job;
// GPUs left over (by users set to 0, or rounding down) go one at a time to
// the most under-served users that can use them, up to
// round(Σ ideal + dev). Each user's share is then filled with its jobs
// largest first, in a fixed order, and all chosen jobs are placed largest
// first on the fewest servers. OEF's scheduler on the round contract
// (OEF) rounds the same way and rotates each tenant's jobs instead, so
// that none starves.
//
// The deviation stays above −1; for a fixed allocation,
// TestRounderBoundedDeviation checks it stays below the type's GPUs plus
// the largest smallest-job size among users plus 1.
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
// over types (each a type of c). It returns an *gpufair.InputError for an
// invalid cluster (as alloc.CapacityOf), no types or tenants, unknown types (gpufair.ErrUnknownType),
// duplicate or empty IDs, jobs with gangs below 1 (gpufair.ErrValue) and a
// tenant whose smallest job is larger than every type (gpufair.ErrTooLarge).
func NewRounder(c topology.Cluster, types []topology.GPUType, tenants []Tenant) (*Rounder, error) {
	p, count, err := typedPlacer(c, types)
	if err != nil {
		return nil, err
	}
	if len(tenants) == 0 {
		return nil, gpufair.Invalid("Tenants", "", gpufair.ErrEmpty, "no tenants")
	}
	r := &Rounder{types: slices.Clone(types), count: count, placer: p}
	largest := slices.Max(count)
	seen := map[alloc.TenantID]bool{}
	jobs := map[alloc.JobID]bool{}
	for _, tn := range tenants {
		id := string(tn.ID)
		if tn.ID == "" || seen[tn.ID] {
			return nil, gpufair.Invalid("Tenant.ID", id, gpufair.ErrDuplicate, "empty or listed twice")
		}
		seen[tn.ID] = true
		st := &tenantState{Tenant: Tenant{ID: tn.ID, Jobs: slices.Clone(tn.Jobs)}, dev: make([]float64, len(types))}
		for _, j := range tn.Jobs {
			if j.ID == "" || jobs[j.ID] {
				return nil, gpufair.Invalid("Tenant.Jobs", id, gpufair.ErrDuplicate, "job %q empty or listed twice", j.ID)
			}
			jobs[j.ID] = true
			if j.Gang < 1 {
				return nil, gpufair.Invalid("Tenant.Jobs", string(j.ID), gpufair.ErrValue, "gang %d", j.Gang)
			}
			if st.minGang == 0 || j.Gang < st.minGang {
				st.minGang = j.Gang
			}
		}
		if st.minGang > largest {
			return nil, gpufair.Invalid("Tenant.Jobs", id, gpufair.ErrTooLarge, "smallest job of %d GPUs, largest type has %d", st.minGang, largest)
		}
		// Larger jobs first, then in the tenant's order.
		slices.SortStableFunc(st.Jobs, func(a, b alloc.Job) int { return cmp.Compare(b.Gang, a.Gang) })
		r.tenants = append(r.tenants, st)
	}
	return r, nil
}

// Deviation returns tenant i's carried deviation on each type (tenants in
// the order given to NewRounder), or nil if there is no tenant i.
func (r *Rounder) Deviation(i int) []float64 {
	if i < 0 || i >= len(r.tenants) {
		return nil
	}
	return slices.Clone(r.tenants[i].dev)
}

// Round runs round q with ideal[i][k] the fractional GPUs of tenant i (in
// the order given to NewRounder) on the k-th type, and returns the whole
// GPUs each tenant got (shares[i][k]) and the plan. q must exceed the
// previous round's index (gpufair.ErrOrder). It returns an *gpufair.InputError for
// a matrix of the wrong shape, entries that are negative or not finite, and
// a type whose ideal shares add up to more than its GPUs (gpufair.ErrValue);
// nothing changes then.
func (r *Rounder) Round(q int, ideal [][]float64) (shares [][]int, plan *RoundPlan, err error) {
	if r.ran && q <= r.last {
		return nil, nil, gpufair.Invalid("Round", "", gpufair.ErrOrder, "round %d after %d", q, r.last)
	}
	if len(ideal) != len(r.tenants) {
		return nil, nil, gpufair.Invalid("Ideal", "", gpufair.ErrShape, "%d rows for %d tenants", len(ideal), len(r.tenants))
	}
	sum := make([]float64, len(r.types))
	for i, row := range ideal {
		if len(row) != len(r.types) {
			return nil, nil, gpufair.Invalid("Ideal", string(r.tenants[i].ID), gpufair.ErrShape, "%d shares for %d types", len(row), len(r.types))
		}
		for k, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, nil, gpufair.Invalid("Ideal", string(r.tenants[i].ID), gpufair.ErrValue, "%v GPUs of %q", x, r.types[k])
			}
			sum[k] += x
		}
	}
	for k, s := range sum {
		if s > float64(r.count[k])*(1+fracTol)+fracTol {
			return nil, nil, gpufair.Invalid("Ideal", string(r.types[k]), gpufair.ErrValue, "%v GPUs of %d", s, r.count[k])
		}
	}
	r.ran, r.last = true, q
	n := len(r.tenants)
	shares = make([][]int, n)
	for i := range shares {
		shares[i] = make([]int, len(r.types))
	}
	x := make([]float64, n)
	minGang := make([]int, n)
	for i, t := range r.tenants {
		minGang[i] = t.minGang
	}
	for k := range r.types {
		for i, t := range r.tenants {
			x[i] = ideal[i][k] + t.dev[k]
		}
		got := roundShares(x, minGang, r.count[k])
		for i, t := range r.tenants {
			shares[i][k] = got[i]
			t.dev[k] += ideal[i][k] - float64(got[i])
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

// roundShares turns the fractional GPUs x[i] (ideal share plus carried
// deviation) that tenants are owed of one type with count GPUs into whole
// shares: x[i] rounded, 0 where that is below minGang[i] (the tenant's
// smallest job that runs on the type; a tenant with none is given
// math.MaxInt); if the shares exceed count, shares are cut one at a time,
// each cut the one that leaves its holder owed least (x − share after it;
// ties: fewer GPUs, then smaller x): a GPU, or the holder's whole share if one fewer would
// fall below its minGang. (Cutting only holders that keep their minGang
// would cut a tenant owed many GPUs for good while one owed none keeps its
// share.) GPUs left over go one at a time to the most
// under-served tenant that can use them (ties: larger x), up to
// min(count, round(Σ max(x, 0))). No share starts above count, which
// bounds the cuts by len(x)·count (a share of 1e18 from a corrupt
// snapshot made them run for ever).
func roundShares(x []float64, minGang []int, count int) []int {
	shares := make([]int, len(x))
	var total float64
	given := 0
	for i, xi := range x {
		total += max(0, xi)
		d := max(0, int(math.Floor(min(xi, float64(count))+0.5)))
		if d < minGang[i] {
			d = 0
		}
		shares[i] = d
		given += d
	}
	rem := func(i int) float64 { return x[i] - float64(shares[i]) }
	// cut returns what holder i is owed after giving up a GPU, or its
	// whole share if one fewer would fall below its minGang.
	cut := func(i int) (owed float64, n int) {
		if shares[i]-1 >= minGang[i] {
			return rem(i) + 1, 1
		}
		return rem(i) + float64(shares[i]), shares[i]
	}
	for given > count {
		best, bestN := -1, 0
		var bestOwed float64
		for i, s := range shares {
			if s == 0 {
				continue
			}
			owed, n := cut(i)
			if best < 0 || owed < bestOwed || (owed == bestOwed && (n < bestN || (n == bestN && x[i] < x[best]))) {
				best, bestOwed, bestN = i, owed, n
			}
		}
		_, n := cut(best)
		shares[best] -= n
		given -= n
	}
	want := min(count, int(math.Floor(total+0.5)))
	for given < want {
		best := -1
		for i, s := range shares {
			if rem(i) <= 0 || s+1 < minGang[i] {
				continue
			}
			if best < 0 || rem(i) > rem(best) || (rem(i) == rem(best) && x[i] > x[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		shares[best]++
		given++
	}
	return shares
}
