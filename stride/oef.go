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

// OEFSettings tune an OEF scheduler. A nil *OEFSettings means the zero
// value: 6-minute rounds, no time budget, work conservation on.
type OEFSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound (OEF's evaluation uses 5 minutes, 300).
	Round float64
	// Budget bounds the time Decide spends solving OEF; 0 means no bound.
	// A solve cut short leaves the shares of the previous solve in force,
	// and the decision is marked Partial.
	Budget time.Duration
	// NoWorkConservation turns off the pass that gives GPUs no share
	// uses to waiting jobs, so that each tenant runs only within its own
	// rounded share, as in OEF's placer.
	NoWorkConservation bool
	// WarmStart seeds each cooperative solve with the binding envy rows
	// of the one before (alloc.OEFSettings.WarmRows) and starts it from
	// that solve's basis (alloc.OEFSettings.WarmBasis, with the pure-Go
	// simplex), or where the one before was cut short (Budget, Decide's
	// ctx), with the rows and basis it had reached; the snapshot keeps
	// them. The shares stay exact, and a re-solve after a few jobs came,
	// went or were measured again takes a fraction of a cold one on large
	// noisy workloads (docs/benchmarks/oef.md). Off by default: where the
	// optimum is not unique, a seeded solve may pick another optimal
	// allocation than a cold one, and the recorded reproductions were made
	// cold. Ignored in non-cooperative mode.
	WarmStart bool
	// FallbackEnvyTolerance ε in [0, 1), in cooperative mode, is the envy
	// a solve settles for when the exact one does not end in time (Budget, or
	// Decide's ctx): each solve first allocates with the policy's
	// alloc.OEFSettings.EnvyTolerance set to ε, which is fast where jobs'
	// rates nearly agree (2,000 jobs of 20 types with 2% noise: 0.03 to
	// 0.3 s at ε = 0.05 against 9 to 13 s exactly, docs/benchmarks/oef.md),
	// then exactly with what is left. If the exact solve is cut short, the
	// tolerant shares (envy at most ε, in the sense of EnvyTolerance)
	// replace the previous ones, the decision is marked Partial, and the
	// next Decide tries again. With WarmStart it goes on from where the
	// cut-short solve stopped (alloc.OEFStopped: its envy rows and, with
	// the pure-Go simplex, its basis), so that the exact shares come after
	// a few rounds even where the budget is below a cold solve's time (2,000
	// noisy jobs, 1 s budgets, one job departing and one arriving a round:
	// exact after 7 to 39 rounds, docs/benchmarks/oef.md). Each round
	// solves the tolerant shares again first and rebuilds the exact
	// solve's model before going on, so a budget near those fixed costs
	// never lets it end: 60 jobs with 2 ms budgets stayed Partial round
	// after round, where one unbounded solve took about 6 ms. Give the
	// budget a few times a cold tolerant solve's time. Without WarmStart
	// it starts cold each time, and then never ends (bounding
	// each round by Decide's ctx instead lets the caller give one round
	// more time).
	// Where no two distinct rows are within ε the first solve is the
	// exact one, and there is no second.
	// Zero, the default, keeps the previous shares when a solve is cut
	// short. A policy whose own EnvyTolerance is set refuses it.
	FallbackEnvyTolerance float64
	// Tenants gives the weights of the jobs' owners, weighted OEF (section
	// 4.2.3); an owner not listed has weight 1. Only owners with jobs in
	// the system are in a solve.
	Tenants []alloc.Tenant
}

