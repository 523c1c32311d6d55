package alloc

import (
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
)

// ByOwner returns a's rows aggregated by owner: one row per user, labelled
// by the user's ID in the order of users, holding the sum of the bundles of
// that user's jobs. Row i of a must be jobs[i] (labelled by its ID). Users
// without jobs get an empty bundle.
//
// The axioms are about users: a user with several jobs may move GPUs between
// its own jobs, so what it holds is the aggregate bundle, and what it is
// worth is the best use of it among its jobs (BestOf). To hold an allocation
// of a Problem's jobs to the axioms per tenant (as the "problem" example
// does):
//
//	owned, err := a.ByOwner(p.Jobs, p.Tenants)
//	jobVals := make([]Linear, len(p.Jobs))
//	for i, v := range p.Valuations() {
//		jobVals[i] = v.(Linear)
//	}
//	vals, err := OwnerValuations(p.Jobs, p.Tenants, jobVals)
//	si, err := SharingIncentive(owned, p.Capacity, vals, OwnerWeights(p.Tenants))
//
// Errors: *gpufair.InputError for a nil allocation, rows that are not jobs in order,
// invalid jobs or users, or owners that are not users.
func (a *Allocation) ByOwner(jobs []Job, users []Tenant) (*Allocation, error) {
	if err := checkBundles(a); err != nil {
		return nil, err
	}
	if err := ValidateTenants(users); err != nil {
		return nil, err
	}
	if err := ValidateJobs(jobs, users); err != nil {
		return nil, err
	}
	if err := checkJobRows(a, jobs); err != nil {
		return nil, err
	}
	index := ownerIndex(users)
	out := &Allocation{Types: append(a.Types[:0:0], a.Types...), Rows: make([]string, len(users)), GPUs: make([][]float64, len(users))}
	for u, user := range users {
		out.Rows[u] = string(user.ID)
		out.GPUs[u] = make([]float64, len(a.Types))
	}
	for i, j := range jobs {
		b := out.GPUs[index[j.Owner]]
		for k, x := range a.GPUs[i] {
			b[k] += x
		}
	}
	return out, nil
}

// BestOf is the valuation of a user who runs several jobs with linear
// valuations and puts each GPU type to its best use among them: the value of
// a bundle is Σ_k max_m l_m[k]·bundle[k]. For a single job it is that job's
// Linear valuation. It is the largest total value the user's jobs can draw
// from the bundle, so it bounds from above what a given split of the bundle
// among the jobs delivers.
type BestOf []Linear

// Value returns Σ_k max_m b[m][k]·bundle[k], 0 when b is empty. It panics if
// a valuation's length differs from the bundle's.
func (b BestOf) Value(bundle []float64) float64 {
	var s float64
	for k, x := range bundle {
		var best float64
		for _, l := range b {
			if len(l) != len(bundle) {
				panic(fmt.Sprintf("alloc: bundle of %d types for a valuation of %d", len(bundle), len(l)))
			}
			best = max(best, l[k])
		}
		s += best * x
	}
	return s
}

// OwnerValuations returns one valuation per user, in the order of users:
// the BestOf of the Linear valuations of its jobs (vals[i] is jobs[i]'s),
// or the Linear valuation itself for a user with one job. A user without
// jobs gets an empty BestOf, which values everything at 0 (and so fails
// SharingIncentive's input check: such a user has no stake).
//
// Errors: *gpufair.InputError for invalid jobs or users, a length mismatch,
// valuations of different lengths, and rates that are NaN, infinite or
// negative.
func OwnerValuations(jobs []Job, users []Tenant, vals []Linear) ([]Valuation, error) {
	if err := ValidateTenants(users); err != nil {
		return nil, err
	}
	if err := ValidateJobs(jobs, users); err != nil {
		return nil, err
	}
	if len(vals) != len(jobs) {
		return nil, gpufair.Invalid("Valuations", "", gpufair.ErrShape, "%d valuations for %d jobs", len(vals), len(jobs))
	}
	// BestOf takes the largest rate per type, and max ignores a NaN
	// only sometimes: refuse what the axiom checks would.
	for i, l := range vals {
		if len(l) != len(vals[0]) {
			return nil, gpufair.Invalid("Valuations", string(jobs[i].ID), gpufair.ErrShape, "%d rates, job %q has %d", len(l), jobs[0].ID, len(vals[0]))
		}
		for k, r := range l {
			if math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
				return nil, gpufair.Invalid("Valuations", string(jobs[i].ID), gpufair.ErrValue, "rate %v on type %d is not finite and non-negative", r, k)
			}
		}
	}
	index := ownerIndex(users)
	groups := make([]BestOf, len(users))
	for i, j := range jobs {
		u := index[j.Owner]
		groups[u] = append(groups[u], vals[i])
	}
	out := make([]Valuation, len(users))
	for u, g := range groups {
		if len(g) == 1 {
			out[u] = g[0]
		} else {
			out[u] = g
		}
	}
	return out, nil
}

// OwnerWeights returns the users' weights, in order.
func OwnerWeights(users []Tenant) []float64 {
	w := make([]float64, len(users))
	for i, u := range users {
		w[i] = u.Weight
	}
	return w
}

func ownerIndex(users []Tenant) map[TenantID]int {
	index := make(map[TenantID]int, len(users))
	for u, user := range users {
		index[user.ID] = u
	}
	return index
}

// checkJobRows checks that a has one row per job, labelled by its ID, in order.
func checkJobRows(a *Allocation, jobs []Job) error {
	if len(a.Rows) != len(jobs) {
		return gpufair.Invalid("Allocation.Rows", "", gpufair.ErrShape, "%d rows for %d jobs", len(a.Rows), len(jobs))
	}
	for i, j := range jobs {
		if a.Rows[i] != string(j.ID) {
			return gpufair.Invalid("Allocation.Rows", a.Rows[i], gpufair.ErrShape, "row %d is %q, job %d is %q", i, a.Rows[i], i, j.ID)
		}
	}
	return nil
}
