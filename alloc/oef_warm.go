package alloc

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// Warm rows: cooperative OEF's binding envy rows named by jobs, so that a
// later solve of a similar problem (jobs come and go, rates are measured
// again) can start its row generation from them (OEFSettings.WarmRows,
// OEFCertificate.Binding).

// OEFBasis names by jobs the basis of the simplex method that an exact
// cooperative solve's last LP ended on (the pure-Go simplex and CLP report
// one, Gonum none): the shares basic in it, the envy rows held tight
// (Binding and the degenerate ones), and the GPU types whose capacity row
// is tight. Passed back as
// OEFSettings.WarmBasis, with the Binding rows as WarmRows, it starts the
// next solve of a similar problem at or next to its optimum: on 2,000 noisy
// jobs (docs/benchmarks/oef.md) a re-solve of the same jobs took 3 pivots
// instead of 3,778. A basis is only a starting point, so any basis, stale
// or wrong, leaves the result exact and certified.
//
// Without caps it also records the speedups of each job it names, on the
// GPU types Types, and which of those jobs had departed and were kept as
// ghosts in the solve it came from, the earliest first. A later solve
// with the pure-Go simplex keeps a named job that has departed, and held
// more of the tight rows than shares, as a ghost: a class of weight zero
// with its old speedups and envy rows, whose bundle uses no capacity and
// adds nothing to the objective. The basis then still fits that solve's
// LP; the optimum and its certificate are those of the problem without
// the ghosts.
type OEFBasis struct {
	Shares   []OEFShare          `json:"shares,omitempty"`
	Tight    []OEFEnvyRow        `json:"tight,omitempty"`
	Full     []topology.GPUType  `json:"full,omitempty"`
	Types    []topology.GPUType  `json:"types,omitempty"`
	Speedups map[JobID][]float64 `json:"speedups,omitempty"`
	Ghosts   []JobID             `json:"ghosts,omitempty"`
}

// Clone returns a deep copy of b.
func (b OEFBasis) Clone() OEFBasis {
	out := OEFBasis{
		Shares: slices.Clone(b.Shares),
		Tight:  slices.Clone(b.Tight),
		Full:   slices.Clone(b.Full),
		Types:  slices.Clone(b.Types),
		Ghosts: slices.Clone(b.Ghosts),
	}
	if b.Speedups != nil {
		out.Speedups = make(map[JobID][]float64, len(b.Speedups))
		for j, s := range b.Speedups {
			out.Speedups[j] = slices.Clone(s)
		}
	}
	return out
}

// OEFShare names a column of cooperative OEF's LP by a job: the share of
// GPU type Type in the bundle of the virtual user (see OEF) holding Job.
type OEFShare struct {
	Job  JobID            `json:"job"`
	Type topology.GPUType `json:"type"`
}

// OEFStopped is the error of an exact cooperative solve that its context
// stopped while the pure-Go simplex was solving one of its LPs, or between
// one and the next: it names by jobs the envy rows of that LP and the
// basis the simplex had reached. Stopped earlier, while it solved the
// coarser cells that seed its first LP, it names the near-neighbour rows
// of that seed and no basis.
// Passed back as OEFSettings.WarmRows and WarmBasis to the next solve of
// the same or a similar problem, they let that solve go on from there, so
// that a solve stopped by a deadline every time still ends, over several
// (stride.OEFSettings.WarmStart does so). It wraps the context's error.
type OEFStopped struct {
	Rows  []OEFEnvyRow
	Basis OEFBasis
	Err   error
}

// Error reports the stop and how far it had come.
func (e *OEFStopped) Error() string {
	return fmt.Sprintf("stopped with %d envy rows and a basis of %d shares: %v", len(e.Rows), len(e.Basis.Shares), e.Err)
}

// Unwrap returns the context's error, as the solver reported it.
func (e *OEFStopped) Unwrap() error { return e.Err }

// coopStop is OEFStopped by classes: the rows of the LP that the context
// stopped, and its basis then.
type coopStop struct {
	rows  []envyPair
	basis *classBasis
	err   error
}

