package auction

import (
	"encoding"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// themisJSON is Themis' part of a snapshot. The agents are rebuilt from
// the apps and the settings.
type themisJSON struct {
	Arbiter arbiterJSON                       `json:"arbiter"`
	Apps    map[alloc.TenantID]*themisAppJSON `json:"apps"`
	Last    float64                           `json:"last"`
	Area    float64                           `json:"area"`
}

// themisAppJSON is a themisApp, with its agent's start.
type themisAppJSON struct {
	Jobs      []alloc.JobID `json:"jobs"`
	Seen      float64       `json:"seen"`
	Demand    int           `json:"demand,omitempty"`
	Joined    bool          `json:"joined"`
	StartArea float64       `json:"startArea"`
	Start     float64       `json:"start"`
}

// arbiterJSON is an arbiter's state but its agents: the random source's
// state, the slots that are not free and clean, and each app's state
// (what it holds comes from the slots).
type arbiterJSON struct {
	Now    time.Time                `json:"now"`
	Source []byte                   `json:"source"`
	Slots  []slotJSON               `json:"slots"`
	Apps   map[string]*appStateJSON `json:"apps"`
}

type slotJSON struct {
	GPU    topology.GPU `json:"gpu"`
	Failed bool         `json:"failed,omitempty"`
	Last   string       `json:"last,omitempty"`
	Lease  *leaseJSON   `json:"lease,omitempty"`
}

type leaseJSON struct {
	App   string    `json:"app"`
	Kind  GrantKind `json:"kind"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

type appStateJSON struct {
	LastWon time.Time `json:"lastWon"`
	Best    []int     `json:"best"`
	Rho     *float64  `json:"rho"` // nil: +Inf
	Hungry  int       `json:"hungry"`
}

// badSnapshot is an *gpufair.InputError on "Snapshot" wrapping
// gpufair.ErrSnapshot, for a state that cannot be saved or restored.
func badSnapshot(id, format string, args ...any) error {
	return badInput("Snapshot", id, gpufair.ErrSnapshot, format, args...)
}

// state returns the arbiter's state for a snapshot, or an error wrapping
// gpufair.ErrSnapshot if its random source cannot be saved.
func (a *Arbiter) state() (arbiterJSON, error) {
	m, ok := a.src.(encoding.BinaryMarshaler)
	if !ok {
		return arbiterJSON{}, badSnapshot("", "the arbiter's random source (%T) cannot be saved: it has no MarshalBinary", a.src)
	}
	src, err := m.MarshalBinary()
	if err != nil {
		return arbiterJSON{}, badSnapshot("", "the arbiter's random source: %v", err)
	}
	v := arbiterJSON{Now: a.now, Source: src, Apps: map[string]*appStateJSON{}}
	for s, row := range a.slots {
		for k, sl := range row {
			if sl == (slot{}) {
				continue
			}
			sj := slotJSON{GPU: topology.GPU{Server: s, Slot: k}, Failed: sl.failed, Last: sl.last}
			if sl.app != "" {
				sj.Lease = &leaseJSON{App: sl.app, Kind: sl.kind, Start: sl.start, End: sl.end}
			}
			v.Slots = append(v.Slots, sj)
		}
	}
	for id, st := range a.apps {
		sj := &appStateJSON{LastWon: st.lastWon, Best: st.best, Hungry: st.hungry}
		if !math.IsInf(st.rho, 1) {
			sj.Rho = &st.rho
		}
		v.Apps[id] = sj
	}
	return v, nil
}

// restore replaces the state of a (just built, with no apps) with v, the
// apps' agents taken from agents. failed reports the GPUs out of service.
// It checks everything first and changes nothing when it returns an
// error; the random source is set last.
func (a *Arbiter) restore(v arbiterJSON, agents map[string]Agent, failed func(topology.GPU) bool) error {
	u, ok := a.src.(encoding.BinaryUnmarshaler)
	if !ok {
		return badSnapshot("", "the arbiter's random source (%T) cannot be restored: it has no UnmarshalBinary", a.src)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(v.Apps)), slices.Sorted(maps.Keys(agents))) {
		return badSnapshot("", "arbiter apps %v for the scheduler's joined apps %v", slices.Sorted(maps.Keys(v.Apps)), slices.Sorted(maps.Keys(agents)))
	}
	slots := make([][]slot, len(a.c.Servers))
	for s, sv := range a.c.Servers {
		slots[s] = make([]slot, sv.GPUs)
	}
	seen := map[topology.GPU]bool{}
	for _, sj := range v.Slots {
		g := sj.GPU
		if !a.c.Has(g) || seen[g] {
			return badSnapshot("", "slot %v outside the cluster or listed twice", g)
		}
		seen[g] = true
		sl := slot{failed: sj.Failed, last: sj.Last}
		if l := sj.Lease; l != nil {
			switch {
			case sj.Failed:
				return badSnapshot(l.App, "slot %v leased and failed", g)
			case agents[l.App] == nil:
				return badSnapshot(l.App, "slot %v leased to an app not in the auction", g)
			case l.Kind < Won || l.Kind > Spare:
				return badSnapshot(l.App, "slot %v: grant kind %d", g, l.Kind)
			case l.Start.After(v.Now) || !l.End.After(v.Now):
				return badSnapshot(l.App, "slot %v leased over [%v, %v), outside the arbiter's time %v", g, l.Start, l.End, v.Now)
			}
			sl.app, sl.kind, sl.start, sl.end = l.App, l.Kind, l.Start, l.End
		}
		slots[g.Server][g.Slot] = sl
	}
	for s, row := range slots {
		for k, sl := range row {
			if g := (topology.GPU{Server: s, Slot: k}); sl.failed != failed(g) {
				return badSnapshot("", "GPU %v failed %v in the arbiter, %v in the ledger", g, sl.failed, failed(g))
			}
		}
	}
	apps := make(map[string]*appState, len(v.Apps))
	for id, sj := range v.Apps {
		st := &appState{agent: agents[id], held: make([]int, len(slots)), lastWon: sj.LastWon, hungry: sj.Hungry, rho: math.Inf(1)}
		switch {
		case sj.Rho != nil && !(*sj.Rho > 0 && !math.IsInf(*sj.Rho, 1)):
			return badSnapshot(id, "rho %v", *sj.Rho)
		case sj.Hungry < 0:
			return badSnapshot(id, "hungry for %d rounds", sj.Hungry)
		case sj.LastWon.After(v.Now):
			return badSnapshot(id, "last won at %v, after the arbiter's time %v", sj.LastWon, v.Now)
		case sj.Best != nil && len(sj.Best) != len(slots):
			return badSnapshot(id, "best holding of %d counts for %d servers", len(sj.Best), len(slots))
		}
		for s, n := range sj.Best {
			if n < 0 || n > len(slots[s]) {
				return badSnapshot(id, "best holding of %d GPUs on server %d of %d", n, s, len(slots[s]))
			}
		}
		if sj.Rho != nil {
			st.rho = *sj.Rho
		}
		st.best = sj.Best
		apps[id] = st
	}
	if err := u.UnmarshalBinary(v.Source); err != nil {
		return badSnapshot("", "the arbiter's random source: %v", err)
	}
	a.now, a.slots, a.apps = v.Now, slots, apps
	for s, row := range slots {
		for _, sl := range row {
			if sl.app != "" {
				a.take(sl.app, s, 1)
			}
		}
	}
	return nil
}

// Snapshot returns the scheduler's whole state as JSON: the ledger, the
// apps, and the arbiter's leases, cached bids and rhos and random source.
// The source must implement encoding.BinaryMarshaler (math/rand/v2's PCG
// and ChaCha8 do); otherwise Snapshot returns an error wrapping
// gpufair.ErrSnapshot. The settings are not saved: Restore into a Themis
// built with the same ones.
func (t *Themis) Snapshot() ([]byte, error) {
	av, err := t.arb.state()
	if err != nil {
		return nil, err
	}
	v := themisJSON{Arbiter: av, Apps: map[alloc.TenantID]*themisAppJSON{}, Last: t.last, Area: t.area}
	for id, app := range t.apps {
		v.Apps[id] = &themisAppJSON{Jobs: app.jobs, Seen: app.seen, Demand: app.demand, Joined: app.joined, StartArea: app.startArea, Start: app.agent.Start}
	}
	return round.Seal(t.Name(), t.l, &v)
}

// Restore replaces the state with a snapshot taken by a Themis scheduler
// on the same cluster and types, and goes on from it with the same random
// draws; its source must implement encoding.BinaryUnmarshaler. It returns
// an error wrapping gpufair.ErrSnapshot, and changes nothing, otherwise.
func (t *Themis) Restore(snapshot []byte) error {
	var v themisJSON
	l, err := round.Open(snapshot, t.Name(), t.l, &v)
	if err != nil {
		return err
	}
	if !stat.Finite(v.Last, v.Area) || v.Area < 0 {
		return badSnapshot("", "contention integral %v up to %v", v.Area, v.Last)
	}
	arb, err := NewArbiter(t.arb.c, &t.arb.set, t.arb.src)
	if err != nil {
		return err
	}
	n := &Themis{arb: arb, set: t.set, l: l, epoch: t.epoch, capa: t.capa, apps: map[alloc.TenantID]*themisApp{},
		last: v.Last, area: v.Area, held: map[string][]topology.GPU{}}
	agents := map[string]Agent{}
	owner := map[alloc.JobID]alloc.TenantID{}
	for _, id := range slices.Sorted(maps.Keys(v.Apps)) {
		sj := v.Apps[id]
		switch {
		case sj == nil || id == "":
			return badSnapshot(string(id), "an app with no state or no name")
		case !stat.Finite(sj.Seen, sj.StartArea, sj.Start) || sj.Seen < 0 || sj.StartArea < 0 || sj.StartArea > v.Area:
			return badSnapshot(string(id), "work seen %v, start %v, contention integral at the start %v", sj.Seen, sj.Start, sj.StartArea)
		case sj.Joined != (len(sj.Jobs) > 0):
			return badSnapshot(string(id), "joined %v with %d jobs", sj.Joined, len(sj.Jobs))
		case sj.Demand < 0:
			return badSnapshot(string(id), "demand %d", sj.Demand)
		}
		for _, j := range sj.Jobs {
			lj, ok := l.Job(j)
			if _, twice := owner[j]; !ok || twice || appOf(lj.Job) != id {
				return badSnapshot(string(id), "job %q is not the ledger's, not the app's, or listed twice", j)
			}
			owner[j] = id
		}
		app := &themisApp{jobs: sj.Jobs, seen: sj.Seen, joined: sj.Joined, startArea: sj.StartArea}
		// A snapshot from before demand was kept: the jobs' gangs now.
		app.demand = max(sj.Demand, gangs(n.jobsOf(app)))
		// The agent reads t, which becomes n.
		t.newAgent(id, app, l, sj.Start)
		n.apps[id] = app
		if app.joined {
			agents[string(id)] = app.agent
		}
	}
	if len(owner) != len(l.Jobs()) {
		return badSnapshot("", "%d jobs in the apps, %d in the ledger", len(owner), len(l.Jobs()))
	}
	n.n = len(agents) // the apps in the system are the joined ones
	if err := arb.restore(v.Arbiter, agents, l.Failed); err != nil {
		return err
	}
	*t = *n
	return nil
}
