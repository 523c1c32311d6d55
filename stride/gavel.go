package stride

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// DefaultRound is Gavel's round length, 6 minutes (OSDI'20, section 3.2:
// rounds of about 6 minutes approximate the ideal allocation well).
const DefaultRound = 360.0

// GavelSettings tune a Gavel scheduler. A nil *GavelSettings means the zero
// value: 6-minute rounds, no time budget, the policy solved whenever jobs,
// rates or healthy GPUs change, work conservation on, no preemption budget.
type GavelSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Budget bounds the time Decide spends solving the policy; 0 means no
	// bound. A solve cut short leaves the allocation of the previous solve
	// in force, and the decision is marked Partial.
	Budget time.Duration
	// Inputs, if not nil, returns the policy to solve at time now over p,
	// with its per-job inputs (remaining work, arrival, elapsed time) taken
	// from jobs: jobs[i] is p.Jobs[i] as the ledger knows it (p's rates
	// and capacity count only healthy GPUs). See FIFOInputs,
	// ShortestJobFirstInputs, MakespanInputs and FinishTimeFairnessInputs.
	// The scheduler's own policy then only names it.
	Inputs func(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy
	// Every, if positive, also solves the policy when Every rounds have
	// passed since the last solve, for policies whose inputs change as
	// jobs progress.
	Every int
	// MinLease, if above 1, is a preemption budget: a gang, once placed,
	// keeps its slots for at least MinLease rounds (unless it departs or a
	// GPU of its gang fails), whatever the priorities say.
	MinLease int
	// NoWorkConservation turns off the pass that gives GPUs the priority
	// pass leaves idle to waiting jobs, so that each job runs only on the
	// types its allocation gives it time on, as in Gavel's Algorithm 1.
	NoWorkConservation bool
}

// Gavel is Gavel's scheduler (OSDI'20, sections 3 and 5) on the round
// contract: it solves a fractional policy of package alloc over the jobs in
// the system, and realises the allocation X round by round. Each round:
//
//  1. Gangs within their preemption budget (GavelSettings.MinLease) keep
//     their slots.
//  2. Every (job m, type k) with X_mk > 0 gets priority X_mk / f_mk, f_mk
//     being the fraction of the time since m arrived that it actually ran
//     on k (round.Job.Fraction: time received, cut short by departures and
//     failures), +Inf while it has not run on k. Pairs are taken in
//     decreasing priority (ties: larger X_mk, then (arrival, ID), then
//     type order); a pair runs if its job is not yet placed and Gang
//     healthy GPUs of its type are left.
//  3. Work conservation: each job still waiting, least served first
//     (smallest Σ_k f_mk, then arrival order), runs on the fastest type
//     it can use with Gang GPUs left. Afterwards no GPU is idle while a
//     waiting job could run on it. GavelSettings.NoWorkConservation turns
//     this off.
//  4. Gangs that run on the type they ran on until now keep their slots
//     (lease renewal); the others are placed largest first on the fewest
//     servers, never on a failed GPU.
//
// The policy is solved over the healthy GPUs whenever a job arrives or
// departs, rates are measured, or a GPU fails or is repaired. A job whose
// gang is larger than the healthy GPUs of a type gets rate 0 there.
// Tenants are the jobs' owners, each of weight 1.
//
// The zero value is not usable; build one with NewGavel.
type Gavel struct {
	pol    alloc.Policy
	set    GavelSettings
	l      *round.Ledger
	st     gavelState
	placer *topology.Placer
}

// gavelState is what Gavel keeps beyond the ledger, as snapshotted.
type gavelState struct {
	Target      map[alloc.JobID][]float64 `json:"target"` // X_mk
	Solved      bool                      `json:"solved"`
	SolvedGen   int                       `json:"solved_generation"`
	SolvedRound int                       `json:"solved_round"`
}