func (e *coopStop) Error() string { return e.err.Error() }
func (e *coopStop) Unwrap() error { return e.err }

// stopAt returns err, a stop by the context, as a coopStop that names the
// rows of the model (bundle columns y, rows[i] at ids[i]) and the basis of
// sol, the LP the context stopped or the last one solved before it, where
// sol has one; else err as it is.
func (q *oefLP) stopAt(err error, sol *lp.Solution, y lp.Grid, rows []envyPair, ids []lp.Row) error {
	if sol == nil || sol.Basis == nil {
		return err
	}
	return &coopStop{rows: rows, basis: q.classBasisOf(sol.Basis, y, rows, ids), err: err}
}

// stopped names s by jobs (jobOf): its envy rows, without cap rows and
// sharing floors, and its basis.
func (in *oefInstance) stopped(p *Problem, cls rowClasses, s *coopStop) *OEFStopped {
	out := &OEFStopped{Basis: in.jobBasis(p, cls, s.basis), Err: s.err}
	for _, r := range s.rows {
		if r[1] >= 0 {
			out.Rows = append(out.Rows, in.jobRow(p, cls, r[0], r[1]))
		}
	}
	return out
}

// classBasis is an lp.Basis of a cooperative model (envyModel) by classes:
// its basic columns (class, GPU type), its tight envy rows and the GPU
// types whose capacity row is tight. Cap rows and sharing floors are left
// out: a hint starts them with their logicals basic.
type classBasis struct {
	cols  [][2]int
	rows  []envyPair
	types []int
}

// classBasisOf names b, a basis of a model with bundle columns y and the
// rows of row generation rows[i] at ids[i] after the capacity rows, by
// classes; nil for a nil b.
func (q *oefLP) classBasisOf(b *lp.Basis, y lp.Grid, rows []envyPair, ids []lp.Row) *classBasis {
	if b == nil {
		return nil
	}
	pair := make(map[lp.Row]envyPair, len(rows))
	for i, r := range rows {
		if r[1] >= 0 {
			pair[ids[i]] = r
		}
	}
	cb := &classBasis{}
	for _, v := range b.Vars {
		if c, k, ok := y.Cell(v); ok {
			cb.cols = append(cb.cols, [2]int{c, k})
		}
	}
	for _, r := range b.Tight {
		if int(r) < len(q.count) {
			cb.types = append(cb.types, int(r))
		} else if p, ok := pair[r]; ok {
			cb.rows = append(cb.rows, p)
		}
	}
	return cb
}

// hint returns b as a hint for a model with bundle columns y, capacity
// rows first, and rows[i] at ids[i]: capacity rows before envy rows, so
// that where the basis no longer fits the model the prices keep theirs.
func (b *classBasis) hint(y lp.Grid, rows []envyPair, ids []lp.Row) lp.Basis {
	id := make(map[envyPair]lp.Row, len(rows))
	for i, r := range rows {
		id[r] = ids[i]
	}
	var h lp.Basis
	for _, k := range b.types {
		h.Tight = append(h.Tight, lp.Row(k))
	}
	for _, r := range b.rows {
		if i, ok := id[r]; ok {
			h.Tight = append(h.Tight, i)
		}
	}
	for _, c := range b.cols {
		h.Vars = append(h.Vars, y.At(c[0], c[1]))
	}
	return h
}

// jobOf returns the job that names class c of cls: its first virtual
// user's first job, or the ghost's job for a class after cls's.
func (in *oefInstance) jobOf(p *Problem, cls rowClasses, c int) JobID {
	if c >= len(cls.rep) {
		return in.ghosts[c-len(cls.rep)].job
	}
	return p.Jobs[in.jobs[cls.rep[c]][0]].ID
}

// classSpeed returns the speedups of class c of cls, or of the ghost for
// a class after cls's.
func (in *oefInstance) classSpeed(cls rowClasses, c int) []float64 {
	if c >= len(cls.rep) {
		return in.ghosts[c-len(cls.rep)].speed
	}
	return in.speed[cls.rep[c]]
}

