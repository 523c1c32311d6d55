package sim

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// PolicyScheduler runs a fractional allocation policy of package alloc the
// way Gavel does (OSDI'20, sections 3 and 5): whenever the set of active
// jobs changes, it solves the policy over the active jobs, their gangs,
// weights, owners and throughputs (Job.Rates), and it realises the
// allocation round by round with stride.Rounds (priority X_mk / f_mk, lease
// renewal, gangs packed on the fewest servers).
//
// Each solve builds one row per active job; jobs with equal rates, gang and
// weight are interchangeable, which policies that solve over classes of rows
// exploit (Gavel's workloads have at most 26 job types × 4 scale factors).
// Tenants (Job.Owner) all have weight 1.
type PolicyScheduler struct {
	pol     alloc.Policy
	set     PolicySettings
	rounds  *stride.Rounds
	cluster alloc.Capacity
	solves  int
	solved  int // round of the last solve
	fresh   bool
}

// PolicySettings tune a PolicyScheduler. A nil *PolicySettings means the
// zero value: a policy without per-job inputs, solved when jobs come or go.
type PolicySettings struct {
	// Inputs, if not nil, returns the policy to solve at a round, with its
	// per-job inputs (remaining steps, arrival, elapsed time) filled in from
	// st.Active, which is also the order of the Problem's jobs: see
	// FIFOInputs, ShortestJobFirstInputs, FinishTimeFairnessInputs and
	// MakespanInputs. The scheduler's own policy then only names it.
	Inputs func(st *State) alloc.Policy
	// Every, if positive, also solves the policy when Every rounds have
	// passed since the last solve, for policies whose inputs change as
	// jobs progress.
	Every int
}

// NewPolicyScheduler returns a scheduler that realises pol's allocations on
// cluster c, for a workload over types (each a GPU type of c). s may be nil.
// It returns the errors of stride.NewRounds and an *gpufair.InputError for a
// negative s.Every.
func NewPolicyScheduler(pol alloc.Policy, c topology.Cluster, types []topology.GPUType, s *PolicySettings) (*PolicyScheduler, error) {
	var set PolicySettings
	if s != nil {
		set = *s
	}
	if set.Every < 0 {
		return nil, gpufair.Invalid("PolicySettings.Every", "", gpufair.ErrValue, "%d rounds", set.Every)
	}
	r, err := stride.NewRounds(c, types)
	if err != nil {
		return nil, err
	}
	n, err := typeCounts(c, types, "Types")
	if err != nil {
		return nil, err
	}
	count := make([]float64, len(types))
	for k, x := range n {
		count[k] = float64(x)
	}
	ac, err := alloc.NewCapacity(types, count)
	if err != nil {
		return nil, err
	}
	return &PolicyScheduler{pol: pol, set: set, rounds: r, cluster: ac, fresh: true}, nil
}

// Name returns the policy's name.
func (p *PolicyScheduler) Name() string { return p.pol.Name() }

// Solves returns the number of times the policy has been solved.
func (p *PolicyScheduler) Solves() int { return p.solves }

// Schedule solves the policy if jobs arrived or left since the previous
// round (or Every rounds have passed), and runs one round of Gavel's
// mechanism.
func (p *PolicyScheduler) Schedule(ctx context.Context, st *State) ([]Placement, error) {
	if len(st.Departed) > 0 {
		ids := make([]string, len(st.Departed))
		for i, id := range st.Departed {
			ids[i] = string(id)
		}
		p.rounds.Remove(ids...)
	}
	due := p.set.Every > 0 && st.Round-p.solved >= p.set.Every
	if p.fresh || due || len(st.Arrived) > 0 || len(st.Departed) > 0 {
		if err := p.solve(ctx, st); err != nil {
			return nil, err
		}
		p.fresh, p.solved = false, st.Round
	}
	plan, err := p.rounds.Round(st.Round)
	if err != nil {
		return nil, err
	}
	ps := make([]Placement, 0, len(plan.Assignments))
	for _, a := range plan.Assignments {
		for _, j := range a.Jobs {
			ps = append(ps, Placement{Job: j, GPUs: a.GPUs})
		}
	}
	return ps, nil
}

// solve computes the policy's allocation over the active jobs and hands it
// to the round mechanism.
func (p *PolicyScheduler) solve(ctx context.Context, st *State) error {
	prob, err := Problem(p.cluster, st.Active)
	if err != nil {
		return err
	}
	pol := p.pol
	if p.set.Inputs != nil {
		pol = p.set.Inputs(st)
	}
	a, err := pol.Allocate(ctx, prob)
	if err != nil {
		return fmt.Errorf("%d active jobs: %w", len(st.Active), err)
	}
	p.solves++
	for _, row := range a.GPUs {
		for k, x := range row {
			row[k] = math.Round(x/targetGrain) * targetGrain
		}
	}
	return p.rounds.SetAllocation(prob.Jobs, a)
}

// targetGrain is the grain, in GPUs, to which a policy's allocation is
// rounded before the round mechanism sees it: LP solvers return equal shares
// with differences of about 1e-12 that would otherwise decide the ties
// between the mechanism's priorities, and differ between LP backends.
const targetGrain = 1e-9

// Problem returns the allocation problem of the active jobs on cluster c
// (whose types are the workload's): one alloc.Job per active job, with its
// gang and weight, owned by its tenant; one tenant of weight 1 per owner, in
// order of first appearance; throughputs Job.Rates, except 0 on a type whose
// GPUs are fewer than the job's gang (it cannot run there).
func Problem(c alloc.Capacity, active []Active) (*alloc.Problem, error) {
	jobs := make([]alloc.Job, len(active))
	rows := make([]string, len(active))
	rates := make([][]float64, len(active))
	var users []alloc.Tenant
	seen := make(map[alloc.TenantID]bool)
	for i, a := range active {
		j := a.Job
		o := j.owner()
		if !seen[o] {
			seen[o] = true
			users = append(users, alloc.Tenant{ID: o, Weight: 1})
		}
		jobs[i] = alloc.Job{ID: j.ID, Owner: o, Gang: j.Gang, Weight: j.weight()}
		rows[i] = string(j.ID)
		rates[i] = j.Rates
		for k, n := range c.Count {
			if float64(j.Gang) > n && j.Rates[k] > 0 {
				rates[i] = slices.Clone(j.Rates)
				for k, n := range c.Count {
					if float64(j.Gang) > n {
						rates[i][k] = 0
					}
				}
				break
			}
		}
	}
	tp, err := speedup.New(rows, c.Types, rates)
	if err != nil {
		return nil, err
	}
	return alloc.NewProblem(c, users, jobs, tp)
}