// OEF is OEF's scheduler (Middleware'24, sections 4.3 and 6) on the round
// contract. It solves alloc.OEF over the jobs in the system, whenever jobs,
// rates or healthy GPUs change, for each tenant's ideal GPUs of each type,
// ideal_ik (the sum of its jobs' rows), and realises them round by round:
//
//  0. Overdue jobs: a job that has waited StarvationBound rounds (N_i for
//     its tenant i) runs first, longest waiting first, on its fastest
//     type with a gang's worth of GPUs left.
//  1. Rounding with carried deviation (section 4.3): tenant i is owed
//     x_ik = ideal_ik + dev_ik GPUs of type k, less what its overdue jobs
//     took, rounded to whole shares (the rounding of Rounder); a share
//     below the tenant's smallest job that runs on k is 0. The tenant's
//     longest-waiting job (its head) holds the type it is owed most of
//     among those it runs on: there the share is 0 or at least its gang.
//  2. Rotation within a tenant, longest waiting first (the paper's
//     evaluation, section 6.1.3): the tenant's jobs are taken in order of
//     the round since which they have waited (then fewest rounds run, then
//     arrival), and each runs
//     on the type of its share, with a gang's worth left, where its rate
//     is highest. If the head fits nowhere, the tenant's other jobs do not
//     use its held type: the held share builds up for the head. A tenant
//     with more jobs than its share holds rotates them: a job that ran
//     yields to one that waited, and resumes from a checkpoint when its
//     turn comes again (round.Placement.Restart; sim.Settings.Restart
//     prices it), so a short Round costs such tenants more restarts.
//  3. dev_ik += ideal_ik − real_ik (section 4.3), real_ik being the GPUs
//     of type k the tenant was given: those its jobs took in steps 0 and
//     2, and the rest of its rounded share if a job of it that runs on k
//     still waits (its gangs did not pack into the share). Charging only
//     the GPUs its jobs used starved other tenants: a tenant with a share
//     of 4, a 2-GPU job first in rotation and a 4-GPU job next, ran 2 and
//     was owed 2 more each round, and the rounding took them from a tenant
//     of 1-GPU jobs while they sat idle. A share beyond what the tenant's
//     jobs can use (all of them running) is not charged, as section 4.3's
//     placer, which assumes a tenant fills its share, would: a tenant of
//     one job given 2 GPUs would lose its next rounds for a GPU it could
//     not use. dev_ik is clipped to ±(G_i + 1), G_i the tenant's largest
//     gang.
//  4. Work conservation: GPUs no share used go to waiting jobs of any
//     tenant, longest waiting first, on the fastest type with room; this
//     time is not charged to the tenant. OEFSettings.NoWorkConservation
//     turns it off.
//  5. Placement as in Gavel: renewals keep their slots, the rest are
//     placed largest gang first on the fewest servers.
//
// No starvation. With the jobs and shares fixed and no GPU failing, every
// job of a tenant with a positive share on each of its jobs' types runs
// within N_i + M rounds of its arrival and of its last run, M being the
// jobs in the system: within N_i it is overdue, and then, as the
// longest-waiting overdue job always finds the healthy GPUs its gang fits
// (the ledger admits no job whose gang fits no type it runs on), the jobs
// that have waited longer than it, fewer than M, run one round each at
// the latest. The rounding alone usually serves it well within N_i (the
// deviation of a held share grows by ideal_ik each round until the head
// fits); step 0 makes the bound hold when other tenants' deviations
// outbid it. TestOEFNoStarvation checks the bound on random instances.
//
// Tenants are the jobs' owners, of the weights OEFSettings.Tenants gives
// them (1 by default). A job whose gang is larger
// than the healthy GPUs of a type gets rate 0 there. alloc.OEF's Caps and
// JobTypes are applied to the tenants and jobs in the system.
//
// A tenant with jobs of several job types (alloc.OEF.JobTypes, or rows
// that differ) is several virtual users to OEF (section 4.2.4). Its share
// is rounded as one (steps 1 to 3), then split among its job types by the
// same rounding with a deviation carried for each job type, and each job
// runs on its job type's part (or on a part none was given). Rotating the
// tenant's jobs over its summed share instead gave section 4.2.4's u1, whose
// two job types are owed 14.29 each, 12.4 and 15.2 over 600 rounds.
//
// The zero value is not usable; build one with NewOEF.
type OEF struct {
	pol     alloc.OEF
	set     OEFSettings
	l       *round.Ledger
	st      oefState
	placer  *topology.Placer
	weights tenantTable // OEFSettings.Tenants
}