// NewGavel returns Gavel's scheduler realising pol on cluster c, with job
// rates given over types (each a type of c). s may be nil. It returns the
// errors of round.NewLedger and an *gpufair.InputError for a nil policy or
// settings out of range.
func NewGavel(pol alloc.Policy, c topology.Cluster, types []topology.GPUType, s *GavelSettings) (*Gavel, error) {
	var set GavelSettings
	if s != nil {
		set = *s
	}
	if set.Round == 0 {
		set.Round = DefaultRound
	}
	switch {
	case pol == nil:
		return nil, gpufair.Invalid("Policy", "", gpufair.ErrEmpty, "no policy")
	case !(set.Round > 0) || math.IsInf(set.Round, 0):
		return nil, gpufair.Invalid("GavelSettings.Round", "", gpufair.ErrValue, "round length %v", set.Round)
	case set.Budget < 0:
		return nil, gpufair.Invalid("GavelSettings.Budget", "", gpufair.ErrValue, "budget %v", set.Budget)
	case set.Every < 0:
		return nil, gpufair.Invalid("GavelSettings.Every", "", gpufair.ErrValue, "%d rounds", set.Every)
	case set.MinLease < 0:
		return nil, gpufair.Invalid("GavelSettings.MinLease", "", gpufair.ErrValue, "%d rounds", set.MinLease)
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		return nil, err
	}
	g := &Gavel{pol: pol, set: set, l: l, st: gavelState{Target: map[alloc.JobID][]float64{}}}
	g.placer = l.Placer(nil)
	return g, nil
}

// Name returns the policy's name.
func (g *Gavel) Name() string { return g.pol.Name() }

// Ledger returns the scheduler's ledger, to read only.
func (g *Gavel) Ledger() *round.Ledger { return g.l }

// Target returns job id's allocation X: the fraction of time it should run
// on each type, from the latest solve.
func (g *Gavel) Target(id alloc.JobID) ([]float64, bool) {
	x, ok := g.st.Target[id]
	return slices.Clone(x), ok
}

// Apply checks and applies events (round.Ledger.Apply).
func (g *Gavel) Apply(events ...round.Event) error {
	if err := g.l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		if e.Kind == round.Departed {
			delete(g.st.Target, e.Job.ID)
		}
	}
	return nil
}

// Decide solves the policy if it is due, and returns the round's decision.
func (g *Gavel) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := g.l.Begin(now); err != nil {
		return nil, err
	}
	old := g.st
	partial, err := g.maybeSolve(ctx, now)
	if err != nil {
		g.st = old
		g.l.Abort()
		return nil, err
	}
	d, err := g.plan(now)
	if err == nil {
		d.Partial = partial
		err = g.l.Commit(d)
	}
	if err != nil {
		g.st = old
		g.l.Abort()
		return nil, err
	}
	return d, nil
}

// maybeSolve solves the policy when it is due. It reports whether a solve
// was cut short by the budget (or ctx), in which case the previous
// allocation stays.
func (g *Gavel) maybeSolve(ctx context.Context, now float64) (partial bool, err error) {
	st := &g.st
	due := !st.Solved || st.SolvedGen != g.l.Generation() ||
		(g.set.Every > 0 && g.l.Rounds()-st.SolvedRound >= g.set.Every)
	if !due {
		return false, nil
	}
	jobs := g.l.Jobs()
	if len(jobs) == 0 {
		st.Target = map[alloc.JobID][]float64{}
		st.Solved, st.SolvedGen, st.SolvedRound = true, g.l.Generation(), g.l.Rounds()
		return false, nil
	}
	var target map[alloc.JobID][]float64
	partial, err = withinBudget(ctx, g.set.Budget, func(ctx context.Context) (err error) {
		target, err = g.solve(ctx, now, jobs)
		return err
	})
	if partial || err != nil {
		return partial, err
	}
	// Copy on write: the state saved by Decide for a rollback keeps the
	// old map.
	st.Target = target
	st.Solved, st.SolvedGen, st.SolvedRound = true, g.l.Generation(), g.l.Rounds()
	return false, nil
}

// withinBudget runs solve with ctx bounded by budget (0: no bound). A solve
// cut short by the budget or by ctx reports partial, with a nil error.
func withinBudget(ctx context.Context, budget time.Duration, solve func(context.Context) error) (partial bool, err error) {
	if budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	err = solve(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true, nil
	}
	return false, err
}

// targetGrain is the grain, in time fractions, to which the policy's
// allocation is rounded: LP solvers return equal shares that differ by
// about 1e-12, which would otherwise decide ties between priorities and
// differ between LP backends.
const targetGrain = 1e-9

