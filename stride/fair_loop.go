package stride

import (
	"maps"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// minTicketShare is the fraction of its Weight a tenant keeps as tickets
// on a type SetTypeTickets gives it none of: its jobs still there need a
// positive stride until they migrate, and this one lets them run only on
// GPUs no one else wants.
const minTicketShare = 1e-9

// tickets returns tenant u's tickets on type t.
func (f *Fair) tickets(u *fairUser, t topology.GPUType) float64 {
	if w, ok := u.typeTickets[t]; ok {
		return max(w, u.Weight*minTicketShare)
	}
	return u.Weight
}

// SetTypeTickets gives tenant id tickets[t] tickets on each type t it
// names, in place of its Weight (types it does not name go back to the
// Weight): a trade of GPU shares (package trade) is realised by giving
// each tenant, on each type, tickets in proportion to the share it holds
// there. A tenant with 0 tickets on a type keeps a vanishing share there
// (minTicketShare) until its jobs leave it. It returns an
// *gpufair.InputError, and changes nothing, for an unknown tenant
// (gpufair.ErrUnknownID), a type the cluster lacks
// (gpufair.ErrUnknownType) and tickets that are negative or not finite
// (gpufair.ErrValue).
func (f *Fair) SetTypeTickets(id alloc.TenantID, tickets map[topology.GPUType]float64) error {
	u, _ := f.user(id)
	if u == nil {
		return gpufair.Invalid("Tenant.ID", string(id), gpufair.ErrUnknownID, "not a tenant")
	}
	for _, t := range slices.Sorted(maps.Keys(tickets)) {
		w := tickets[t]
		if !slices.Contains(f.types, t) {
			return gpufair.Invalid("Tickets", string(t), gpufair.ErrUnknownType, "not a type of the cluster")
		}
		if !typeTickets(w) {
			return gpufair.Invalid("Tickets", string(t), gpufair.ErrValue, "%v tickets for %q", w, id)
		}
	}
	old := u.typeTickets
	u.typeTickets = make(map[topology.GPUType]float64, len(tickets))
	for t, w := range tickets {
		u.typeTickets[t] = w
	}
	for _, t := range f.types {
		if f.tickets(u, t) != ticketsIn(old, u.Weight, t) {
			f.retuneUser(u, t)
			f.touch(t)
		}
	}
	return nil
}

// ticketsIn is tickets for a typeTickets map m of a tenant of weight w.
func ticketsIn(m map[topology.GPUType]float64, w float64, t topology.GPUType) float64 {
	if v, ok := m[t]; ok {
		return max(v, w*minTicketShare)
	}
	return w
}

// Move migrates job id to GPU type t (a job of its owner that runs faster
// there, or a traded share to use): it leaves its servers and is placed on
// the servers of t of lowest ticket load, as Submit places a new job,
// joining them at the smallest pass there. Moving a job to its own type
// re-places it. It returns the new placement, and an *gpufair.InputError,
// changing nothing, for an unknown job (gpufair.ErrUnknownID), a type the
// cluster lacks (gpufair.ErrUnknownType), or one with fewer GPUs than the
// job's gang (gpufair.ErrTooLarge).
func (f *Fair) Move(id alloc.JobID, t topology.GPUType) (Placement, error) {
	j, ok := f.jobs[id]
	if !ok {
		return Placement{}, gpufair.Invalid("Job.ID", string(id), gpufair.ErrUnknownID, "not submitted")
	}
	k := slices.Index(f.types, t)
	if k < 0 {
		return Placement{}, gpufair.Invalid("Type", string(t), gpufair.ErrUnknownType, "not a type of the cluster")
	}
	if j.Gang > f.count[k] {
		return Placement{}, gpufair.Invalid("Type", string(id), gpufair.ErrTooLarge, "%d GPUs for a cluster of %d %q", j.Gang, f.count[k], t)
	}
	u, _ := f.user(j.Owner)
	from := j.Type
	f.split.Remove(id)
	u.demand[from] -= j.Gang
	f.touch(from)
	j.Type, j.parts = t, nil
	// Cannot fail: the job was valid and fits type t.
	_ = f.place(j, u)
	f.retuneUser(u, from)
	f.retuneUser(u, t)
	return Placement{Job: id, Type: t, Parts: slices.Clone(j.parts)}, nil
}

// Type returns the GPU type job id runs on.
func (f *Fair) Type(id alloc.JobID) (topology.GPUType, bool) {
	j, ok := f.jobs[id]
	if !ok {
		return "", false
	}
	return j.Type, true
}

// Demand returns tenant id's GPUs on type t: Σ of its jobs' gangs there.
func (f *Fair) Demand(id alloc.TenantID, t topology.GPUType) int {
	if u, _ := f.user(id); u != nil {
		return u.demand[t]
	}
	return 0
}

// TenantJobs returns tenant id's jobs, by ID.
func (f *Fair) TenantJobs(id alloc.TenantID) []alloc.JobID {
	if u, _ := f.user(id); u != nil {
		return slices.Clone(u.jobs)
	}
	return nil
}

// Tenants returns the tenants, by ID.
func (f *Fair) Tenants() []alloc.Tenant {
	out := make([]alloc.Tenant, len(f.users))
	for i, u := range f.users {
		out[i] = u.Tenant
	}
	return out
}

// Has reports whether job id is on the cluster.
func (f *Fair) Has(id alloc.JobID) bool {
	_, ok := f.jobs[id]
	return ok
}

// Shares returns each tenant's fair share of type t in GPUs after weight
// readjustment, by tenant ID, for the tenants with jobs there: none for a
// type the cluster lacks.
func (f *Fair) Shares(t topology.GPUType) map[alloc.TenantID]float64 {
	if !slices.Contains(f.types, t) {
		return map[alloc.TenantID]float64{}
	}
	acc := f.accounts(t, "", 0)
	out := make(map[alloc.TenantID]float64, len(acc))
	for _, a := range acc {
		out[a.Tenant] = a.Share
	}
	return out
}

// weight returns job id's weight in the split scheduler.
func (s *Split) weight(id alloc.JobID) (float64, bool) {
	l, ok := s.where[id]
	switch {
	case !ok:
		return 0, false
	case l == onLarge:
		return s.large[s.findLarge(id)].Weight, true
	}
	i := s.local[l].find(id)
	return s.local[l].jobs[i].Weight, true
}
