package alloc

import (
	"math"

	"github.com/gpufair/gpufair"
)

// UserID identifies a user (tenant).
type UserID string

// JobID identifies a job.
type JobID string

// User is a tenant sharing the cluster. Weight scales the user's fair share
// (a user of weight 2 is entitled to twice the share of a user of weight 1);
// it must be positive and finite.
type User struct {
	ID     UserID  `json:"id"`
	Weight float64 `json:"weight"`
}

// Job is a unit of work owned by a user. Gang is the number of GPUs the job
// occupies at once (Gavel's scale factor); it is at least 1. Weight is the
// job's priority within the cluster or its owner (Gavel's w_m); it must be
// positive and finite.
type Job struct {
	ID     JobID   `json:"id"`
	Owner  UserID  `json:"owner,omitempty"`
	Gang   int     `json:"gang"`
	Weight float64 `json:"weight"`
}

// ValidateUsers checks that users is non-empty, IDs are non-empty and unique
// and weights are positive and finite.
func ValidateUsers(users []User) error {
	if len(users) == 0 {
		return gpufair.Invalid("Users", "", gpufair.ErrEmpty, "no users")
	}
	seen := make(map[UserID]bool, len(users))
	for i, u := range users {
		if u.ID == "" {
			return gpufair.Invalid("Users.ID", "", gpufair.ErrValue, "user %d has an empty ID", i)
		}
		if seen[u.ID] {
			return gpufair.Invalid("Users.ID", string(u.ID), gpufair.ErrDuplicate, "listed twice")
		}
		seen[u.ID] = true
		if !positiveFinite(u.Weight) {
			return gpufair.Invalid("Users.Weight", string(u.ID), gpufair.ErrValue, "weight %v is not positive and finite", u.Weight)
		}
	}
	return nil
}

// ValidateJobs checks that jobs is non-empty, IDs are non-empty and unique,
// gangs are at least 1 and weights are positive and finite. If users is not
// nil, every job's owner must be among them.
func ValidateJobs(jobs []Job, users []User) error {
	if len(jobs) == 0 {
		return gpufair.Invalid("Jobs", "", gpufair.ErrEmpty, "no jobs")
	}
	var owners map[UserID]bool
	if users != nil {
		owners = make(map[UserID]bool, len(users))
		for _, u := range users {
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
		if !positiveFinite(j.Weight) {
			return gpufair.Invalid("Jobs.Weight", string(j.ID), gpufair.ErrValue, "weight %v is not positive and finite", j.Weight)
		}
		if owners != nil && !owners[j.Owner] {
			return gpufair.Invalid("Jobs.Owner", string(j.ID), gpufair.ErrUnknownID, "owner %q is not a user", j.Owner)
		}
	}
	return nil
}

func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
