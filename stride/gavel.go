package stride

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
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

// GavelResetInterval is the least time, in seconds, between two resets of
// the time jobs have run in Gavel's own scheduler
// (minimum_time_between_allocation_resets, 32 minutes), for
// GavelSettings.ResetInterval.
const GavelResetInterval = 1920.0

// GavelSettings tune a Gavel scheduler. A nil *GavelSettings means the zero
// value: 6-minute rounds, no time budget, the policy solved whenever jobs,
// rates or healthy GPUs change, work conservation on, no preemption budget,
// f_mk counted from each job's arrival.
type GavelSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Budget bounds the time Decide spends solving the policy; 0 means no
	// bound. A solve cut short leaves the allocation of the previous solve
	// in force, and the decision is marked Partial. The next Decide solves
	// again from the start, with the same budget: a policy that never ends
	// within it keeps the last allocation in force for good, and jobs that
	// arrived since it was solved get GPUs only from work conservation
	// (GPUs the allocation leaves idle, least served first; none with
	// NoWorkConservation).
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
	// Tenants gives the weights of the jobs' owners, for the policies
	// that read them (alloc.Hierarchical, OEF); an owner not listed has
	// weight 1. Every tenant listed is in every problem solved, with jobs
	// in the system or not.
	Tenants []alloc.Tenant
	// NoWorkConservation turns off the pass that gives GPUs the priority
	// pass leaves idle to waiting jobs, so that each job runs only on the
	// types its allocation gives it time on, as in Gavel's Algorithm 1.
	NoWorkConservation bool
	// ResetInterval, if positive, counts the fractions f_mk of the
	// priority pass from the latest reset instead of from each job's
	// arrival, as Gavel's paper does ("between allocation recomputation
	// events"): f_mk is the time m ran on k since max(reset, arrival)
	// over that time. A reset comes with a solve of the policy that
	// finishes (not one cut short by Budget), at least ResetInterval
	// seconds after the previous reset; a solve sooner makes the reset
	// wait for the first round ResetInterval after the previous one, so
	// that a trace that re-solves every round does not forget every
	// round's history. The first solve always resets. GavelResetInterval
	// is Gavel's own. 0 counts f_mk from arrival (round.Job.Fraction).
	ResetInterval float64
	// PairPriorities, with a space-sharing policy, ranks each pair of
	// jobs that the allocation co-locates as a combination of its own, as
	// Gavel's Algorithm 1 (section 5) does: a candidate (m, n, k) with
	// priority X_mnk / f_mnk, f_mnk being the time the two ran together on
	// k over the time since both arrived (or since the latest reset), next
	// to each job's candidate (m, k) with its time alone, X_mk / f_mk over
	// its time alone. A candidate runs if none of its jobs is placed yet
	// and Gang GPUs of its type are left. X_mnk is m's co-located time
	// with n's job type, spread evenly over the jobs of that type. Without
	// it, a job's target on k is its time alone and co-located together,
	// and it takes a partner along when behind on its shared time.
	PairPriorities bool
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
//     Counting from arrival departs from the paper, which respects an
//     allocation only "between allocation recomputation events" (sections
//     3 and 5; Gavel's own scheduler resets the time run when it
//     recomputes one, at most every 32 minutes). It is a sound reading
//     where the policy is re-solved every few rounds, as each arrival and
//     departure of a busy trace makes it: no round's rounding is
//     forgotten, and each job's share over its life follows its
//     allocations. But a job that ran above its new share, alone before
//     others arrived, then waits until its share since arrival falls to
//     it. GavelSettings.ResetInterval counts f_mk from the latest re-solve
//     instead, the paper's rule (Gavel.Fraction). f_mk is the job's own
//     share of the time; section 5 divides by the time all jobs ran on
//     k, which ranks pairs of different types on one scale only within a
//     type, and this pass ranks every pair on one list.
//     With a space-sharing policy (alloc.SpaceSharing, Gavel §3.1, or
//     alloc.GandivaPacking, which is given the pairs of jobs in force as
//     its Keep and the ledger's count of rounds as its Draw at each solve,
//     or alloc.FIFOPacking; the last two pair jobs by ID) a job's
//     target on k is its time alone plus its co-located time there, and a
//     job that has shared less of its time on k than its allocation says
//     takes a partner along: a waiting job of a label it should share with
//     on k, of the same gang, that should share with its label too,
//     highest priority first. The two run on one gang of GPUs, as one
//     Placement. Section 5 keeps a priority for each combination; here a
//     pair runs on the priority of the job that takes the partner along,
//     and whether it takes one turns on the share of its time on k that
//     it shared, counted as f_mk is (with ResetInterval, since the latest
//     reset). GavelSettings.PairPriorities ranks each pair as a
//     combination of its own instead, as section 5 does.
//  3. Work conservation: each job still waiting, least served first
//     (smallest Σ_k f_mk, with f_mk as in step 2, then arrival order),
//     runs on the fastest type it can use with Gang GPUs left. Afterwards
//     no GPU is idle while a waiting job could run on it.
//     GavelSettings.NoWorkConservation turns this off.
//  4. Gangs that run on the type they ran on until now keep their slots
//     (lease renewal); the others are placed largest first on the fewest
//     servers, never on a failed GPU.
//
// The policy is solved over the healthy GPUs whenever a job arrives or
// departs, rates are measured, or a GPU fails or is repaired. A job whose
// gang is larger than the healthy GPUs of a type gets rate 0 there.
// Tenants are the jobs' owners, with the weights GavelSettings.Tenants
// gives them (1 by default).
//
// The zero value is not usable; build one with NewGavel.
type Gavel struct {
	pol     alloc.Policy
	set     GavelSettings
	l       *round.Ledger
	st      gavelState
	placer  *topology.Placer
	tenants tenantTable // GavelSettings.Tenants
}

