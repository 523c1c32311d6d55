package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// OEFMode selects the environment OEF is designed for (OEF section 4.2).
type OEFMode int

const (
	// NonCooperative is OEF's mechanism for tenants who may lie (section
	// 4.2.1): maximise total normalised throughput subject to every user
	// (every unit of weight) receiving the same normalised throughput.
	NonCooperative OEFMode = iota
	// Cooperative is OEF's mechanism for tenants who report truthfully
	// (section 4.2.2): maximise total normalised throughput subject to
	// envy-freeness.
	Cooperative
)

// String returns "non-cooperative" or "cooperative".
func (m OEFMode) String() string {
	switch m {
	case NonCooperative:
		return "non-cooperative"
	case Cooperative:
		return "cooperative"
	}
	return fmt.Sprintf("OEFMode(%d)", int(m))
}

// OEFMethod selects how OEF's linear program is solved. Both methods give
// the same optimal value; where the optimum is not unique they may return
// different optimal allocations.
type OEFMethod int

const (
	// OEFStructured, the default, solves one row per class of users with
	// identical speedup rows (exact by symmetry) and exploits each mode's
	// structure: non-cooperative OEF through its dual, a problem in K prices
	// solved by cutting planes, then a small LP over the users that price
	// ties split; cooperative OEF by adding violated envy rows to a warm
	// model (one per envied bundle and its reverse; pruned of rows without
	// duals; with two GPU types, starting from the neighbour rows, which
	// imply all; with more, from rows between near neighbours and those of
	// a coarser instance's solution; with demand caps, only from rows that
	// imply the rest within each job type's classes, seeded by the job
	// types' uncapped solution) until none is violated, with the full model
	// as a fallback.
	OEFStructured OEFMethod = iota
	// OEFFullModel solves the paper's formulation, (9) or (10), over every
	// virtual user at once, with all n² envy rows in cooperative mode. It is
	// the reference the structured method is tested against, and slow: see
	// docs/benchmarks/oef.md.
	OEFFullModel
)

// String returns "structured" or "full model".
func (m OEFMethod) String() string {
	switch m {
	case OEFStructured:
		return "structured"
	case OEFFullModel:
		return "full model"
	}
	return fmt.Sprintf("OEFMethod(%d)", int(m))
}

// OEFSettings tunes OEF. A nil *OEFSettings, and the zero value, mean the
// structured method with the lp package's default settings.
type OEFSettings struct {
	Method OEFMethod
	// LP is passed to every LP solve; nil means lp's defaults.
	LP *lp.Settings
	// EnvyTolerance ε in [0, 1) trades exactness for time in cooperative
	// mode, for schedulers that re-solve often on noisy profiles. Virtual
	// users whose speedups agree within a factor √(1+ε) on every type
	// (and whose caps are equal) share one bundle, solved exactly for the
	// first of them (see envyCells). Guarantee, checked before returning:
	// no user values another's bundle more than 1+ε times its own (plus
	// the solver's tolerance, certEnvyTol), OEFCertificate.Envy ≤ ε; the capacity holds;
	// optimality is not certified (Bound is +Inf). Where no two users
	// with distinct speedups fall in one cell, as with distinct rows,
	// the solve is the exact one, and its result is exact and certified
	// (a finite Bound, and Binding rows), at no extra cost. Zero, the
	// default, is exact. Non-cooperative mode refuses a positive value.
	EnvyTolerance float64
	// WarmRows seeds cooperative OEF's envy-row generation (the structured
	// method) with these rows, typically the Binding rows of the
	// certificate of an earlier solve of a similar problem: a scheduler
	// that re-solves as jobs come and go, or as their rates are measured
	// again, starts next to the new optimum instead of from the rows
	// between near neighbours. A row naming a job that is no longer in the
	// problem is rerouted to the classes that job shared rows with, which
	// also get their near-neighbour rows, unless WarmBasis keeps that job
	// as a ghost (see OEFBasis); a row within one class is
	// skipped; classes that no row names, such as new jobs', get their
	// near-neighbour rows as usual. The result is exact and certified
	// either way: only the time changes, and, where the optimum is not
	// unique, which optimal allocation is returned (deterministic for
	// given rows). On 2,000 noisy jobs (docs/benchmarks/oef.md) a re-solve
	// took, with pure Go, 1.1 s for the same jobs, 1.5 to 1.6 s after 20
	// arrived or departed and 3.6 to 4.1 s with 1% to 5% of the jobs'
	// rates measured again, against 13.5 s cold; with CLP, 0.45 s, 0.9 to
	// 1.1 s and 3.0 s, against 9.7 s. Ignored by the full model, the
	// Gonum backend, in non-cooperative mode, and with two GPU types and
	// no caps, where the seed already implies every envy row.
	WarmRows []OEFEnvyRow
	// WarmBasis starts the first LP of cooperative OEF's row generation
	// from this basis (see OEFBasis), typically the Basis of the
	// certificate of an earlier solve of a similar problem, passed with its
	// Binding rows as WarmRows; its tight rows join WarmRows. Shares, rows
	// and GPU types that name jobs or types no longer in the problem are
	// left out. The result is exact and certified whatever the basis; only
	// the time changes. On 2,000 noisy jobs a re-solve of the same jobs
	// took 3 pivots with it and 3,778 with WarmRows alone
	// (docs/benchmarks/oef.md). A departed job that held more of the
	// basis's tight rows than shares (a pool's rows hung on it) is kept in
	// the LP as a ghost, with the pure-Go simplex and without caps (see
	// OEFBasis), so that the basis still fits; other departed jobs' shares
	// and rows are left out. The pure-Go simplex drops a basis that proves
	// ill-conditioned in the new problem; CLP, which cannot tell, is given
	// none where a job it names departed. Ignored where WarmRows are, and
	// by Gonum.
	WarmBasis OEFBasis
}