// jobRow names class c's envy row against class d of cls by jobs (jobOf).
func (in *oefInstance) jobRow(p *Problem, cls rowClasses, c, d int) OEFEnvyRow {
	return OEFEnvyRow{Envier: in.jobOf(p, cls, c), Envied: in.jobOf(p, cls, d)}
}

// classOfJobs maps every job of p to its class in cls, and each ghost's
// job to its class after cls's.
func (in *oefInstance) classOfJobs(p *Problem, cls rowClasses) map[JobID]int {
	classOf := make(map[JobID]int, len(p.Jobs)+len(in.ghosts))
	for v, jobs := range in.jobs {
		for _, i := range jobs {
			classOf[p.Jobs[i].ID] = cls.of[v]
		}
	}
	for i, g := range in.ghosts {
		classOf[g.job] = len(cls.rep) + i
	}
	return classOf
}

// envyRows names the envy rows of flows, over the classes of cls (each
// a group of virtual users), by jobOf; rows between classes are listed
// once, in the order of flows.
func (in *oefInstance) envyRows(p *Problem, cls rowClasses, flows []envyFlow) []OEFEnvyRow {
	var rows []OEFEnvyRow
	for _, f := range flows {
		if f.v > 0 {
			rows = append(rows, in.jobRow(p, cls, f.c, f.d))
		}
	}
	return rows
}

// jobBasis names cb by jobs (jobOf) and GPU types; the zero OEFBasis for
// a nil cb.
func (in *oefInstance) jobBasis(p *Problem, cls rowClasses, cb *classBasis) OEFBasis {
	var b OEFBasis
	if cb == nil {
		return b
	}
	named := map[int]bool{}
	for _, c := range cb.cols {
		b.Shares = append(b.Shares, OEFShare{Job: in.jobOf(p, cls, c[0]), Type: p.Capacity.Types[c[1]]})
		named[c[0]] = true
	}
	for _, r := range cb.rows {
		b.Tight = append(b.Tight, in.jobRow(p, cls, r[0], r[1]))
		named[r[0]], named[r[1]] = true, true
	}
	for _, k := range cb.types {
		b.Full = append(b.Full, p.Capacity.Types[k])
	}
	if in.cap != nil || len(named) == 0 {
		return b // ghosts are for the uncapped LP only
	}
	b.Types = slices.Clone(p.Capacity.Types)
	b.Speedups = make(map[JobID][]float64, len(named))
	for c := range named {
		b.Speedups[in.jobOf(p, cls, c)] = slices.Clone(in.classSpeed(cls, c))
	}
	for i, g := range in.ghosts {
		if named[len(cls.rep)+i] {
			b.Ghosts = append(b.Ghosts, g.job)
		}
	}
	return b
}

// classBasisFor maps b, named by jobs and GPU types, to the classes of cls
// and p's GPU types, leaving out what names a job or type p no longer has,
// and rows within one class, and reports whether it left out any share or
// row for a departed job. Nil for an empty b.
//
// A tight row against a departed job is dropped, not rerouted as
// warmPairs reroutes rows: the departed job held no bundle of its own in
// the new problem, and where it held a pool's rows together the basis
// left is singular whatever the reroute (tried: to the first class it
// shared rows with, or to one tied to it both ways); lp then starts from
// the slack basis (Model.SetBasisHint). Where it held no pool together
// (a job in the middle of the noisy instance's order), the rest of the
// basis still starts the re-solve at its optimum.
func (in *oefInstance) classBasisFor(p *Problem, cls rowClasses, b OEFBasis) (cb *classBasis, departed bool) {
	if len(b.Shares) == 0 && len(b.Tight) == 0 && len(b.Full) == 0 {
		return nil, false
	}
	classOf := in.classOfJobs(p, cls)
	cb = &classBasis{}
	for _, s := range b.Shares {
		c, ok1 := classOf[s.Job]
		k, ok2 := p.Capacity.TypeIndex(s.Type)
		if ok1 && ok2 {
			cb.cols = append(cb.cols, [2]int{c, k})
		}
		departed = departed || !ok1
	}
	for _, r := range b.Tight {
		c, ok1 := classOf[r.Envier]
		d, ok2 := classOf[r.Envied]
		if ok1 && ok2 && c != d {
			cb.rows = append(cb.rows, envyPair{c, d})
		}
		departed = departed || !ok1 || !ok2
	}
	for _, t := range b.Full {
		if k, ok := p.Capacity.TypeIndex(t); ok {
			cb.types = append(cb.types, k)
		}
	}
	return cb, departed
}