// gavelState is what Gavel keeps beyond the ledger, as snapshotted.
type gavelState struct {
	Target map[alloc.JobID][]float64 `json:"target"` // X_mk, alone
	// Partners and Labels are the co-located part of a space-sharing
	// allocation (alloc.SpaceSharing, GandivaPacking, FIFOPacking), empty
	// for other policies.
	Partners    map[alloc.JobID][]gavelPartner `json:"partners,omitempty"`
	Labels      map[alloc.JobID]string         `json:"labels,omitempty"`
	Solved      bool                           `json:"solved"`
	SolvedGen   int                            `json:"solved_generation"`
	SolvedRound int                            `json:"solved_round"`
	// The reset of f_mk (GavelSettings.ResetInterval), all zero without
	// one: Reset whether there has been one, ResetAt when the latest was,
	// ResetReceived the Received of each job in the system then (jobs
	// that arrived since have none), ResetShared its Shared (jobs that
	// had shared no GPU have none), and ResetDue whether a solve has
	// finished since.
	Reset         bool                      `json:"reset,omitempty"`
	ResetAt       float64                   `json:"reset_at,omitempty"`
	ResetReceived map[alloc.JobID][]float64 `json:"reset_received,omitempty"`
	ResetShared   map[alloc.JobID][]float64 `json:"reset_shared,omitempty"`
	ResetDue      bool                      `json:"reset_due,omitempty"`
	// With PairPriorities: PairRan[a][b] the time jobs a < b ran together
	// on each type (since the latest reset, if there is one), and Mates
	// the pairs of the lease in force, credited to PairRan when it has run.
	PairRan map[alloc.JobID]map[alloc.JobID][]float64 `json:"pair_ran,omitempty"`
	Mates   map[alloc.JobID]gavelMate                 `json:"mates,omitempty"`
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
	case !(set.ResetInterval >= 0) || math.IsInf(set.ResetInterval, 0):
		return nil, gpufair.Invalid("GavelSettings.ResetInterval", "", gpufair.ErrValue, "reset interval %v", set.ResetInterval)
	}
	if len(set.Tenants) > 0 {
		if err := alloc.ValidateTenants(set.Tenants); err != nil {
			return nil, err
		}
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		return nil, err
	}
	g := &Gavel{pol: pol, set: set, l: l, st: gavelState{Target: map[alloc.JobID][]float64{}}, tenants: newTenantTable(set.Tenants)}
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

