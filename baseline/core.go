package baseline

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// DefaultRound is the lease of each decision when a scheduler's settings
// leave it 0: 6 minutes, Gavel's round (OSDI'20, section 3.2), which the
// simulator also uses.
const DefaultRound = 360.0

// core is what every baseline shares: its name, the lease of a decision,
// the ledger, and a placer reused from round to round.
type core struct {
	name   string
	lease  float64
	l      *round.Ledger
	placer *topology.Placer
}

// newCore checks the lease (field names it for errors; 0 means
// DefaultRound) and builds the ledger.
func newCore(name, field string, lease float64, c topology.Cluster, types []topology.GPUType) (core, error) {
	if lease == 0 {
		lease = DefaultRound
	}
	if !(lease > 0) || math.IsInf(lease, 0) {
		return core{}, gpufair.Invalid(field, "", gpufair.ErrValue, "round length %v", lease)
	}
	l, err := round.NewLedger(c, types)
	if err != nil {
		return core{}, err
	}
	return core{name: name, lease: lease, l: l, placer: l.Placer(nil)}, nil
}

// Name returns the mechanism's name.
func (b *core) Name() string { return b.name }

// Ledger returns the scheduler's ledger, to read only.
func (b *core) Ledger() *round.Ledger { return b.l }

// decide begins the round at now, asks plan for the decision over the
// ledger's jobs, and commits it. On any error the round is aborted and the
// ledger is as it was; plan's own state is the caller's to roll back.
func (b *core) decide(ctx context.Context, now float64, plan func(now float64, jobs []*round.Job) (*round.Decision, error)) (*round.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := b.l.Begin(now); err != nil {
		return nil, err
	}
	d, err := plan(now, b.l.Jobs())
	if err == nil {
		err = b.l.Commit(d) // aborts the round on error
	}
	if err != nil {
		b.l.Abort()
		return nil, err
	}
	return d, nil
}

// seal returns the snapshot of the ledger and state (nil: none).
func (b *core) seal(state any) ([]byte, error) { return round.Seal(b.name, b.l, state) }

// open reads a snapshot of this mechanism into state (a pointer, or nil)
// and returns the restored ledger; b is unchanged.
func (b *core) open(snapshot []byte, state any) (*round.Ledger, error) {
	return round.Open(snapshot, b.name, b.l, state)
}

// adopt makes l the scheduler's ledger.
func (b *core) adopt(l *round.Ledger) {
	b.l = l
	b.placer = l.Placer(nil)
}

// pick is a (job, GPU type) pair of the greedy pass: job is an index in
// the ledger's (arrival, ID) order and k a type index. Pairs are taken in
// increasing (key, then), then arrival order, then decreasing rate, then
// type order.
type pick struct {
	key, then float64
	job, k    int
}

