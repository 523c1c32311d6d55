package baseline

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// GandivaSettings tune a Gandiva scheduler. A nil *GandivaSettings means the
// zero value: 6-minute rounds, and gangs as fast spread over servers as on
// one.
type GandivaSettings struct {
	// Round is the lease of each decision, in seconds: Gandiva's time
	// slice. 0 means DefaultRound.
	Round float64
	// Spread, if not nil, returns job id's rates over the scheduler's
	// types when its gang spans servers (Gavel's unconsolidated
	// throughputs); nil, or a nil result, means the job's Rates. It is
	// the placement preference Gandiva learns by introspection. A result
	// must be nil or hold one rate per type, each finite and not
	// negative (0: not known, no preference); Decide refuses others.
	Spread func(id alloc.JobID) []float64
	// NoTimeSlicing is Gandiva as Themis implemented it (NSDI'20, section
	// 6.1: "we do not model time-slicing and packing of GPUs"): jobs run
	// until they depart, and GPUs that come free go to waiting jobs in
	// decreasing placement preference, then arrival order.
	NoTimeSlicing bool
}

// Gandiva is Gandiva's introspective scheduler (Xiao et al., OSDI'18),
// Themis' baseline for efficiency (NSDI'20, section 6.1): time slicing when
// the cluster is oversubscribed, and greedy packing of gangs by placement
// preference, with migration to better placements.
//
// Time slicing: Gandiva suspends and resumes jobs round-robin when there
// are more jobs than GPUs. Each round, jobs are taken least recently run
// first (jobs that never ran first of all), then in arrival order, each on
// its fastest type with room (Gandiva knows no GPU types), greedily
// (package doc); so when all jobs fit, all run, and when they do not, those
// that waited displace those that ran.
//
// Greedy packing: "all apps report their placement preferences and we
// allocate resources in a greedy highest preference first manner" (Themis,
// section 6.1). A job's preference on its type k is its rate on one server
// over its rate spread across servers (GandivaSettings.Spread), 1 for a
// job that does not care. The gangs that keep their slots on one server
// keep them; the others are placed in decreasing preference (then larger
// gang, then arrival order) on the fewest servers, and a gang that held
// slots spread over servers migrates when a placement on fewer servers is
// free, as Gandiva's migration does. Packing several jobs onto one GPU
// (GPU sharing) is not modelled, as in Themis' own implementation of
// Gandiva, which modelled no time slicing either:
// GandivaSettings.NoTimeSlicing gives that variant.
//
// The zero value is not usable; build one with NewGandiva.
type Gandiva struct {
	core
	spread    func(id alloc.JobID) []float64
	noSlicing bool
	st        gandivaState
}

// gandivaState is what Gandiva keeps beyond the ledger, as snapshotted.
type gandivaState struct {
	// Ran is the index of the latest decision that ran each job.
	Ran map[alloc.JobID]int `json:"ran"`
}

// NewGandiva returns a Gandiva scheduler on cluster c, with job rates given
// over types (each a type of c). s may be nil. It returns the errors of
// round.NewLedger and an *gpufair.InputError for a round length that is not
// positive and finite.
func NewGandiva(c topology.Cluster, types []topology.GPUType, s *GandivaSettings) (*Gandiva, error) {
	var set GandivaSettings
	if s != nil {
		set = *s
	}
	b, err := newCore("gandiva", "GandivaSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &Gandiva{core: b, spread: set.Spread, noSlicing: set.NoTimeSlicing, st: gandivaState{Ran: map[alloc.JobID]int{}}}, nil
}

// Apply checks and applies events (round.Ledger.Apply).
func (g *Gandiva) Apply(events ...round.Event) error {
	return applyForgetting(g.l, g.st.Ran, events)
}

// Decide returns the decision for the round that starts at now. Besides
// the errors of the ledger, it returns an *gpufair.InputError naming
// GandivaSettings.Spread and the job, and changes nothing, for a Spread
// result of the wrong length (gpufair.ErrShape) or with a rate that is
// negative, NaN or infinite (gpufair.ErrValue).
func (g *Gandiva) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return transact(&g.st, gandivaState.clone, func() (*round.Decision, error) { return g.decide(ctx, now, g.plan) })
}

func (s gandivaState) clone() gandivaState {
	s.Ran = maps.Clone(s.Ran)
	return s
}

