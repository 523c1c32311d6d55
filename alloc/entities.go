package alloc

import (
	"math"

	"github.com/gpufair/gpufair"
)

// TenantID identifies a tenant: a user, team or organisation whose jobs
// share the cluster and who is owed a fair share of it.
type TenantID string

// JobID identifies a job.
type JobID string

// Tenant is a party sharing the cluster: Gavel's user or entity, OEF's
// user, Themis' app owner, Gandiva_fair's user. Weight scales the tenant's
// fair share (a tenant of weight 2 is entitled to twice the share of a tenant
// of weight 1; Gandiva_fair calls it tickets); it must lie in [MinWeight,
// MaxWeight].
type Tenant struct {
	ID     TenantID `json:"id"`
	Weight float64  `json:"weight"`
}

// Job is a unit of work owned by a tenant. Gang is the number of GPUs the job
// occupies at once (Gavel's scale factor); it is at least 1. Weight is the
// job's priority within the cluster or its owner (Gavel's w_m); it must lie in
// [MinWeight, MaxWeight].
//
// Rates[k] is the job's throughput, in work per second (training steps per
// second, say), as a whole gang on one server of the k-th GPU type of the
// capacity or cluster it is used with; 0 means it cannot run there. Rates is
// optional where a throughput matrix says the same (Problem.Throughputs);
// when given there too, the two must agree.
//
// An Elastic job (Themis' jobs, whose Gang is job_demand_max) can also run
// on fewer GPUs, from 1 to Gang, at Rates scaled by GPUs/Gang (synchronous
// SGD with linear speedup, Themis' equation 1). Policies that give whole
// gangs treat it as rigid.
type Job struct {
	ID      JobID     `json:"id"`
	Owner   TenantID  `json:"owner,omitempty"`
	Gang    int       `json:"gang"`
	Weight  float64   `json:"weight"`
	Rates   []float64 `json:"rates,omitempty"`
	Elastic bool      `json:"elastic,omitempty"`
}

// ValidateTenants checks that tenants is non-empty, IDs are non-empty and unique
// and weights are positive and finite.
func ValidateTenants(tenants []Tenant) error {
	if len(tenants) == 0 {
		return gpufair.Invalid("Tenants", "", gpufair.ErrEmpty, "no tenants")
	}
	seen := make(map[TenantID]bool, len(tenants))
	for i, u := range tenants {
		if u.ID == "" {
			return gpufair.Invalid("Tenants.ID", "", gpufair.ErrValue, "user %d has an empty ID", i)
		}
		if seen[u.ID] {
			return gpufair.Invalid("Tenants.ID", string(u.ID), gpufair.ErrDuplicate, "listed twice")
		}
		seen[u.ID] = true
		if !validWeight(u.Weight) {
			return gpufair.Invalid("Tenants.Weight", string(u.ID), gpufair.ErrValue, "weight %v is not in [MinWeight, MaxWeight]", u.Weight)
		}
	}
	return nil
}

// ValidateJobs checks that jobs is non-empty, IDs are non-empty and unique,
// gangs are at least 1, weights are positive and finite and rates, where
// given, are finite and non-negative. If tenants is not
// nil, every job's owner must be among them.
func ValidateJobs(jobs []Job, tenants []Tenant) error {
	if len(jobs) == 0 {
		return gpufair.Invalid("Jobs", "", gpufair.ErrEmpty, "no jobs")
	}
	var owners map[TenantID]bool
	if tenants != nil {
		owners = make(map[TenantID]bool, len(tenants))
		for _, u := range tenants {
			owners[u.ID] = true
		}
	}
	seen := make(map[JobID]bool, len(jobs))
	for i, j := range jobs {
		if j.ID == "" {
			return gpufair.Invalid("Jobs.ID", "", gpufair.ErrValue, "job %d has an empty ID", i)
		}
		if seen[j.ID] {
			return gpufair.Invalid("Jobs.ID", string(j.ID), gpufair.ErrDuplicate, "listed twice")
		}
		seen[j.ID] = true
		if j.Gang < 1 {
			return gpufair.Invalid("Jobs.Gang", string(j.ID), gpufair.ErrValue, "gang %d is below 1", j.Gang)
		}
		if !validWeight(j.Weight) {
			return gpufair.Invalid("Jobs.Weight", string(j.ID), gpufair.ErrValue, "weight %v is not in [MinWeight, MaxWeight]", j.Weight)
		}
		for k, r := range j.Rates {
			if !(r >= 0) || math.IsInf(r, 0) {
				return gpufair.Invalid("Jobs.Rates", string(j.ID), gpufair.ErrValue, "rate %v for GPU type %d is not finite and non-negative", r, k)
			}
		}
		if owners != nil && !owners[j.Owner] {
			return gpufair.Invalid("Jobs.Owner", string(j.ID), gpufair.ErrUnknownID, "owner %q is not a user", j.Owner)
		}
	}
	return nil
}

// MinWeight and MaxWeight bound the weights of tenants and jobs. Policies
// divide shares by weights and multiply counts by them; within these
// bounds neither overflows (a job of weight 8e307 was once given +Inf
// GPUs).
const (
	MinWeight = 1e-12
	MaxWeight = 1e12
)

func validWeight(w float64) bool { return w >= MinWeight && w <= MaxWeight }