// oefState is what OEF keeps beyond the ledger, as snapshotted.
type oefState struct {
	Ideal map[alloc.TenantID][]float64 `json:"ideal"`     // ideal_ik
	Dev   map[alloc.TenantID][]float64 `json:"deviation"` // dev_ik
	// KindIdeal and KindDev are the ideal and deviation of each job type
	// of a tenant with several, keyed by kindKey.
	KindIdeal map[alloc.TenantID][]float64 `json:"job_type_ideal,omitempty"`
	KindDev   map[alloc.TenantID][]float64 `json:"job_type_deviation,omitempty"`
	Since     map[alloc.JobID]int          `json:"waiting_since"`
	Solved    bool                         `json:"solved"`
	SolvedGen int                          `json:"solved_generation"`
	// Warm and WarmBasis hold the last cooperative solve's binding envy
	// rows and basis, with OEFSettings.WarmStart.
	Warm      []alloc.OEFEnvyRow `json:"warm_rows,omitempty"`
	WarmBasis *alloc.OEFBasis    `json:"warm_basis,omitempty"`
}

// keepWarm keeps rows and basis b for the next cooperative solve
// (OEFSettings.WarmStart); a basis without shares is none.
func (s *oefState) keepWarm(rows []alloc.OEFEnvyRow, b alloc.OEFBasis) {
	s.Warm, s.WarmBasis = rows, nil
	if len(b.Shares) > 0 {
		s.WarmBasis = &b
	}
}

// cloneRows returns a deep copy of m, nil for nil.
func cloneRows(m map[alloc.TenantID][]float64) map[alloc.TenantID][]float64 {
	if m == nil {
		return nil
	}
	out := make(map[alloc.TenantID][]float64, len(m))
	for id, d := range m {
		out[id] = slices.Clone(d)
	}
	return out
}

// clone returns a deep copy, for a rollback.
func (s oefState) clone() oefState {
	out := s
	out.Ideal, out.KindIdeal = maps.Clone(s.Ideal), maps.Clone(s.KindIdeal)
	out.Dev, out.KindDev = cloneRows(s.Dev), cloneRows(s.KindDev)
	out.Since = maps.Clone(s.Since)
	out.Warm = slices.Clone(s.Warm)
	if s.WarmBasis != nil {
		b := s.WarmBasis.Clone()
		out.WarmBasis = &b
	}
	return out
}

// NewOEF returns OEF's scheduler with policy pol on cluster c, with job
// rates given over types (each a type of c). s may be nil. It returns the
// errors of round.NewLedger and an *gpufair.InputError for settings out of
// range or an unknown mode.
func NewOEF(pol alloc.OEF, c topology.Cluster, types []topology.GPUType, s *OEFSettings) (*OEF, error) {
	var set OEFSettings
	if s != nil {
		set = *s
	}
	if set.Round == 0 {
		set.Round = DefaultRound
	}
	switch {
	case pol.Mode != alloc.NonCooperative && pol.Mode != alloc.Cooperative:
		return nil, gpufair.Invalid("OEF.Mode", "", gpufair.ErrValue, "unknown mode %v", pol.Mode)
	case !(set.Round > 0) || math.IsInf(set.Round, 0):
		return nil, gpufair.Invalid("OEFSettings.Round", "", gpufair.ErrValue, "round length %v", set.Round)
	case set.Budget < 0:
		return nil, gpufair.Invalid("OEFSettings.Budget", "", gpufair.ErrValue, "budget %v", set.Budget)
	case set.FallbackEnvyTolerance == 0:
	case !(set.FallbackEnvyTolerance > 0 && set.FallbackEnvyTolerance < 1):
		return nil, gpufair.Invalid("OEFSettings.FallbackEnvyTolerance", "", gpufair.ErrValue, "%v is not in [0, 1)", set.FallbackEnvyTolerance)
	case pol.Mode != alloc.Cooperative:
		return nil, gpufair.Invalid("OEFSettings.FallbackEnvyTolerance", "", gpufair.ErrValue, "%v: envy tolerance is for cooperative mode, not %v", set.FallbackEnvyTolerance, pol.Mode)
	case pol.Settings != nil && pol.Settings.EnvyTolerance != 0:
		return nil, gpufair.Invalid("OEFSettings.FallbackEnvyTolerance", "", gpufair.ErrValue, "%v with a policy whose EnvyTolerance is %v", set.FallbackEnvyTolerance, pol.Settings.EnvyTolerance)
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
	o := &OEF{pol: pol, set: set, l: l, st: oefState{Ideal: map[alloc.TenantID][]float64{}, Dev: map[alloc.TenantID][]float64{}, Since: map[alloc.JobID]int{}}, weights: newTenantTable(set.Tenants)}
	o.placer = l.Placer(nil)
	return o, nil
}

// Name returns the policy's name.
func (o *OEF) Name() string { return o.pol.Name() }

// Ledger returns the scheduler's ledger, to read only.
func (o *OEF) Ledger() *round.Ledger { return o.l }

// Ideal returns tenant id's ideal GPUs of each type from the latest solve.
func (o *OEF) Ideal(id alloc.TenantID) ([]float64, bool) {
	x, ok := o.st.Ideal[id]
	return slices.Clone(x), ok
}

// Deviation returns tenant id's carried deviation on each type.
func (o *OEF) Deviation(id alloc.TenantID) ([]float64, bool) {
	x, ok := o.st.Dev[id]
	return slices.Clone(x), ok
}

// Apply checks and applies events (round.Ledger.Apply).
func (o *OEF) Apply(events ...round.Event) error {
	if err := o.l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		if e.Kind == round.Departed {
			delete(o.st.Since, e.Job.ID)
		}
	}
	return nil
}