// OEFEnvyRow names an envy row of cooperative OEF's LP by jobs: the
// virtual user (see OEF) that holds job Envier does not value the bundle
// of the one that holds job Envied above its own.
type OEFEnvyRow struct {
	Envier JobID `json:"envier"`
	Envied JobID `json:"envied"`
}

// OEF is the allocation policy of "Optimal Resource Efficiency with Fairness
// in Heterogeneous GPU Clusters" (Middleware'24). It allocates to users, and
// shares each user's allocation out among the user's jobs.
//
// Speedups. Each job's throughputs are divided by its throughput on the
// slowest GPU type it can run on (speedup.Matrix.RelativeToSlowestRunnable;
// OEF's w_l^1 = 1, the slowest type being that of speedup.Matrix.TypeOrder),
// so a job's row is its speedup vector s, and a bundle x of GPUs is worth
// s·x (normalised throughput, in equivalents of that slowest GPU). The gang
// size cancels out of s. Where every job runs on the slowest type this is
// the paper's normaliser; a job with a zero rate there (a large model that
// does not fit a K80) is measured in its own slowest usable GPU, not given
// a made-up rate. A zero rate stays zero: the job never receives that type.
//
// Virtual users (sections 4.2.3 and 4.2.4). The jobs of one user with
// bit-identical speedup vectors form one job type. Each (user, job type)
// pair is a virtual user v with the speedup vector s_v and weight
// π_v = Weight/(number of the user's job types). A virtual user of weight π
// stands for π copies of one user (the replication of section 4.2.3);
// copies are interchangeable, so the replicated LP has an optimum in which
// all copies of v hold the same bundle y_v, and OEF solves for y_v
// directly, without materialising copies (weights need not be integers).
// v's allocation is X_v = π_v·y_v.
//
// Non-cooperative mode (9), with replication:
//
//	maximise Σ_v π_v·t  subject to  s_v·y_v = t for every v,
//	                                Σ_v π_v·y_vk ≤ m_k for every type k, y ≥ 0.
//
// Cooperative mode (10), with replication:
//
//	maximise Σ_v π_v·s_v·y_v  subject to  s_v·y_v ≥ s_v·y_u for every v ≠ u,
//	                                       Σ_v π_v·y_vk ≤ m_k, y ≥ 0.
//
// Jobs. Each type's GPUs of X_v are split among v's jobs that can run on
// it in proportion to Weight·Gang, so that every job of v runs the same
// fraction of time per unit of weight. Without caps, OEF models users, not
// jobs: a job may receive more GPUs than its gang uses at once, and it is
// the placer's work (package stride) to spread a user's share over its
// jobs. Declared job types (JobTypes) may mix rows: their speedup on a type
// is the Weight·Gang-weighted mean over the jobs that can run there.
//
// Caps (DemandCaps, Caps). Virtual user v then holds at most cap_v GPUs of
// any mix. The paper's formulations read as follows under caps (the LPs are
// in oef_caps.go):
//   - non-cooperative: progressive filling. All users share one level t,
//     raised until the cluster is used, except users a cap holds lower;
//     a user below the top level cannot gain without another user losing
//     (TestOEFCappedNonCooperative). With no cap binding it is (9).
//   - cooperative: maximise throughput subject to capped envy-freeness
//     (v does not prefer u's bundle scaled to v's own demand, by
//     min(1, ĉ_v/ĉ_u), ĉ the caps per unit of weight, at most the cluster
//     per unit of the smallest weight)
//     and capped sharing incentive (v values its bundle at least as much as
//     its best cap_v GPUs of an equal split, m·π_v/W), rows the LP states,
//     as with caps envy-freeness no longer implies it. Capped envy-freeness
//     is weaker than comparing v's best cap_v GPUs of u's bundle, which is
//     not a convex condition.
//
// Properties (ERRATA.md in the design notes says where the paper claims
// more):
//   - non-cooperative: every unit of weight gets the same normalised
//     throughput t; t is the largest such level; Pareto-efficient when every
//     user can run on every type (with a zero rate, equal throughputs can
//     force idle GPUs that only some users value); strategy-proof against
//     inflated reports only (reporting each speedup at least the true one,
//     speedups being rates relative to the job's slowest type, so with the
//     slowest type's rate reported true; ProbeSettings.HoldSlowest probes
//     exactly these): under-reporting can pay, and so can inflating the
//     rate on the slowest type, which lowers every speedup (the probe's
//     default inflations find such gains); neither envy-free nor
//     sharing-incentive.
//   - cooperative: envy-free (per unit of weight) and sharing-incentive
//     (Theorem 5.1) and the most efficient envy-free allocation, but not
//     always Pareto-efficient (Theorem 5.3's proof assumes the improving
//     allocation is envy-free) and not strategy-proof.
//   - Theorem 5.2 (each user receives adjacent GPU types) holds for
//     non-cooperative OEF when speedup ratios are consistently ordered
//     across users; it can fail otherwise, and for cooperative OEF.
//
// Ties. Where the optimum is not unique (expression (5) of the paper), the
// allocation returned is deterministic for a given input, method and
// backend. Without caps, OEFFullModel returns an optimal vertex of (9) or
// (10) over the virtual users. OEFStructured gives virtual users with
// identical rows one class and one bundle, which need not be a vertex, so
// the paper's bound of n+m−1 nonzeros (section 4.4; it holds at a vertex
// of (9)) need not hold: three users with rates ⟨1, 2⟩ on one GPU of each
// of two types each get [1/3, 1/3], 6 nonzeros against a bound of 4,
// where OEFFullModel gives one of them [1, 0] and the others [0, 0.5].
//
// Degenerate input. Allocate returns an *gpufair.InputError when
// Problem.Tenants is nil (gpufair.ErrEmpty), when a job's throughput row is
// all zeros (gpufair.ErrValue, naming the job), for a cap on an unknown
// tenant or a declared type of an unknown job (gpufair.ErrUnknownID), and
// for a cap that is negative, not finite or not whole, or an empty type
// label (gpufair.ErrValue). A GPU type with zero count is rejected by
// Capacity.Validate. Users who own no job are not tenants this round: they
// receive nothing and do not count in n.
//
// Cost: see docs/benchmarks/oef.md. The structured non-cooperative solve is
// O(C·K) per cutting-plane round over C classes and K types, plus LPs of K
// rows; the structured cooperative solve adds violated envy rows in rounds
// of O(C²·log C·K) checks, starting from rows between near neighbours and,
// on noisy profiles, from the solution of cells of near-identical rows,
// and dropping rows without duals: fast when users share a few job types
// (4,096 users of 26 job types in about 13 ms), and, with distinct rows,
// about 0.3 to 1.5 s at 256 users × 10 types (the full model: 31 to 75 s
// on a loaded machine), 1.2 to 6 s at 1,024 × 3, 7 s at 1,024 × 10 (more
// under load). For noisy profiles (2,000 jobs of 20 types with 2% noise on
// every rate), 7 to 8 s exactly (10 s with each job its own user's);
// EnvyTolerance trades exactness for time there: under 0.1 s at ε = 0.05,
// a re-solve seeded with the last solve's binding rows
// (OEFSettings.WarmRows) about 1 to 4 s exactly, and with its basis as
// well (WarmBasis) 0.05 s for the same jobs and 0.4 to 1 s after 20 jobs
// came or went. With
// demand caps, 1,000 users × 10 types of 26 job types take about 20 ms
// with one job a user and 50 ms with 1 to 4 (caps split each job type into
// up to six classes).
type OEF struct {
	Mode OEFMode
	// DemandCaps caps every tenant at the GPUs its jobs can run at once:
	// each virtual user at the sum of its jobs' gangs, of any mix of
	// types, averaged over time. False is the paper's OEF.
	DemandCaps bool
	// Caps caps the tenants it names at a whole number of GPUs, of any
	// mix, split among a tenant's virtual users in proportion to their
	// demands (with DemandCaps, the smaller cap holds). Nil: none.
	Caps map[TenantID]float64
	// JobTypes declares job types (OEF section 4.2.4): jobs of one owner
	// with the same label form one virtual user, whatever their rows.
	// Jobs it does not name are typed by their rows, as without it.
	JobTypes map[JobID]string
	Settings *OEFSettings
}

