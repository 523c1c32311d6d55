package alloc

import "context"

// Warm rows: cooperative OEF's binding envy rows named by jobs, so that a
// later solve of a similar problem (jobs come and go, rates are measured
// again) can start its row generation from them (OEFSettings.WarmRows,
// OEFCertificate.Binding).

// envyRows names the envy rows of flows, over the classes of cls (each
// a group of virtual users), by the first job of each class's first
// virtual user; rows between classes are listed once, in the order of
// flows.
func (in *oefInstance) envyRows(p *Problem, cls rowClasses, flows []envyFlow) []OEFEnvyRow {
	var rows []OEFEnvyRow
	for _, f := range flows {
		if f.v > 0 {
			rows = append(rows, OEFEnvyRow{
				Envier: p.Jobs[in.jobs[cls.rep[f.c]][0]].ID,
				Envied: p.Jobs[in.jobs[cls.rep[f.d]][0]].ID,
			})
		}
	}
	return rows
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
	classOf := make(map[JobID]int, len(p.Jobs))
	for v, jobs := range in.jobs {
		for _, i := range jobs {
			classOf[p.Jobs[i].ID] = cls.of[v]
		}
	}
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