// Decide solves OEF if it is due, and returns the round's decision.
func (o *OEF) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := o.l.Begin(now); err != nil {
		return nil, err
	}
	old := o.st.clone()
	partial, err := o.maybeSolve(ctx)
	var d *round.Decision
	if err == nil {
		d, err = o.plan(now)
	}
	if err == nil {
		d.Partial = partial
		err = o.l.Commit(d)
	}
	if err != nil {
		o.st = old
		o.l.Abort()
		return nil, err
	}
	return d, nil
}

// maybeSolve solves OEF when jobs, rates or healthy GPUs changed. It reports
// whether a solve was cut short by the budget, in which case the previous
// shares stay.
func (o *OEF) maybeSolve(ctx context.Context) (partial bool, err error) {
	st := &o.st
	if st.Solved && st.SolvedGen == o.l.Generation() {
		return false, nil
	}
	var ideal, tolerant oefShares
	var warm alloc.OEFCertificate
	var stop *alloc.OEFStopped
	partial, err = withinBudget(ctx, o.set.Budget, func(ctx context.Context) (err error) {
		if o.set.FallbackEnvyTolerance > 0 {
			var exact bool
			if tolerant, warm, exact, err = o.solve(ctx, o.set.FallbackEnvyTolerance); err != nil || exact {
				ideal = tolerant
				return err
			}
		}
		ideal, warm, _, err = o.solve(ctx, 0)
		errors.As(err, &stop)
		return err
	})
	if err != nil {
		return partial, err
	}
	if partial {
		if tolerant.tenant != nil {
			// Solved stays false: the next Decide tries again.
			st.Ideal, st.KindIdeal = tolerant.tenant, tolerant.kind
		}
		if stop != nil && o.set.WarmStart {
			// The next solve goes on from where this one stopped.
			st.keepWarm(stop.Rows, stop.Basis)
		}
		return true, nil
	}
	st.Ideal, st.KindIdeal = ideal.tenant, ideal.kind
	st.keepWarm(warm.Binding, warm.Basis)
	st.Solved, st.SolvedGen = true, o.l.Generation()
	return false, nil
}