// Name returns "OEF (non-cooperative)" or "OEF (cooperative)".
func (o OEF) Name() string { return "OEF (" + o.Mode.String() + ")" }

// Allocate returns OEF's allocation of p, one row per job in the order of
// p.Jobs, in GPUs of each type averaged over time. A cooperative result is
// certified before it is returned (see AllocateCertified).
func (o OEF) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	a, _, err := o.allocate(ctx, p)
	return a, err
}

// allocate is Allocate, with the certificate of a cooperative result.
func (o OEF) allocate(ctx context.Context, p *Problem) (*Allocation, OEFCertificate, error) {
	var cert OEFCertificate
	if o.Mode != NonCooperative && o.Mode != Cooperative {
		return nil, cert, gpufair.Invalid("OEF.Mode", "", gpufair.ErrValue, "unknown mode %v", o.Mode)
	}
	set := o.Settings
	if set == nil {
		set = &OEFSettings{}
	}
	if set.Method != OEFStructured && set.Method != OEFFullModel {
		return nil, cert, gpufair.Invalid("OEF.Settings.Method", "", gpufair.ErrValue, "unknown method %v", set.Method)
	}
	if err := checkEnvyTolerance(set.EnvyTolerance, o.Mode); err != nil {
		return nil, cert, err
	}
	in, err := newOEFInstance(p, o)
	if err != nil {
		return nil, cert, err
	}
	cls := identityClasses(len(in.speed))
	exact := groupRows(len(in.speed), in.classKey)
	if set.Method == OEFStructured {
		cls = exact
	}
	// Cells that merge no rows but identical ones are the exact classes:
	// the solve is then the exact one, and its certificate says so.
	tolerant := false
	if set.EnvyTolerance > 0 {
		if cells := in.envyCells(set.EnvyTolerance); len(cells.rep) < len(exact.rep) {
			cls, tolerant = cells, true
		}
	}
	sub := in.classProblem(cls)
	if sub.cap != nil && o.Mode == Cooperative {
		sub.setSharingFloors()
	}
	if o.Mode == Cooperative {
		rows := append(slices.Clip(set.WarmRows), set.WarmBasis.Tight...)
		if !tolerant && sub.cap == nil && set.Method == OEFStructured && backendOf(set.LP) == lp.PureGo {
			in.ghosts = ghostsFor(p, set.WarmBasis)
			sub.addGhosts(in.ghosts)
		}
		sub.warm, sub.orphans = in.warmPairs(p, cls, rows)
		var departed bool
		sub.hint, departed = in.classBasisFor(p, cls, set.WarmBasis)
		if departed && backendOf(set.LP) != lp.PureGo {
			// What is left of a basis after departures can be nearly
			// singular. The pure-Go simplex drops such a basis (lp's
			// crashMaxGrowth); CLP would start from it without presolve,
			// and took 1.9–2.2 s after 20 departures against 1.1–1.2 s
			// from the rows alone.
			sub.hint = nil
		}
	}
	var y [][]float64
	switch {
	case o.Mode == NonCooperative && sub.cap != nil:
		y, err = sub.solveNonCoopCapped(ctx, set.LP)
	case o.Mode == NonCooperative && set.Method == OEFStructured && !gonumBackend(set.LP):
		y, err = sub.solveNonCoopDual(ctx, set.LP)
	case o.Mode == NonCooperative:
		y, err = sub.solveNonCoopFull(ctx, set.LP)
	default:
		var d coopDual
		y, cert, d, err = sub.solveCoopCertified(ctx, set.Method, set.LP)
		if err == nil && !math.IsInf(cert.Bound, 1) {
			cert.Binding = in.envyRows(p, cls, d.flows)
			cert.Basis = in.jobBasis(p, cls, d.basis)
		}
	}
	if stop := (*coopStop)(nil); errors.As(err, &stop) && !tolerant {
		err = in.stopped(p, cls, stop)
	}
	if err != nil {
		return nil, cert, fmt.Errorf("alloc: %s: %w", o.Name(), err)
	}
	sub.repair(y)
	if tolerant {
		if cert, err = in.certifyCells(ctx, cls, y, set.EnvyTolerance); err != nil {
			return nil, cert, fmt.Errorf("alloc: %s: %w", o.Name(), err)
		}
	}
	return in.allocation(p, cls, y), cert, nil
}

// gonumBackend reports whether s selects the gonum backend. Its simplex cannot
// be interrupted and, on the degenerate cutting-plane LPs of the
// non-cooperative method, can cycle without end (seen on about one random
// instance in twenty), so OEF solves the full model there instead: same
// optimum, small instances only, as the gonum backend is meant for.
func gonumBackend(s *lp.Settings) bool { return backendOf(s) == lp.Gonum }

// backendOf returns the backend that s (nil: defaults) solves with.
func backendOf(s *lp.Settings) lp.Backend {
	b := lp.Default
	if s != nil {
		b = s.Backend
	}
	return b.Resolve()
}
