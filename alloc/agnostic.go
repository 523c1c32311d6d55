package alloc

import (
	"context"
	"slices"

	"github.com/gpufair/gpufair"
)

// Agnostic is the heterogeneity-agnostic variant of any policy, as Gavel
// builds its baselines (OSDI'20, section 7; its code sets every job's
// throughput on every type to 1 before solving): Policy is solved with
// every positive throughput replaced by 1, so that it sees GPUs, not their
// speeds. A zero throughput stays zero, where Gavel's code makes it 1: a
// job that does not fit a type (out of memory) cannot run there, and a
// mechanism that realises the allocation never places it there, so the
// time would be lost to it. Per-job inputs of Policy (remaining steps,
// elapsed times) are kept as given: a duration the policy computes is then
// in steps, not seconds, as in Gavel's code.
//
// MaxMinAgnostic is the max-min case, with a tie-break of its own among
// equally fair allocations (each type in proportion to its count).
type Agnostic struct {
	Policy Policy
}

// Name returns the policy's name with "-agnostic" appended.
func (a Agnostic) Name() string {
	if a.Policy == nil {
		return "agnostic"
	}
	return a.Policy.Name() + "-agnostic"
}

// Allocate solves Policy over p with unit throughputs. It returns Policy's
// errors, and an *gpufair.InputError for a nil Policy or an invalid p.
func (a Agnostic) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	if a.Policy == nil {
		return nil, gpufair.Invalid("Agnostic.Policy", "", gpufair.ErrEmpty, "no policy")
	}
	if p == nil {
		return nil, gpufair.Invalid("Problem", "", gpufair.ErrEmpty, "nil problem")
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	jobs := slices.Clone(p.Jobs)
	for i := range jobs {
		row := p.Throughputs.Row(i)
		unit := make([]float64, len(row))
		for k, r := range row {
			if r > 0 {
				unit[k] = 1
			}
		}
		jobs[i].Rates = unit
	}
	q, err := NewJobProblem(p.Capacity, p.Tenants, jobs)
	if err != nil {
		return nil, err
	}
	return a.Policy.Allocate(ctx, q)
}