// Fraction returns job id's f_mk on type k (an index into the ledger's
// types) at now, as the priority pass counts it: the time the job ran on k
// since the latest reset (GavelSettings.ResetInterval) or its arrival,
// whichever is later, over the time since then; without ResetInterval,
// round.Job.Fraction. Time run is counted up to the start of the lease in
// force (round.Job.Received). It returns 0 before any time has passed, for
// a job not in the system, and for k out of range.
func (g *Gavel) Fraction(id alloc.JobID, k int, now float64) float64 {
	j, ok := g.l.Job(id)
	if !ok {
		return 0
	}
	return g.fraction(j, k, now)
}

// fraction returns job j's f_mk on type k at now (Fraction).
func (g *Gavel) fraction(j *round.Job, k int, now float64) float64 {
	if !g.sinceReset(j) {
		return j.Fraction(k, now)
	}
	if k < 0 || k >= len(j.Received) {
		return 0
	}
	el := now - g.st.ResetAt
	if !(el > 0) {
		return 0
	}
	ran, _ := g.ran(j, k)
	return ran / el
}

// sinceReset reports whether job j's time run counts from the latest
// reset (GavelSettings.ResetInterval) rather than from its arrival: there
// has been one, and j arrived before it.
func (g *Gavel) sinceReset(j *round.Job) bool {
	return g.set.ResetInterval > 0 && g.st.Reset && j.Arrival < g.st.ResetAt
}

// ran returns the time job j ran on type k, and the part of it that it
// shared its GPUs, counted as the priority pass counts them: since the
// latest reset (sinceReset) or since its arrival.
func (g *Gavel) ran(j *round.Job, k int) (ran, shared float64) {
	ran = j.Received[k]
	if j.Shared != nil {
		shared = j.Shared[k]
	}
	if g.sinceReset(j) {
		if base := g.st.ResetReceived[j.ID]; k < len(base) {
			ran -= base[k]
		}
		if base := g.st.ResetShared[j.ID]; k < len(base) {
			shared -= base[k]
		}
	}
	return max(ran, 0), max(shared, 0)
}

