package stride

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/topology"
)

// fairJSON is Fair's whole state: tenants, jobs and the split scheduler.
type fairJSON struct {
	Users []userJSON  `json:"tenants"`
	Jobs  []jobJSON   `json:"jobs"`
	Local []localJSON `json:"servers"`
	Agg   []aggJSON   `json:"aggregates"`
	Large []largeJSON `json:"large,omitempty"`
	VTime float64     `json:"vtime"`
	Last  int         `json:"last"`
	Ran   bool        `json:"ran"`
}

type userJSON struct {
	alloc.Tenant
	Tickets map[topology.GPUType]float64 `json:"type_tickets,omitempty"`
}

type jobJSON struct {
	ID    alloc.JobID      `json:"id"`
	Owner alloc.TenantID   `json:"owner"`
	Gang  int              `json:"gang"`
	Type  topology.GPUType `json:"type"`
	Parts []Part           `json:"parts"`
}

type entryJSON struct {
	Job    alloc.Job `json:"job"`
	Stride float64   `json:"stride"`
	Base   float64   `json:"base"`
	N      int64     `json:"n"`
	Pass   float64   `json:"pass"`
}

type localJSON struct {
	Jobs  []entryJSON `json:"jobs,omitempty"`
	VTime float64     `json:"vtime"`
	Last  int         `json:"last"`
	Ran   bool        `json:"ran"`
}

type aggJSON struct {
	Active  bool    `json:"active,omitempty"`
	Stride  float64 `json:"stride,omitempty"`
	Base    float64 `json:"base,omitempty"`
	N       int64   `json:"n,omitempty"`
	Pass    float64 `json:"pass,omitempty"`
	Tickets float64 `json:"tickets,omitempty"`
}

type largeJSON struct {
	entryJSON
	Parts []Part `json:"parts"`
}

func toEntryJSON(e *entry) entryJSON {
	return entryJSON{Job: e.Job, Stride: e.stride, Base: e.base, N: e.n, Pass: e.pass}
}

func (e entryJSON) entry() *entry {
	return &entry{Job: e.Job, stride: e.Stride, base: e.Base, n: e.N, pass: e.Pass}
}

// consistent reports whether e is an entry the schedulers could have
// written: a valid weight, the stride of its job (strideOf) and its pass
// base + n·stride, as entry.advance computes it.
func (e entryJSON) consistent() bool {
	return e.Job.Gang >= 1 && checkJobWeight("", "", e.Job.Weight, e.Job.Gang) == nil && e.Stride == strideOf(e.Job) && passOf(e.Base, e.N, e.Stride, e.Pass)
}

// passOf reports whether pass is base + n·stride with n ≥ 0, all finite:
// the pass that entry.advance and aggregate.charge keep.
func passOf(base float64, n int64, stride, pass float64) bool {
	return n >= 0 && stat.Finite(base, pass) && pass == base+float64(n)*stride
}

// MarshalJSON writes the whole state: tenants, their per-type tickets, jobs
// and their servers, and every stride scheduler's passes, so that a Fair
// restored with UnmarshalJSON schedules the next quanta exactly as this
// one would.
func (f *Fair) MarshalJSON() ([]byte, error) {
	s := f.split
	v := fairJSON{VTime: s.vtime, Last: s.last, Ran: s.ran}
	for _, u := range f.users {
		v.Users = append(v.Users, userJSON{Tenant: u.Tenant, Tickets: u.typeTickets})
	}
	ids := make([]alloc.JobID, 0, len(f.jobs))
	for id := range f.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := f.jobs[id]
		v.Jobs = append(v.Jobs, jobJSON{ID: id, Owner: j.Owner, Gang: j.Gang, Type: j.Type, Parts: j.parts})
	}
	for _, l := range s.local {
		lj := localJSON{VTime: l.vtime, Last: l.last, Ran: l.ran}
		for _, e := range l.jobs {
			lj.Jobs = append(lj.Jobs, toEntryJSON(e))
		}
		v.Local = append(v.Local, lj)
	}
	for _, a := range s.agg {
		v.Agg = append(v.Agg, aggJSON{a.active, a.stride, a.base, a.n, a.pass, a.tickets})
	}
	for _, l := range s.large {
		v.Large = append(v.Large, largeJSON{toEntryJSON(&l.entry), l.parts})
	}
	return json.Marshal(v)
}