// solve returns each tenant's ideal GPUs of each type, with WarmStart in
// cooperative mode the solve's certificate (its binding envy rows and
// basis start the next), and whether the solve was exact. A positive tol
// solves with that EnvyTolerance.
func (o *OEF) solve(ctx context.Context, tol float64) (ideal oefShares, warm alloc.OEFCertificate, exact bool, err error) {
	ideal = oefShares{tenant: map[alloc.TenantID][]float64{}}
	prob, in, cols, err := healthyProblem(o.l, o.l.Jobs(), nil, o.weights.tenant)
	if err != nil || prob == nil {
		return ideal, warm, true, err
	}
	pol := o.pol
	pol.Caps, pol.JobTypes = nil, nil
	for _, t := range prob.Tenants {
		if c, ok := o.pol.Caps[t.ID]; ok {
			if pol.Caps == nil {
				pol.Caps = map[alloc.TenantID]float64{}
			}
			pol.Caps[t.ID] = c
		}
	}
	for _, j := range prob.Jobs {
		if l, ok := o.pol.JobTypes[j.ID]; ok {
			if pol.JobTypes == nil {
				pol.JobTypes = map[alloc.JobID]string{}
			}
			pol.JobTypes[j.ID] = l
		}
	}
	var a *alloc.Allocation
	if pol.Mode == alloc.Cooperative && (o.set.WarmStart || tol > 0) {
		var set alloc.OEFSettings
		if pol.Settings != nil {
			set = *pol.Settings
		}
		if o.set.WarmStart {
			set.WarmRows = o.st.Warm
			// The basis is of the exact classes, not of a tolerance's
			// cells.
			if o.st.WarmBasis != nil && tol == 0 {
				set.WarmBasis = *o.st.WarmBasis
			}
		}
		if tol > 0 {
			set.EnvyTolerance = tol
		}
		pol.Settings = &set
		var cert alloc.OEFCertificate
		a, cert, err = pol.AllocateCertified(ctx, prob)
		exact = !math.IsInf(cert.Bound, 1)
		if o.set.WarmStart {
			warm = cert
		}
	} else {
		a, err = pol.Allocate(ctx, prob)
		exact = pol.Mode == alloc.NonCooperative || pol.Settings == nil || pol.Settings.EnvyTolerance == 0
	}
	if err != nil {
		return oefShares{}, alloc.OEFCertificate{}, false, fmt.Errorf("stride: %s over %d jobs: %w", pol.Name(), len(prob.Jobs), err)
	}
	n := len(o.l.Types())
	kinds := map[alloc.TenantID][]float64{}
	add := func(m map[alloc.TenantID][]float64, id alloc.TenantID, i int) {
		x := m[id]
		if x == nil {
			x = make([]float64, n)
			m[id] = x
		}
		for c, k := range cols {
			x[k] += a.GPUs[i][c]
		}
	}
	for i, j := range in {
		add(ideal.tenant, j.Owner, i)
		add(kinds, o.kindKey(j), i)
	}
	// Job types matter only to a tenant with several.
	several := map[alloc.TenantID]int{}
	for id := range kinds {
		several[kindOwner(id)]++
	}
	for id := range kinds {
		if several[kindOwner(id)] < 2 {
			delete(kinds, id)
		}
	}
	if len(kinds) > 0 {
		ideal.kind = kinds
	}
	for _, m := range []map[alloc.TenantID][]float64{ideal.tenant, ideal.kind} {
		for _, x := range m {
			for k := range x {
				x[k] = grain(x[k])
			}
		}
	}
	return ideal, warm, exact, nil
}

// oefShares is a solve's ideal GPUs of each type, of each tenant and of
// each job type of a tenant with several (kindKey; nil if none has).
type oefShares struct{ tenant, kind map[alloc.TenantID][]float64 }

// oefTenant is one tenant's part of a round's plan, its jobs longest
// waiting first; its largest gang is G_i.
type oefTenant struct {
	id alloc.TenantID
	oefGroup
}

// oefGroup is a group of a round's jobs: a tenant's, or those of one of
// its job types.
type oefGroup struct {
	jobs    []int // indices into the ledger's jobs
	minGang []int // smallest gang that runs on each type, math.MaxInt if none
	largest int   // the largest gang
}

func newOEFGroup(types int) oefGroup {
	g := oefGroup{minGang: make([]int, types)}
	for k := range g.minGang {
		g.minGang[k] = math.MaxInt
	}
	return g
}

// add adds job j, of index ji, on healthy GPUs of each type.
func (g *oefGroup) add(ji int, j *round.Job, healthy []int) {
	g.jobs = append(g.jobs, ji)
	g.largest = max(g.largest, j.Gang)
	for k, rate := range j.Rates {
		if rate > 0 && j.Gang <= healthy[k] {
			g.minGang[k] = min(g.minGang[k], j.Gang)
		}
	}
}