// Apply checks and applies events (round.Ledger.Apply).
func (g *Gavel) Apply(events ...round.Event) error {
	if err := g.l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		if e.Kind == round.Departed {
			delete(g.st.Target, e.Job.ID)
			delete(g.st.Partners, e.Job.ID)
			delete(g.st.Labels, e.Job.ID)
			delete(g.st.ResetReceived, e.Job.ID)
			delete(g.st.ResetShared, e.Job.ID)
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
	g.st.creditPairs(g.l)
	partial, err := g.maybeSolve(ctx, now)
	if err != nil {
		g.st = old
		g.l.Abort()
		return nil, err
	}
	g.maybeReset(now)
	d, err := g.plan(now)
	if err == nil {
		d.Partial = partial
		if g.set.PairPriorities {
			g.st.recordMates(g.l, d)
		}
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
		st.Target, st.Partners, st.Labels = map[alloc.JobID][]float64{}, nil, nil
		st.Solved, st.SolvedGen, st.SolvedRound = true, g.l.Generation(), g.l.Rounds()
		st.ResetDue = g.set.ResetInterval > 0
		return false, nil
	}
	var sol gavelState
	partial, err = withinBudget(ctx, g.set.Budget, func(ctx context.Context) (err error) {
		sol, err = g.solve(ctx, now, jobs)
		return err
	})
	if partial || err != nil {
		return partial, err
	}
	// Copy on write: the state saved by Decide for a rollback keeps the
	// old maps.
	st.Target, st.Partners, st.Labels = sol.Target, sol.Partners, sol.Labels
	st.Solved, st.SolvedGen, st.SolvedRound = true, g.l.Generation(), g.l.Rounds()
	st.ResetDue = g.set.ResetInterval > 0
	return false, nil
}

// maybeReset resets the counts of f_mk at now (GavelSettings.ResetInterval)
// if a solve has finished since the latest reset, and ResetInterval has
// passed since it (or there has been none).
func (g *Gavel) maybeReset(now float64) {
	st := &g.st
	if g.set.ResetInterval == 0 || !st.ResetDue || (st.Reset && now-st.ResetAt < g.set.ResetInterval) {
		return
	}
	// New maps: the state saved by Decide for a rollback keeps the old.
	jobs := g.l.Jobs()
	base := make(map[alloc.JobID][]float64, len(jobs))
	var shared map[alloc.JobID][]float64
	for _, j := range jobs {
		base[j.ID] = slices.Clone(j.Received)
		if j.Shared != nil {
			if shared == nil {
				shared = map[alloc.JobID][]float64{}
			}
			shared[j.ID] = slices.Clone(j.Shared)
		}
	}
	st.Reset, st.ResetAt, st.ResetReceived, st.ResetShared, st.ResetDue = true, now, base, shared, false
	st.PairRan = nil
}

// targetGrain is the grain, in time fractions, to which the policy's
// allocation is rounded: LP solvers return equal shares that differ by
// about 1e-12, which would otherwise decide ties between priorities and
// differ between LP backends.
const targetGrain = 1e-9

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

// solve returns the policy's allocation, as time fractions per job and
// type, alone and co-located (the solution's Target, Partners and Labels).
func (g *Gavel) solve(ctx context.Context, now float64, jobs []*round.Job) (gavelState, error) {
	types := g.l.Types()
	sol := gavelState{Target: make(map[alloc.JobID][]float64, len(jobs))}
	// Every configured tenant, with jobs or not, so that a policy's
	// settings may name tenants that have none at the moment.
	prob, in, cols, err := healthyProblem(g.l, jobs, g.set.Tenants, g.tenants.tenant)
	if err != nil || prob == nil {
		return sol, err
	}
	pol := g.pol
	if g.set.Inputs != nil {
		pol = g.set.Inputs(now, prob, in)
	}
	var share func(context.Context, *alloc.Problem) (*alloc.SharingResult, error)
	switch sp := pol.(type) {
	case alloc.SpaceSharing:
		share = sp.Solve
	case alloc.GandivaPacking:
		sp.Keep, sp.Draw = g.st.jobPairs(), uint64(g.l.Rounds())
		share = sp.Solve
	case alloc.FIFOPacking:
		share = sp.Solve
	}
	if share != nil {
		r, err := share(ctx, prob)
		if err != nil {
			return sol, fmt.Errorf("stride: %s over %d jobs: %w", pol.Name(), len(prob.Jobs), err)
		}
		return colocated(sol, r, in, types, cols), nil
	}
	a, err := pol.Allocate(ctx, prob)
	if err == nil {
		// A policy of the caller's own may return any shape.
		err = a.ValidateFor(prob)
	}
	if err != nil {
		return sol, fmt.Errorf("stride: %s over %d jobs: %w", pol.Name(), len(prob.Jobs), err)
	}
	for i, j := range in {
		x := make([]float64, len(types))
		for c, k := range cols {
			x[k] = grain(a.GPUs[i][c] / float64(j.Gang))
		}
		sol.Target[j.ID] = x
	}
	return sol, nil
}

// grain rounds a time fraction to targetGrain.
func grain(x float64) float64 { return math.Round(x/targetGrain) * targetGrain }

// tenantTable holds the tenants a scheduler's settings list, by ID.
type tenantTable map[alloc.TenantID]alloc.Tenant

func newTenantTable(ts []alloc.Tenant) tenantTable {
	tt := make(tenantTable, len(ts))
	for _, t := range ts {
		tt[t.ID] = t
	}
	return tt
}

// tenant returns owner's tenant as listed, or owner of weight 1.
func (tt tenantTable) tenant(owner alloc.TenantID) alloc.Tenant {
	if t, ok := tt[owner]; ok {
		return t
	}
	return alloc.Tenant{ID: owner, Weight: 1}
}

// healthyProblem returns the problem of jobs over the healthy GPUs of l:
// its capacity has the types with a healthy GPU (cols[c] is the ledger
// index of its c-th type), a job's rate is 0 on a type with fewer healthy
// GPUs than its gang, jobs left with no rate are left out (in lists those
// kept, in order), and the tenants are extra followed by tenant(owner) for
// every other owner. It returns a nil problem when no job can run.
func healthyProblem(l *round.Ledger, jobs []*round.Job, extra []alloc.Tenant, tenant func(alloc.TenantID) alloc.Tenant) (prob *alloc.Problem, in []*round.Job, cols []int, err error) {
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
	tenants := slices.Clone(extra)
	seen := map[alloc.TenantID]bool{}
	for _, t := range tenants {
		seen[t.ID] = true
	}
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
			tenants = append(tenants, tenant(pj.Owner))
		}
	}
	if len(pjobs) == 0 {
		return nil, nil, nil, nil
	}
	prob, err = alloc.NewJobProblem(capa, tenants, pjobs)
	return prob, in, cols, err
}