// solve returns the policy's allocation, as time fractions per job and type.
func (g *Gavel) solve(ctx context.Context, now float64, jobs []*round.Job) (map[alloc.JobID][]float64, error) {
	target := make(map[alloc.JobID][]float64, len(jobs))
	prob, in, cols, err := healthyProblem(g.l, jobs)
	if err != nil || prob == nil {
		return target, err
	}
	pol := g.pol
	if g.set.Inputs != nil {
		pol = g.set.Inputs(now, prob, in)
	}
	a, err := pol.Allocate(ctx, prob)
	if err != nil {
		return nil, fmt.Errorf("stride: %s over %d jobs: %w", pol.Name(), len(prob.Jobs), err)
	}
	for i, j := range in {
		x := make([]float64, len(g.l.Types()))
		for c, k := range cols {
			x[k] = math.Round(a.GPUs[i][c]/float64(j.Gang)/targetGrain) * targetGrain
		}
		target[j.ID] = x
	}
	return target, nil
}

// healthyProblem returns the problem of jobs over the healthy GPUs of l:
// its capacity has the types with a healthy GPU (cols[c] is the ledger
// index of its c-th type), a job's rate is 0 on a type with fewer healthy
// GPUs than its gang, jobs left with no rate are left out (in lists the
// ones kept, in order), and tenants are the owners, each of weight 1. It
// returns a nil problem when no job can run.
func healthyProblem(l *round.Ledger, jobs []*round.Job) (prob *alloc.Problem, in []*round.Job, cols []int, err error) {
	healthy := l.Healthy()
	types := l.Types()
	var ctypes []topology.GPUType
	var count []float64
	for k, n := range healthy {
		if n > 0 {
			ctypes, count, cols = append(ctypes, types[k]), append(count, float64(n)), append(cols, k)
		}
	}
	if len(ctypes) == 0 {
		return nil, nil, nil, nil
	}
	capa, err := alloc.NewCapacity(ctypes, count)
	if err != nil {
		return nil, nil, nil, err
	}
	var pjobs []alloc.Job
	var tenants []alloc.Tenant
	seen := map[alloc.TenantID]bool{}
	for _, j := range jobs {
		rates := make([]float64, len(cols))
		any := false
		for c, k := range cols {
			if j.Gang <= healthy[k] {
				rates[c] = j.Rates[k]
				any = any || rates[c] > 0
			}
		}
		if !any {
			continue
		}
		pj := j.Job
		pj.Rates = rates
		pjobs, in = append(pjobs, pj), append(in, j)
		if !seen[pj.Owner] {
			seen[pj.Owner] = true
			tenants = append(tenants, alloc.Tenant{ID: pj.Owner, Weight: 1})
		}
	}
	if len(pjobs) == 0 {
		return nil, nil, nil, nil
	}
	prob, err = alloc.NewJobProblem(capa, tenants, pjobs)
	return prob, in, cols, err
}

// gavelPair is a (job, type) candidate of the priority pass.
type gavelPair struct {
	prio float64
	x    float64
	job  int // index in the ledger's (arrival, ID) order
	k    int
}