// checkSpread refuses a Spread result that is not nil, one finite,
// non-negative rate per type (a slice of NaN was taken as no preference).
func (g *Gandiva) checkSpread(jobs []*round.Job) error {
	if g.spread == nil {
		return nil
	}
	for _, j := range jobs {
		sp := g.spread(j.ID)
		if sp == nil {
			continue
		}
		if len(sp) != len(j.Rates) {
			return gpufair.Invalid("GandivaSettings.Spread", string(j.ID), gpufair.ErrShape, "%d rates for %d GPU types", len(sp), len(j.Rates))
		}
		for k, r := range sp {
			if !(r >= 0) || math.IsInf(r, 0) {
				return gpufair.Invalid("GandivaSettings.Spread", string(j.ID), gpufair.ErrValue, "rate %v on GPU type %d is not finite and non-negative", r, k)
			}
		}
	}
	return nil
}

func (g *Gandiva) plan(now float64, jobs []*round.Job) (*round.Decision, error) {
	if err := g.checkSpread(jobs); err != nil {
		return nil, err
	}
	types := g.l.Types()
	chosen := g.greedy(jobs, func(_ int, j *round.Job, k int) (float64, float64) {
		if g.noSlicing {
			// Running jobs keep their type; GPUs go to the others by
			// decreasing preference.
			if p, ok := g.l.Holding(j.ID); ok && p.Type == types[k] {
				return -1, 0
			}
			return 0, -g.preference(j, k)
		}
		if r, ok := g.st.Ran[j.ID]; ok {
			return float64(r), 0
		}
		return -1, 0
	})
	pref := make([]float64, len(jobs))
	for i, j := range jobs {
		if chosen[i] > 0 {
			g.st.Ran[j.ID] = g.l.Rounds()
			pref[i] = g.preference(j, chosen[i]-1)
		}
	}
	return g.realise(now, jobs, chosen, placing{
		keep: func(p round.Placement) bool { return topology.ServersUsed(p.GPUs) == 1 },
		order: func(a, b int) int {
			if c := cmp.Compare(pref[b], pref[a]); c != 0 {
				return c
			}
			return cmp.Compare(jobs[b].Gang, jobs[a].Gang)
		},
		put: g.put,
	})
}

// put places job j's gang on type t: on the slots it holds, unless a
// placement on fewer servers is free (a migration).
func (g *Gandiva) put(d *round.Decision, pl *topology.Placer, j *round.Job, t topology.GPUType) error {
	p, held := g.l.Holding(j.ID)
	if !held || p.Type != t || pl.Reserve(p.GPUs) != nil {
		return g.place(d, pl, j, t)
	}
	_ = pl.Release(p.GPUs) // reserved a moment ago: they were free
	fresh, err := pl.Place(t, j.Gang)
	if err == nil && topology.ServersUsed(fresh) < topology.ServersUsed(p.GPUs) {
		d.Placements = append(d.Placements, placement(j.ID, t, fresh))
		return nil
	}
	if err == nil {
		_ = pl.Release(fresh) // just placed
	}
	_ = pl.Reserve(p.GPUs) // free a moment ago
	d.Placements = append(d.Placements, placement(j.ID, t, p.GPUs))
	return nil
}

// preference returns job j's placement preference on type k: its rate on
// one server over its rate spread across servers, 1 when spreading costs
// it nothing (or a gang of one).
func (g *Gandiva) preference(j *round.Job, k int) float64 {
	if g.spread == nil || j.Gang == 1 {
		return 1
	}
	s := g.spread(j.ID)
	if s == nil || k >= len(s) || !(s[k] > 0) {
		return 1
	}
	return j.Rates[k] / s[k]
}

// Snapshot returns the scheduler's whole state as JSON: the ledger and when
// each job last ran.
func (g *Gandiva) Snapshot() ([]byte, error) { return g.seal(&g.st) }

// Restore replaces the state with a snapshot taken by a Gandiva scheduler
// on the same cluster and types. It returns an error wrapping
// gpufair.ErrSnapshot, and changes nothing, otherwise.
func (g *Gandiva) Restore(snapshot []byte) error {
	var st gandivaState
	l, err := g.open(snapshot, &st)
	if err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(st.Ran)) {
		r := st.Ran[id]
		if _, ok := l.Job(id); !ok || r < 0 || r >= l.Rounds() {
			return gpufair.Invalid("Snapshot", string(id), gpufair.ErrSnapshot, "job ran in decision %d of %d; in the ledger: %v", r, l.Rounds(), ok)
		}
	}
	if st.Ran == nil {
		st.Ran = map[alloc.JobID]int{}
	}
	g.adopt(l)
	g.st = st
	return nil
}

var _ round.Scheduler = (*Gandiva)(nil)