// plan returns the round's decision (not yet committed).
func (g *Gavel) plan(now float64) (*round.Decision, error) {
	jobs := g.l.Jobs()
	types := g.l.Types()
	left := g.l.Healthy()
	st := &g.st
	chosen := make([]int, len(jobs)) // type index + 1, 0 while waiting
	mate := make([]int, len(jobs))   // the job sharing its gang, or -1
	for i := range mate {
		mate[i] = -1
	}
	sharing := len(st.Partners) > 0
	// 1. The preemption budget.
	if g.set.MinLease > 1 {
		var pos map[alloc.JobID]int // built for the first co-located gang
		for i, j := range jobs {
			p, ok := g.l.Holding(j.ID)
			if !ok || j.Kept >= g.set.MinLease || chosen[i] != 0 {
				continue
			}
			k := slices.Index(types, p.Type)
			if pos == nil && len(p.Jobs) > 1 {
				pos = make(map[alloc.JobID]int, len(jobs))
				for u, ju := range jobs {
					pos[ju.ID] = u
				}
			}
			// Its partner, if still in the system (one that left is not).
			partner := -1
			for _, id := range p.Jobs {
				if u, ok := pos[id]; ok && u != i {
					partner = u
				}
			}
			if j.Rates[k] == 0 || (partner >= 0 && jobs[partner].Rates[k] == 0) {
				continue // measured since as unable to run there
			}
			chosen[i] = k + 1
			left[k] -= j.Gang
			if partner >= 0 {
				chosen[partner] = k + 1
				mate[i], mate[partner] = partner, i
			}
		}
	}
	var byLabel map[string][]int
	if sharing {
		byLabel = map[string][]int{}
		for i, j := range jobs {
			if l, ok := st.Labels[j.ID]; ok {
				byLabel[l] = append(byLabel[l], i)
			}
		}
	}
	// 2. The priority pass.
	if sharing && g.set.PairPriorities {
		g.combinationPass(now, jobs, chosen, mate, left, byLabel)
	} else {
		g.jobPass(now, jobs, chosen, mate, left, byLabel)
	}
	// 3. Work conservation.
	if !g.set.NoWorkConservation {
		var wait []int
		served := make([]float64, len(jobs))
		for i, j := range jobs {
			if chosen[i] == 0 {
				wait = append(wait, i)
				for k := range types {
					served[i] += g.fraction(j, k, now)
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
	// 4. Placement. A job and its mate are one gang, listed in arrival
	// order.
	var gangs []gangChoice
	for i, j := range jobs {
		k := chosen[i] - 1
		if k < 0 || (mate[i] >= 0 && mate[i] < i) {
			continue
		}
		ids := []alloc.JobID{j.ID}
		if mate[i] >= 0 {
			ids = append(ids, jobs[mate[i]].ID)
		}
		gangs = append(gangs, gangChoice{ids: ids, k: k, gang: j.Gang})
	}
	d := &round.Decision{Start: now, End: round.LeaseEnd(now, g.set.Round)}
	if err := placeGangs(g.l, g.l.Placer(g.placer), d, gangs); err != nil {
		return nil, err
	}
	return d, nil
}

// jobPass is the priority pass of step 2 in Gavel's doc: each (job, type)
// a candidate, ranked by X / f, a job taking a partner along when behind
// on its shared time (with a space-sharing policy, byLabel listing each
// job type's jobs).
func (g *Gavel) jobPass(now float64, jobs []*round.Job, chosen, mate, left []int, byLabel map[string][]int) {
	st := &g.st
	sharing := byLabel != nil
	// total is a job's target time on type k, alone and co-located.
	total := func(i, k int) float64 {
		x := st.Target[jobs[i].ID]
		if x == nil {
			return 0
		}
		if sharing {
			return x[k] + st.pairTime(jobs[i].ID, k)
		}
		return x[k]
	}
	prio := func(i, k int, x float64) float64 {
		if f := g.fraction(jobs[i], k, now); f > 0 {
			return x / f
		}
		return math.Inf(1)
	}
	var cand []gavelCombination
	for i, j := range jobs {
		x := st.Target[j.ID]
		if x == nil || chosen[i] != 0 {
			continue
		}
		for k, xk := range x {
			if sharing {
				xk = total(i, k)
			}
			if xk > 0 && j.Rates[k] > 0 {
				cand = append(cand, gavelCombination{prio: prio(i, k, xk), x: xk, m: i, n: -1, k: k})
			}
		}
	}
	sortCombinations(cand)
	for _, p := range cand {
		j := jobs[p.m]
		if chosen[p.m] != 0 || j.Gang > left[p.k] {
			continue
		}
		chosen[p.m] = p.k + 1
		left[p.k] -= j.Gang
		if sharing && st.wantsPartner(j, p.k, st.Target[j.ID][p.k], g.ran) {
			if n := st.partner(jobs, p.m, p.k, chosen, func(n, k int) float64 { return prio(n, k, total(n, k)) }, byLabel); n >= 0 {
				chosen[n] = p.k + 1
				mate[p.m], mate[n] = n, p.m
			}
		}
	}
}

// gangChoice is a gang chosen to run on type k: jobs ids share its gang
// GPUs.
type gangChoice struct {
	ids  []alloc.JobID
	k    int
	gang int
}

// placeGangs adds a placement to d for every gang, in arrival order: gangs
// whose jobs held slots of their type until now keep them (lease renewal),
// the others are placed largest first on the fewest servers, never on a
// failed GPU. The caller keeps Σ gangs within each type's healthy GPUs.
func placeGangs(l *round.Ledger, pl *topology.Placer, d *round.Decision, gangs []gangChoice) error {
	types := l.Types()
	var fresh []gangChoice
	for _, c := range gangs {
		if p, ok := l.Holding(c.ids[0]); ok && p.Type == types[c.k] && held(p, c.ids) && pl.Reserve(p.GPUs) == nil {
			d.Placements = append(d.Placements, round.Placement{Jobs: c.ids, Type: p.Type, GPUs: p.GPUs})
			continue
		}
		fresh = append(fresh, c)
	}
	slices.SortStableFunc(fresh, func(a, b gangChoice) int { return cmp.Compare(b.gang, a.gang) })
	for _, c := range fresh {
		gpus, err := pl.Place(types[c.k], c.gang)
		if err != nil {
			return fmt.Errorf("stride: placing job %q: %w", c.ids[0], err)
		}
		d.Placements = append(d.Placements, round.Placement{Jobs: c.ids, Type: types[c.k], GPUs: gpus})
	}
	return nil
}

// held reports whether every job of ids ran in placement p.
func held(p round.Placement, ids []alloc.JobID) bool {
	for _, id := range ids {
		if !slices.Contains(p.Jobs, id) {
			return false
		}
	}
	return true
}

// gavelMechanism names Gavel's snapshots.
const gavelMechanism = "gavel"

// Snapshot returns the scheduler's whole state as JSON: the ledger, the
// allocation in force, the bookkeeping of the preemption budget and the
// latest reset of f_mk (GavelSettings.ResetInterval).
func (g *Gavel) Snapshot() ([]byte, error) {
	return round.Seal(gavelMechanism+"/"+g.pol.Name(), g.l, &g.st)
}

// Restore replaces the state with a snapshot taken by a Gavel scheduler of
// the same policy on the same cluster and types. It returns an error
// wrapping gpufair.ErrSnapshot, and changes nothing, otherwise, or if the
// snapshot's state is out of range (a reset of f_mk later than the ledger's
// time, counts at the reset that are not a job's Received then, or times
// two jobs ran together beyond their Shared).
func (g *Gavel) Restore(snapshot []byte) error {
	var st gavelState
	l, err := round.Open(snapshot, gavelMechanism+"/"+g.pol.Name(), g.l, &st)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(st.Target)) {
		x := st.Target[id]
		if len(x) != len(l.Types()) {
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%d target fractions for %d types", len(x), len(l.Types()))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.Partners)) {
		ps := st.Partners[id]
		for _, p := range ps {
			if p.Type < 0 || p.Type >= len(l.Types()) || !(p.Time > 0) {
				return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "co-located time %v on type %d", p.Time, p.Type)
			}
		}
	}
	if err := checkReset(&st, l); err != nil {
		return err
	}
	if err := checkPairTimes(&st, l); err != nil {
		return err
	}
	if st.Target == nil {
		st.Target = map[alloc.JobID][]float64{}
	}
	g.l, g.st = l, st
	g.placer = l.Placer(nil)
	return nil
}

// checkReset checks a restored state's reset of f_mk against its ledger l:
// a reset no later than l's time, counts at the reset for every job that
// arrived before it, and each job counted a job in the system that had
// arrived by then, with a count for each type between 0 and its Received,
// and a shared time, if any, between 0 and both its Shared and that count.
func checkReset(st *gavelState, l *round.Ledger) error {
	if !st.Reset {
		if st.ResetAt != 0 || len(st.ResetReceived) > 0 || len(st.ResetShared) > 0 {
			return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "reset counts without a reset")
		}
		return nil
	}
	if math.IsInf(st.ResetAt, 0) || st.ResetAt > l.Now() {
		return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "reset at %v, after the ledger's time %v", st.ResetAt, l.Now())
	}
	for _, j := range l.Jobs() {
		if _, ok := st.ResetReceived[j.ID]; !ok && j.Arrival < st.ResetAt {
			return gpufair.Invalid("Snapshot", string(j.ID), gpufair.ErrSnapshot, "no reset counts for a job that arrived at %v, before the reset at %v", j.Arrival, st.ResetAt)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.ResetReceived)) {
		base := st.ResetReceived[id]
		j, ok := l.Job(id)
		switch {
		case !ok:
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "reset counts for a job not in the system")
		case j.Arrival > st.ResetAt:
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "reset counts at %v for a job that arrived at %v", st.ResetAt, j.Arrival)
		case len(base) != len(j.Received):
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%d reset counts for %d types", len(base), len(j.Received))
		}
		for k, b := range base {
			if !(b >= 0 && b <= j.Received[k]) {
				return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "time run %v at the reset on type %d, against %v since arrival", b, k, j.Received[k])
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(st.ResetShared)) {
		shared := st.ResetShared[id]
		j, _ := l.Job(id)
		base, ok := st.ResetReceived[id]
		switch {
		case !ok:
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "shared time at the reset for a job without reset counts")
		case j.Shared == nil || len(shared) != len(j.Shared):
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%d shared times at the reset for a job that shared on %d types", len(shared), len(j.Shared))
		}
		for k, b := range shared {
			if !(b >= 0 && b <= j.Shared[k] && b <= base[k]) {
				return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "shared time %v at the reset on type %d, against %v since arrival and %v run by the reset", b, k, j.Shared[k], base[k])
			}
		}
	}
	return nil
}

var _ round.Scheduler = (*Gavel)(nil)