// warmPairs maps rows named by jobs to pairs of the classes of cls that
// hold those jobs' virtual users, without repeats. A row that names a job
// p no longer has (it departed) is rerouted to the first few classes the
// departed job shared warm rows with (at the optimum they held bundles
// like its own), and the class left on it is returned among the orphans.
// A row that joins two jobs of one class, or names two departed jobs, is
// skipped.
//
// Why reroute: a row from class c against a departed job kept c from
// envying that job's pool; without it, the pool's bundle is free to grow
// in the first relaxation. With 20 of the noisy 2,000 jobs departed, that
// relaxation was 11% above the optimum, and the re-solve took 9.0 s; with
// the rows rerouted it is 2e-6 above, and the re-solve takes 1.6 s (near
// rows for the classes that lost rows, 4 or 16 each, left it 11% and 6%
// above). The pure-Go simplex's rows need nothing more; CLP's, which lean
// more on the departed jobs, also need the orphans' near rows (warmSeed):
// 13.7 s without them, 1.15 s with.
func (in *oefInstance) warmPairs(p *Problem, cls rowClasses, rows []OEFEnvyRow) (pairs []envyPair, orphans []int) {
	if len(rows) == 0 {
		return nil, nil
	}
	classOf := in.classOfJobs(p, cls)
	partners := make(map[JobID][]int) // departed job → classes it shared rows with
	for _, r := range rows {
		c, ok1 := classOf[r.Envier]
		d, ok2 := classOf[r.Envied]
		switch {
		case ok1 && !ok2:
			partners[r.Envied] = append(partners[r.Envied], c)
		case ok2 && !ok1:
			partners[r.Envier] = append(partners[r.Envier], d)
		}
	}
	seen := make(map[envyPair]bool, len(rows))
	add := func(c, d int) {
		if pr := (envyPair{c, d}); c != d && !seen[pr] {
			seen[pr] = true
			pairs = append(pairs, pr)
		}
	}
	reroutes := func(gone JobID) []int {
		cs := partners[gone]
		return cs[:min(warmReroutes, len(cs))]
	}
	for _, r := range rows {
		c, ok1 := classOf[r.Envier]
		d, ok2 := classOf[r.Envied]
		switch {
		case ok1 && ok2:
			add(c, d)
		case ok1:
			orphans = append(orphans, c)
			for _, e := range reroutes(r.Envied) {
				add(c, e)
			}
		case ok2:
			orphans = append(orphans, d)
			for _, e := range reroutes(r.Envier) {
				add(e, d)
			}
		}
	}
	return pairs, orphans
}

// warmReroutes is how many classes a warm row against a departed job is
// rerouted to (warmPairs).
const warmReroutes = 3

// warmSeed returns the envy rows that row generation starts from when
// warm rows are given: those rows, and the near-neighbour rows (n per
// class) of every class that no warm row names, such as the classes of
// jobs that arrived since, and of every class that lost a row to a
// departure (q.orphans).
func (q *oefLP) warmSeed(ctx context.Context, n int) ([]envyPair, error) {
	named := make([]bool, len(q.s))
	for _, r := range q.warm {
		named[r[0]], named[r[1]] = true, true
	}
	for _, c := range q.orphans {
		named[c] = false
	}
	fresh := []int{} // not nil: neighbourEnvyRows reads nil as every class
	for c, ok := range named {
		if !ok {
			fresh = append(fresh, c)
		}
	}
	near, err := q.neighbourEnvyRows(ctx, n, fresh)
	if err != nil {
		return nil, err
	}
	return appendNew(append([]envyPair(nil), q.warm...), near), nil
}