// UnmarshalJSON replaces the state of a Fair built by NewFair with one
// written by MarshalJSON for the same cluster. It returns an error wrapping
// gpufair.ErrSnapshot, and changes nothing, for a state that does not fit
// the cluster or is inconsistent.
func (f *Fair) UnmarshalJSON(b []byte) error {
	bad := func(format string, args ...any) error {
		return gpufair.Invalid("Snapshot", "", gpufair.ErrSnapshot, "fair: "+format, args...)
	}
	var v fairJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return bad("%v", err)
	}
	n := len(f.c.Servers)
	if len(v.Local) != n || len(v.Agg) != n {
		return bad("%d servers, %d aggregates for a cluster of %d servers", len(v.Local), len(v.Agg), n)
	}
	g, _ := NewFair(f.c, nil) // f's cluster is valid
	g.rank, g.pack = f.rank, f.pack
	for _, u := range v.Users {
		if err := g.AddTenant(u.Tenant); err != nil {
			return bad("%v", err)
		}
		fu, _ := g.user(u.ID)
		// As SetTypeTickets checks them: tickets above maxWeight made
		// Readjust fail, and the accounts index its empty result.
		for t, w := range u.Tickets {
			if !slices.Contains(g.types, t) || !typeTickets(w) {
				return bad("tenant %q: %v tickets on type %q", u.ID, w, t)
			}
		}
		if u.Tickets != nil {
			fu.typeTickets = u.Tickets
		}
	}
	s := g.split
	for _, j := range v.Jobs {
		u, _ := g.user(j.Owner)
		k := slices.Index(g.types, j.Type)
		switch {
		case u == nil:
			return bad("job %q of unknown tenant %q", j.ID, j.Owner)
		case k < 0 || j.Gang < 1 || j.Gang > g.count[k] || g.jobs[j.ID] != nil:
			return bad("job %q: gang %d on type %q, or listed twice", j.ID, j.Gang, j.Type)
		}
		sum := 0
		for _, p := range j.Parts {
			if p.Server < 0 || p.Server >= n || g.c.Servers[p.Server].Type != j.Type || p.GPUs < 1 {
				return bad("job %q: part %v", j.ID, p)
			}
			sum += p.GPUs
		}
		if sum != j.Gang {
			return bad("job %q: parts of %d GPUs for a gang of %d", j.ID, sum, j.Gang)
		}
		g.jobs[j.ID] = &fairJob{Submission: Submission{ID: j.ID, Owner: j.Owner, Gang: j.Gang, Type: j.Type}, parts: j.Parts}
		u.demand[j.Type] += j.Gang
		u.jobs = append(u.jobs, j.ID) // v.Jobs is by ID
	}
	if !stat.Finite(v.VTime) {
		return bad("virtual time %v", v.VTime)
	}
	for l, lj := range v.Local {
		sc := s.local[l]
		if !stat.Finite(lj.VTime) {
			return bad("server %d: virtual time %v", l, lj.VTime)
		}
		sc.vtime, sc.last, sc.ran = lj.VTime, lj.Last, lj.Ran
		for _, e := range lj.Jobs {
			j := g.jobs[e.Job.ID]
			if j == nil || len(j.parts) != 1 || j.parts[0].Server != l || e.Job.Gang != j.Gang || !e.consistent() {
				return bad("job %q on server %d", e.Job.ID, l)
			}
			if _, dup := s.where[e.Job.ID]; dup {
				return bad("job %q scheduled twice", e.Job.ID)
			}
			sc.jobs = append(sc.jobs, e.entry())
			s.where[e.Job.ID] = l
		}
		if !slices.IsSortedFunc(sc.jobs, byPass) {
			return bad("server %d's jobs out of pass order", l)
		}
		a := v.Agg[l]
		// An active aggregate charges its server's quanta at 1/tickets
		// (Split.retuneAggregate); one that is not holds nothing used.
		if a.Active != (len(sc.jobs) > 0) || (a.Active && (!(a.Tickets > 0) || a.Stride != 1/a.Tickets || !passOf(a.Base, a.N, a.Stride, a.Pass))) {
			return bad("server %d: aggregate %+v for %d jobs", l, a, len(sc.jobs))
		}
		s.agg[l] = aggregate{a.Active, a.Stride, a.Base, a.N, a.Pass, a.Tickets}
	}
	for _, lj := range v.Large {
		j := g.jobs[lj.Job.ID]
		if j == nil || !slices.Equal(j.parts, lj.Parts) || !lj.consistent() {
			return bad("multi-server job %q", lj.Job.ID)
		}
		if _, dup := s.where[lj.Job.ID]; dup {
			return bad("job %q scheduled twice", lj.Job.ID)
		}
		s.large = append(s.large, &largeJob{entry: *lj.entry(), parts: lj.Parts})
		s.where[lj.Job.ID] = onLarge
	}
	if !slices.IsSortedFunc(s.large, func(a, b *largeJob) int { return cmp.Compare(a.ID, b.ID) }) {
		return bad("multi-server jobs out of ID order")
	}
	if len(s.where) != len(g.jobs) {
		return bad("%d jobs scheduled of %d", len(s.where), len(g.jobs))
	}
	s.vtime, s.last, s.ran = v.VTime, v.Last, v.Ran
	*f = *g
	return nil
}

// lastQuantum returns the latest quantum any of f's stride schedulers has
// run, and false if none has: the next must come after it.
func (f *Fair) lastQuantum() (int, bool) {
	s := f.split
	last, ran := s.last, s.ran
	for _, l := range s.local {
		if l.ran && (!ran || l.last > last) {
			last, ran = l.last, true
		}
	}
	return last, ran
}