// plan returns the round's decision (not yet committed), and updates the
// deviations and waiting rounds.
func (o *OEF) plan(now float64) (*round.Decision, error) {
	jobs := o.l.Jobs()
	types := o.l.Types()
	pool := o.l.Healthy() // GPUs not yet given out this round
	r := o.l.Rounds()
	st := &o.st
	for _, j := range jobs {
		if _, ok := st.Since[j.ID]; !ok {
			st.Since[j.ID] = r
		}
	}
	tenants := o.tenants(jobs, pool)
	chosen := make([]int, len(jobs)) // type index + 1, 0 while waiting
	used := make([][]int, len(tenants))
	// The job types of tenants with several, and what each used.
	kinds := make([][]oefKind, len(tenants))
	kindOf := make([]int, len(jobs))
	usedKind := make([][][]int, len(tenants))
	for i, t := range tenants {
		used[i] = make([]int, len(types))
		kinds[i] = o.kinds(t, jobs, pool, kindOf)
		for range kinds[i] {
			usedKind[i] = append(usedKind[i], make([]int, len(types)))
		}
	}
	run := func(i, ji, k int) {
		chosen[ji] = k + 1
		used[i][k] += jobs[ji].Gang
		pool[k] -= jobs[ji].Gang
		if v := kindOf[ji]; v >= 0 {
			usedKind[i][v][k] += jobs[ji].Gang
		}
	}
	// 0. Overdue jobs first, longest waiting first.
	var overdue [][2]int // (tenant, job)
	for i, t := range tenants {
		n := StarvationBound(t.alloc(jobs), st.Ideal[t.id])
		for _, ji := range t.jobs {
			if n >= 0 && r-st.Since[jobs[ji].ID] >= n {
				overdue = append(overdue, [2]int{i, ji})
			}
		}
	}
	slices.SortStableFunc(overdue, func(a, b [2]int) int { return o.byWaiting(jobs, a[1], b[1]) })
	for _, oj := range overdue {
		if k := fastest(jobs[oj[1]], pool, -1); k >= 0 {
			run(oj[0], oj[1], k)
		}
	}
	// 1. Rounding, type by type, of what each tenant is owed beyond what
	// its overdue jobs took. The longest-waiting job of each tenant holds
	// the type it is owed most of among those it runs on: there the
	// tenant's share is 0 or at least that job's gang.
	x := make([][]float64, len(tenants))
	hold := make([]int, len(tenants))
	head := make([]int, len(tenants))
	for i, t := range tenants {
		dev := st.Dev[t.id]
		if dev == nil {
			dev = make([]float64, len(types))
			st.Dev[t.id] = dev
		}
		ideal := st.Ideal[t.id]
		x[i] = make([]float64, len(types))
		for k := range types {
			x[i][k] = dev[k] - float64(used[i][k])
			if ideal != nil {
				x[i][k] += ideal[k]
			}
		}
		hold[i], head[i] = -1, -1
		for _, ji := range t.jobs {
			if chosen[ji] == 0 {
				head[i] = ji
				break
			}
		}
		if head[i] < 0 {
			continue
		}
		for k, rate := range jobs[head[i]].Rates {
			if rate > 0 && jobs[head[i]].Gang <= pool[k] && (hold[i] < 0 || x[i][k] > x[i][hold[i]]) {
				hold[i] = k
			}
		}
	}
	shares := make([][]int, len(tenants))
	for i := range shares {
		shares[i] = make([]int, len(types))
	}
	col := make([]float64, len(tenants))
	minGang := make([]int, len(tenants))
	for k := range types {
		for i, t := range tenants {
			col[i], minGang[i] = x[i][k], t.minGang[k]
			if hold[i] == k {
				minGang[i] = max(minGang[i], jobs[head[i]].Gang)
			}
		}
		for i, s := range roundShares(col, minGang, pool[k]) {
			shares[i][k] = s
		}
	}
	// 1b. A tenant with several job types splits its shares among them.
	sub := make([][][]int, len(tenants)) // [tenant][job type][type]
	for i := range tenants {
		if kinds[i] != nil {
			sub[i] = o.splitShares(kinds[i], shares[i], usedKind[i], head[i], hold[i], jobs, kindOf)
		}
	}
	// 2. Rotation within each tenant: the head first; if it fits nowhere,
	// its held type is kept from the tenant's other jobs. A job of a
	// tenant with several job types runs on its job type's part of the
	// share, or on a part no job type was given.
	for i, t := range tenants {
		held := -1
		for _, ji := range t.jobs {
			if chosen[ji] != 0 {
				continue
			}
			left := make([]int, len(types))
			for k := range left {
				left[k] = min(pool[k], shares[i][k])
				if v := kindOf[ji]; v >= 0 {
					left[k] = min(left[k], sub[i][v][k]+unassigned(shares[i][k], sub[i], k))
				}
			}
			if k := fastest(jobs[ji], left, held); k >= 0 {
				run(i, ji, k)
				shares[i][k] -= jobs[ji].Gang
				if v := kindOf[ji]; v >= 0 {
					sub[i][v][k] = max(0, sub[i][v][k]-jobs[ji].Gang)
				}
			} else if ji == head[i] {
				held = hold[i]
			}
		}
	}
	// 3. Deviations, charged with real_ik: the GPUs used, and what is
	// left of the share while a job of the tenant that runs on k waits.
	for i, t := range tenants {
		ideal := st.Ideal[t.id]
		dev := st.Dev[t.id]
		bound := float64(t.largest + 1)
		for k := range types {
			real := used[i][k]
			if shares[i][k] > 0 && slices.ContainsFunc(t.jobs, func(ji int) bool { return chosen[ji] == 0 && jobs[ji].Rates[k] > 0 }) {
				real += shares[i][k]
			}
			d := dev[k] - float64(real)
			if ideal != nil {
				d += ideal[k]
			}
			dev[k] = max(-bound, min(bound, d))
		}
	}
	for id := range st.Dev {
		if !slices.ContainsFunc(tenants, func(t oefTenant) bool { return t.id == id }) {
			delete(st.Dev, id)
		}
	}
	o.kindDeviations(kinds, sub, usedKind, jobs, chosen)
	// 4. Work conservation.
	if !o.set.NoWorkConservation {
		var wait []int
		for i := range jobs {
			if chosen[i] == 0 {
				wait = append(wait, i)
			}
		}
		slices.SortStableFunc(wait, func(a, b int) int { return o.byWaiting(jobs, a, b) })
		for _, i := range wait {
			if k := fastest(jobs[i], pool, -1); k >= 0 {
				chosen[i] = k + 1
				pool[k] -= jobs[i].Gang
			}
		}
	}
	for i, j := range jobs {
		if chosen[i] != 0 {
			st.Since[j.ID] = r + 1
		}
	}
	// 5. Placement.
	var gangs []gangChoice
	for i, j := range jobs {
		if chosen[i] != 0 {
			gangs = append(gangs, gangChoice{ids: []alloc.JobID{j.ID}, k: chosen[i] - 1, gang: j.Gang})
		}
	}
	d := &round.Decision{Start: now, End: round.LeaseEnd(now, o.set.Round)}
	if err := placeGangs(o.l, o.l.Placer(o.placer), d, gangs); err != nil {
		return nil, err
	}
	return d, nil
}

