package stride

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
)

// A tenant with jobs of several job types is several virtual users to OEF
// (section 4.2.4), each with its own bundle. OEF's scheduler rounds the
// tenant's share as one, then splits it among its job types by the same
// rounding with carried deviation, so that each job type's GPUs follow its
// own ideal over time and not the rotation's order.

// kindSep separates a tenant's ID from a job type's in kindKey.
const kindSep = "\x00"

// kindKey names job j's job type within its tenant: its label in the
// policy's JobTypes, or else its rates over its fastest, as alloc.OEF
// groups jobs whose normalised rows agree.
func (o *OEF) kindKey(j *round.Job) alloc.TenantID {
	if l, ok := o.pol.JobTypes[j.ID]; ok {
		return alloc.TenantID(string(j.Owner) + kindSep + "label:" + l)
	}
	top := 0.0
	for _, r := range j.Rates {
		top = math.Max(top, r)
	}
	var b strings.Builder
	b.WriteString(string(j.Owner) + kindSep + "rates:")
	for k, r := range j.Rates {
		if k > 0 {
			b.WriteByte(',')
		}
		if top > 0 {
			r /= top
		}
		b.WriteString(strconv.FormatFloat(r, 'g', -1, 64))
	}
	return alloc.TenantID(b.String())
}

// kindOwner returns the tenant of a kindKey.
func kindOwner(key alloc.TenantID) alloc.TenantID {
	owner, _, _ := strings.Cut(string(key), kindSep)
	return alloc.TenantID(owner)
}

// oefKind is one job type of a tenant with several, in a round's plan.
type oefKind struct {
	key alloc.TenantID
	oefGroup
}

// kinds returns the job types of tenant t's jobs, if it has several (nil
// otherwise), with, for each of the round's jobs, the index of its job
// type in the result (kindOf, filled for t's jobs only).
func (o *OEF) kinds(t oefTenant, jobs []*round.Job, healthy []int, kindOf []int) []oefKind {
	if o.oneKind(t, jobs) {
		for _, ji := range t.jobs {
			kindOf[ji] = -1
		}
		return nil
	}
	index := map[alloc.TenantID]int{}
	var out []oefKind
	for _, ji := range t.jobs {
		j := jobs[ji]
		key := o.kindKey(j)
		v, ok := index[key]
		if !ok {
			v = len(out)
			index[key] = v
			out = append(out, oefKind{key: key, oefGroup: newOEFGroup(len(healthy))})
		}
		kindOf[ji] = v
		out[v].add(ji, j, healthy)
	}
	if len(out) < 2 {
		for _, ji := range t.jobs {
			kindOf[ji] = -1
		}
		return nil
	}
	return out
}

// oneKind reports, without naming job types, that tenant t's jobs are of
// one: none is labelled in the policy's JobTypes, and all have the same
// rates, as a tenant's jobs of one model do.
func (o *OEF) oneKind(t oefTenant, jobs []*round.Job) bool {
	first := jobs[t.jobs[0]]
	for _, ji := range t.jobs {
		if _, ok := o.pol.JobTypes[jobs[ji].ID]; ok || !slices.Equal(jobs[ji].Rates, first.Rates) {
			return false
		}
	}
	return true
}

// unassigned returns what is left of a tenant's share of type k, share,
// beyond the parts sub of its job types hold.
func unassigned(share int, sub [][]int, k int) int {
	for _, s := range sub {
		share -= s[k]
	}
	return max(share, 0)
}

// splitShares splits a tenant's rounded shares among its job types kinds:
// type by type, job type v is owed its ideal plus its carried deviation,
// less what its overdue jobs took (used[v]), rounded as Decide rounds the
// tenants' shares (roundShares) within the tenant's share. The job type
// of the tenant's head holds the held type as the tenant does: there its
// part is 0 or at least the head's gang.
func (o *OEF) splitShares(kinds []oefKind, shares []int, used [][]int, head, hold int, jobs []*round.Job, kindOf []int) [][]int {
	out := make([][]int, len(kinds))
	for v := range out {
		out[v] = make([]int, len(shares))
	}
	col := make([]float64, len(kinds))
	minGang := make([]int, len(kinds))
	for k, share := range shares {
		for v, kd := range kinds {
			col[v] = -float64(used[v][k])
			if x := o.st.KindIdeal[kd.key]; x != nil {
				col[v] += x[k]
			}
			if d := o.st.KindDev[kd.key]; d != nil {
				col[v] += d[k]
			}
			minGang[v] = kd.minGang[k]
			if k == hold && head >= 0 && kindOf[head] == v {
				minGang[v] = max(minGang[v], jobs[head].Gang)
			}
		}
		for v, s := range roundShares(col, minGang, share) {
			out[v][k] = s
		}
	}
	return out
}

// kindDeviations carries each job type's deviation as Decide's step 3
// carries a tenant's: dev += ideal − real, real being what its jobs used
// and the rest of its part while a job of it that runs there waits,
// clipped to ±(G + 1), G its largest gang. Deviations of job types no
// longer in the system go.
func (o *OEF) kindDeviations(kinds [][]oefKind, sub, used [][][]int, jobs []*round.Job, chosen []int) {
	st := &o.st
	live := map[alloc.TenantID]bool{}
	for i := range kinds {
		for v, kd := range kinds[i] {
			live[kd.key] = true
			if st.KindDev == nil {
				st.KindDev = map[alloc.TenantID][]float64{}
			}
			dev := st.KindDev[kd.key]
			if dev == nil {
				dev = make([]float64, len(sub[i][v]))
				st.KindDev[kd.key] = dev
			}
			ideal := st.KindIdeal[kd.key]
			bound := float64(kd.largest + 1)
			for k := range dev {
				real := used[i][v][k]
				if sub[i][v][k] > 0 && slices.ContainsFunc(kd.jobs, func(ji int) bool { return chosen[ji] == 0 && jobs[ji].Rates[k] > 0 }) {
					real += sub[i][v][k]
				}
				d := dev[k] - float64(real)
				if ideal != nil {
					d += ideal[k]
				}
				dev[k] = max(-bound, min(bound, d))
			}
		}
	}
	for key := range st.KindDev {
		if !live[key] {
			delete(st.KindDev, key)
		}
	}
	if len(st.KindDev) == 0 {
		st.KindDev = nil
	}
}
