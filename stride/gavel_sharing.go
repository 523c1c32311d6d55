package stride

import (
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// gavelPartner is a job's target time sharing gangs of type Type (an index
// into the ledger's types) with a job labelled With (Gavel §3.1, space
// sharing).
type gavelPartner struct {
	With string  `json:"with"`
	Type int     `json:"type"`
	Time float64 `json:"time"`
}

// colocated fills sol from a space-sharing solution r of ss over jobs in:
// each job's time alone as its target, its co-located time by partner
// label and type, and its label. cols maps the problem's types to the
// ledger's.
func colocated(sol gavelState, ss alloc.SpaceSharing, r *alloc.SharingResult, in []*round.Job, types []topology.GPUType, cols []int) gavelState {
	sol.Partners, sol.Labels = map[alloc.JobID][]gavelPartner{}, map[alloc.JobID]string{}
	for i, j := range in {
		x := make([]float64, len(types))
		for c, k := range cols {
			x[k] = grain(r.Alone[i][c])
		}
		sol.Target[j.ID] = x
		sol.Labels[j.ID] = string(j.ID)
		if ss.JobTypes != nil {
			sol.Labels[j.ID] = ss.JobTypes[i]
		}
		for _, ps := range r.Partners[i] {
			if t := grain(ps.Time); t > 0 {
				sol.Partners[j.ID] = append(sol.Partners[j.ID], gavelPartner{With: ps.With, Type: slices.Index(types, ps.Type), Time: t})
			}
		}
	}
	return sol
}

// pairTime returns the time job id should share gangs of type k, with
// any partner.
func (st *gavelState) pairTime(id alloc.JobID, k int) float64 {
	t := 0.0
	for _, p := range st.Partners[id] {
		if p.Type == k {
			t += p.Time
		}
	}
	return t
}

// pairsWith reports whether job id should share gangs of type k with a job
// labelled label.
func (st *gavelState) pairsWith(id alloc.JobID, label string, k int) bool {
	for _, p := range st.Partners[id] {
		if p.Type == k && p.With == label {
			return true
		}
	}
	return false
}

// wantsPartner reports whether job j, about to run on type k, is behind on
// its co-located time there: the part of its time on k it has shared is at
// most the part its allocation shares, its time counted as the priority
// pass counts it (since the latest reset of f_mk, if there is one), as ran
// returns it.
func (st *gavelState) wantsPartner(j *round.Job, k int, alone float64, ran func(*round.Job, int) (float64, float64)) bool {
	pair := st.pairTime(j.ID, k)
	if pair <= 0 {
		return false
	}
	r, shared := ran(j, k)
	if r == 0 {
		return true
	}
	return shared/r <= pair/(pair+alone)
}

// partner returns the waiting job (index into jobs) that job m should share
// gangs of type k with: one whose label m's allocation pairs it with on k,
// and whose allocation pairs it with m's label, of the same gang, not yet
// placed (chosen 0), highest priority on k first (ties: arrival order);
// -1 if none. byLabel lists the jobs of each label in arrival order.
func (st *gavelState) partner(jobs []*round.Job, m, k int, chosen []int, prio func(int, int) float64, byLabel map[string][]int) int {
	jm := jobs[m]
	best, bestPrio := -1, 0.0
	for _, p := range st.Partners[jm.ID] {
		if p.Type != k {
			continue
		}
		for _, n := range byLabel[p.With] {
			jn := jobs[n]
			if n == m || chosen[n] != 0 || jn.Gang != jm.Gang || !(jn.Rates[k] > 0) || !st.pairsWith(jn.ID, st.Labels[jm.ID], k) {
				continue
			}
			if q := prio(n, k); best < 0 || q > bestPrio || (q == bestPrio && n < best) {
				best, bestPrio = n, q
			}
		}
	}
	return best
}