// fastest returns the type, other than skip, where j's rate is highest
// among those with a gang's worth of GPUs in room, or -1.
func fastest(j *round.Job, room []int, skip int) int {
	best := -1
	for k, rate := range j.Rates {
		if rate > 0 && k != skip && j.Gang <= room[k] && (best < 0 || rate > j.Rates[best]) {
			best = k
		}
	}
	return best
}

// alloc returns the tenant's jobs as alloc.Jobs, for StarvationBound.
func (t oefTenant) alloc(jobs []*round.Job) []alloc.Job {
	out := make([]alloc.Job, len(t.jobs))
	for n, ji := range t.jobs {
		out[n] = jobs[ji].Job
	}
	return out
}

// byWaiting orders jobs[a] and jobs[b] longest waiting first: by the round
// since which they have waited, then fewest rounds run (jobs that ran in
// the same round take turns), then arrival (the ledger's order).
func (o *OEF) byWaiting(jobs []*round.Job, a, b int) int {
	if c := cmp.Compare(o.st.Since[jobs[a].ID], o.st.Since[jobs[b].ID]); c != 0 {
		return c
	}
	if c := cmp.Compare(jobs[a].Rounds, jobs[b].Rounds); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// tenants groups the jobs by owner, in order of tenant ID, each tenant's
// jobs longest waiting first (byWaiting).
func (o *OEF) tenants(jobs []*round.Job, healthy []int) []oefTenant {
	index := map[alloc.TenantID]int{}
	var out []oefTenant
	for i, j := range jobs {
		n, ok := index[j.Owner]
		if !ok {
			n = len(out)
			index[j.Owner] = n
			out = append(out, oefTenant{id: j.Owner, oefGroup: newOEFGroup(len(healthy))})
		}
		out[n].add(i, j, healthy)
	}
	for _, t := range out {
		slices.SortStableFunc(t.jobs, func(a, b int) int { return o.byWaiting(jobs, a, b) })
	}
	slices.SortFunc(out, func(a, b oefTenant) int { return cmp.Compare(a.id, b.id) })
	return out
}

// StarvationBound returns N = J·(⌈(G + 1)/ι⌉ + 1) for a tenant with jobs
// (over the scheduler's types) and ideal GPUs of each type: J is the number
// of jobs, G the largest gang, ι the smallest, over the jobs, of the
// largest ideal share on a type the job runs on. A job that has waited N
// rounds is overdue (see OEF). It returns -1 if some job has no positive
// share on a type it runs on: such a job is never overdue. A bound beyond
// an int is math.MaxInt.
func StarvationBound(jobs []alloc.Job, ideal []float64) int {
	largest := 0
	iota := math.Inf(1)
	for _, j := range jobs {
		largest = max(largest, j.Gang)
		best := 0.0
		for k, rate := range j.Rates {
			if rate > 0 && k < len(ideal) {
				best = max(best, ideal[k])
			}
		}
		iota = min(iota, best)
	}
	if !(iota > 0) {
		return -1
	}
	// In float64: a share of 1e-19 GPUs overflowed int, to a negative bound.
	n := float64(len(jobs)) * (math.Ceil(float64(largest+1)/iota) + 1)
	if n >= math.MaxInt {
		return math.MaxInt
	}
	return int(n)
}

// oefMechanism names OEF's snapshots.
const oefMechanism = "oef"

// Snapshot returns the scheduler's whole state as JSON: the ledger, the
// shares in force, the deviations and the waiting rounds.
func (o *OEF) Snapshot() ([]byte, error) {
	return round.Seal(oefMechanism+"/"+o.pol.Name(), o.l, &o.st)
}

// Restore replaces the state with a snapshot taken by an OEF scheduler of
// the same mode on the same cluster and types. It returns an error wrapping
// gpufair.ErrSnapshot, and changes nothing, otherwise.
func (o *OEF) Restore(snapshot []byte) error {
	var st oefState
	l, err := round.Open(snapshot, oefMechanism+"/"+o.pol.Name(), o.l, &st)
	if err != nil {
		return err
	}
	// An ideal share is within its type's GPUs (to the solver's
	// tolerance), and a deviation is kept within a gang and one GPU of
	// zero (Decide's step 3), so within all the GPUs and one.
	count := l.Count()
	total := 0
	for _, c := range count {
		total += c
	}
	for _, m := range []struct {
		values map[alloc.TenantID][]float64
		ok     func(k int, v float64) bool
	}{
		{st.Ideal, func(k int, v float64) bool { return v >= -1e-6 && v <= float64(count[k])*(1+1e-6)+1e-6 }},
		{st.Dev, func(_ int, v float64) bool { return math.Abs(v) <= float64(total+1) }},
		{st.KindIdeal, func(k int, v float64) bool { return v >= -1e-6 && v <= float64(count[k])*(1+1e-6)+1e-6 }},
		{st.KindDev, func(_ int, v float64) bool { return math.Abs(v) <= float64(total+1) }},
	} {
		for _, id := range slices.Sorted(maps.Keys(m.values)) {
			x := m.values[id]
			if len(x) != len(count) {
				return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%d values for %d types", len(x), len(count))
			}
			for k, v := range x {
				if !m.ok(k, v) {
					return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "%v GPUs of type %q", v, l.Types()[k])
				}
			}
		}
	}
	if st.Ideal == nil {
		st.Ideal = map[alloc.TenantID][]float64{}
	}
	if st.Dev == nil {
		st.Dev = map[alloc.TenantID][]float64{}
	}
	if st.Since == nil {
		st.Since = map[alloc.JobID]int{}
	}
	o.l, o.st = l, st
	o.placer = l.Placer(nil)
	return nil
}

var _ round.Scheduler = (*OEF)(nil)