// plan returns the round's decision (not yet committed).
func (g *Gavel) plan(now float64) (*round.Decision, error) {
	jobs := g.l.Jobs()
	types := g.l.Types()
	left := g.l.Healthy()
	chosen := make([]int, len(jobs)) // type index + 1, 0 while waiting
	// 1. The preemption budget.
	if g.set.MinLease > 1 {
		for i, j := range jobs {
			if p, ok := g.l.Holding(j.ID); ok && j.Kept < g.set.MinLease {
				k := slices.Index(types, p.Type)
				chosen[i] = k + 1
				left[k] -= j.Gang
			}
		}
	}
	// 2. The priority pass.
	var cand []gavelPair
	for i, j := range jobs {
		x := g.st.Target[j.ID]
		if x == nil || chosen[i] != 0 {
			continue
		}
		for k, xk := range x {
			if xk <= 0 || !(j.Rates[k] > 0) {
				continue
			}
			p := math.Inf(1)
			if f := j.Fraction(k, now); f > 0 {
				p = xk / f
			}
			cand = append(cand, gavelPair{prio: p, x: xk, job: i, k: k})
		}
	}
	slices.SortFunc(cand, func(a, b gavelPair) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(b.x, a.x); c != 0 {
			return c
		}
		if c := cmp.Compare(a.job, b.job); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	for _, p := range cand {
		j := jobs[p.job]
		if chosen[p.job] == 0 && j.Gang <= left[p.k] {
			chosen[p.job] = p.k + 1
			left[p.k] -= j.Gang
		}
	}
	// 3. Work conservation.
	if !g.set.NoWorkConservation {
		var wait []int
		served := make([]float64, len(jobs))
		for i, j := range jobs {
			if chosen[i] == 0 {
				wait = append(wait, i)
				for k := range types {
					served[i] += j.Fraction(k, now)
				}
			}
		}
		slices.SortStableFunc(wait, func(a, b int) int { return cmp.Compare(served[a], served[b]) })
		for _, i := range wait {
			j := jobs[i]
			best := -1
			for k, r := range j.Rates {
				if r > 0 && j.Gang <= left[k] && (best < 0 || r > j.Rates[best]) {
					best = k
				}
			}
			if best >= 0 {
				chosen[i] = best + 1
				left[best] -= j.Gang
			}
		}
	}
	// 4. Placement.
	d := &round.Decision{Start: now, End: now + g.set.Round}
	if err := placeChosen(g.l, g.l.Placer(g.placer), d, chosen); err != nil {
		return nil, err
	}
	return d, nil
}

// placeChosen adds to d a placement for every job of l.Jobs() with a
// chosen type (chosen[i] is the type index + 1, 0 for a job that waits):
// gangs that hold slots of their type until now keep them (lease
// renewal), the others are placed largest first on the fewest servers,
// never on a failed GPU. The caller keeps Σ gangs within each type's
// healthy GPUs.
func placeChosen(l *round.Ledger, pl *topology.Placer, d *round.Decision, chosen []int) error {
	jobs := l.Jobs()
	types := l.Types()
	var fresh []int
	for i, j := range jobs {
		k := chosen[i] - 1
		if k < 0 {
			continue
		}
		if p, ok := l.Holding(j.ID); ok && p.Type == types[k] && pl.Reserve(p.GPUs) == nil {
			d.Placements = append(d.Placements, round.Placement{Jobs: p.Jobs, Type: p.Type, GPUs: p.GPUs})
			continue
		}
		fresh = append(fresh, i)
	}
	slices.SortStableFunc(fresh, func(a, b int) int { return cmp.Compare(jobs[b].Gang, jobs[a].Gang) })
	for _, i := range fresh {
		j := jobs[i]
		k := chosen[i] - 1
		gpus, err := pl.Place(types[k], j.Gang)
		if err != nil {
			return fmt.Errorf("stride: placing job %q: %w", j.ID, err)
		}
		d.Placements = append(d.Placements, round.Placement{Jobs: []alloc.JobID{j.ID}, Type: types[k], GPUs: gpus})
	}
	return nil
}

// gavelMechanism names Gavel's snapshots.
const gavelMechanism = "gavel"

// Snapshot returns the scheduler's whole state as JSON: the ledger, the
// allocation in force and the bookkeeping of the preemption budget.
func (g *Gavel) Snapshot() ([]byte, error) {
	return round.Seal(gavelMechanism+"/"+g.pol.Name(), g.l, &g.st)
}

// Restore replaces the state with a snapshot taken by a Gavel scheduler of
// the same policy on the same cluster and types. It returns an error
// wrapping gpufair.ErrSnapshot, and changes nothing, otherwise.
func (g *Gavel) Restore(snapshot []byte) error {
	var st gavelState
	l, err := round.Open(snapshot, gavelMechanism+"/"+g.pol.Name(), g.l, &st)
	if err != nil {
		return err
	}
	for id, x := range st.Target {
		if len(x) != len(l.Types()) {
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%d target fractions for %d types", len(x), len(l.Types()))
		}
	}
	if st.Target == nil {
		st.Target = map[alloc.JobID][]float64{}
	}
	g.l, g.st = l, st
	g.placer = l.Placer(nil)
	return nil
}

var _ round.Scheduler = (*Gavel)(nil)