// rank returns a pick for every pair (job i, type k) on which the job has
// a positive rate and its gang fits the healthy GPUs of k, with the keys
// metric gives it, sorted. metric must not return NaN.
func rank(jobs []*round.Job, healthy []int, metric func(i int, j *round.Job, k int) (key, then float64)) []pick {
	var ps []pick
	for i, j := range jobs {
		for k, r := range j.Rates {
			if r > 0 && j.Gang <= healthy[k] {
				key, then := metric(i, j, k)
				ps = append(ps, pick{key: key, then: then, job: i, k: k})
			}
		}
	}
	slices.SortFunc(ps, func(a, b pick) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		if c := cmp.Compare(a.then, b.then); c != 0 {
			return c
		}
		if c := cmp.Compare(a.job, b.job); c != 0 {
			return c
		}
		if c := cmp.Compare(jobs[b.job].Rates[b.k], jobs[a.job].Rates[a.k]); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	return ps
}

// choose runs the greedy pass over ranked picks with left[k] GPUs of each
// type free, and returns each job's type index + 1, 0 for a job that
// waits. Since every pair a job could run on is ranked and left only
// shrinks, a job that waits fits no type's GPUs left at the end.
func choose(jobs []*round.Job, left []int, ps []pick) []int {
	chosen := make([]int, len(jobs))
	for _, p := range ps {
		if g := jobs[p.job].Gang; chosen[p.job] == 0 && g <= left[p.k] {
			chosen[p.job] = p.k + 1
			left[p.k] -= g
		}
	}
	return chosen
}

// greedy ranks every pair by metric and runs the greedy pass over the
// healthy GPUs.
func (b *core) greedy(jobs []*round.Job, metric func(i int, j *round.Job, k int) (key, then float64)) []int {
	healthy := b.l.Healthy()
	return choose(jobs, slices.Clone(healthy), rank(jobs, healthy, metric))
}

// placing says how realise places the gangs it is given: keep, if not
// nil, says whether a job that holds slots of its chosen type keeps them
// (nil: every such job does); order, if not nil, sorts the indices of the
// other jobs (nil: largest gang first), stable on arrival order; put, if
// not nil, places one of them (nil: core.place).
type placing struct {
	keep  func(p round.Placement) bool
	order func(a, b int) int
	put   func(d *round.Decision, pl *topology.Placer, j *round.Job, t topology.GPUType) error
}

// realise returns the decision for [now, now+lease) that runs each job on
// its chosen type: by default, gangs that hold slots of that type keep
// them, and the others are placed largest gang first (then in arrival
// order) on the fewest servers.
func (b *core) realise(now float64, jobs []*round.Job, chosen []int, how placing) (*round.Decision, error) {
	types := b.l.Types()
	pl := b.l.Placer(b.placer)
	d := &round.Decision{Start: now, End: round.LeaseEnd(now, b.lease)}
	var fresh []int
	for i, j := range jobs {
		k := chosen[i] - 1
		if k < 0 {
			continue
		}
		if p, ok := b.l.Holding(j.ID); ok && p.Type == types[k] && (how.keep == nil || how.keep(p)) && pl.Reserve(p.GPUs) == nil {
			d.Placements = append(d.Placements, placement(j.ID, p.Type, p.GPUs))
			continue
		}
		fresh = append(fresh, i)
	}
	order, put := how.order, how.put
	if order == nil {
		order = func(a, c int) int { return cmp.Compare(jobs[c].Gang, jobs[a].Gang) }
	}
	if put == nil {
		put = b.place
	}
	slices.SortStableFunc(fresh, order)
	for _, i := range fresh {
		if err := put(d, pl, jobs[i], types[chosen[i]-1]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// place adds a placement of job j's gang on the fewest servers of type t.
func (b *core) place(d *round.Decision, pl *topology.Placer, j *round.Job, t topology.GPUType) error {
	gpus, err := pl.Place(t, j.Gang)
	if err != nil {
		// choose kept the gangs of each type within its healthy GPUs.
		return fmt.Errorf("baseline: %s: placing job %q: %w", b.name, j.ID, err)
	}
	d.Placements = append(d.Placements, placement(j.ID, t, gpus))
	return nil
}

func placement(id alloc.JobID, t topology.GPUType, gpus []topology.GPU) round.Placement {
	return round.Placement{Jobs: []alloc.JobID{id}, Type: t, GPUs: gpus}
}

// attained returns job j's attained service: GPUs × seconds it has run, up
// to the start of the round begun.
func attained(j *round.Job) float64 {
	s := 0.0
	for _, r := range j.Received {
		s += r
	}
	return float64(j.Gang) * s
}

// stateless is a baseline that keeps no state beyond its ledger.
type stateless struct{ core }

// Apply checks and applies events (round.Ledger.Apply).
func (s *stateless) Apply(events ...round.Event) error { return s.l.Apply(events...) }

// Snapshot returns the scheduler's state as JSON: its ledger.
func (s *stateless) Snapshot() ([]byte, error) { return s.seal(nil) }

// Restore replaces the state with a snapshot taken by a scheduler of the
// same mechanism on the same cluster and types. It returns an error
// wrapping gpufair.ErrSnapshot, and changes nothing, otherwise.
func (s *stateless) Restore(snapshot []byte) error {
	l, err := s.open(snapshot, nil)
	if err != nil {
		return err
	}
	s.adopt(l)
	return nil
}

// applyForgetting applies events to l, then drops from m the jobs that
// departed.
func applyForgetting[V any](l *round.Ledger, m map[alloc.JobID]V, events []round.Event) error {
	if err := l.Apply(events...); err != nil {
		return err
	}
	for _, e := range events {
		if e.Kind == round.Departed {
			delete(m, e.Job.ID)
		}
	}
	return nil
}

// transact runs decide on a copy of *st made by clone, and puts the old
// state back if decide fails.
func transact[S any](st *S, clone func(S) S, decide func() (*round.Decision, error)) (*round.Decision, error) {
	old := *st
	*st = clone(old)
	d, err := decide()
	if err != nil {
		*st = old
	}
	return d, err
}
