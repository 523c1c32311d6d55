package stride

import (
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// Packing (Settings.Pack, section 3.3). A server's gang-aware stride
// leaves GPUs idle when the jobs that run while its largest gang waits do
// not fill it: one 4-GPU and one 1-GPU job on a 4-GPU server idle 3 GPUs
// every other quantum. The paper avoids such servers by packing jobs, at
// placement and by migration, so that enough small jobs sit beside a
// large gang; it names no rule. Fair's rule: a server's idle GPUs are
// those its other jobs leave free while its largest gang waits,
// max(0, G − (S − L)) for G GPUs, S the GPUs of its jobs (the parts of
// multi-server jobs included) and L the largest, once S exceeds G (below
// that every job runs every quantum). Packing acts only on a type whose
// every server is so subscribed: while a server has GPUs to spare, a job
// is better off there than filling another's gaps. Ticket load still
// comes first: load balancing moves a job onto the least loaded server
// even where it opens idle GPUs there (a server-filling gang alone on its
// server would otherwise keep the whole server), and packing then fills
// them; it only keeps balancing from undoing packing, by moving no job
// off a server whose GPUs its leaving would idle.
//
// Packing fills idle GPUs; it does not give a server-filling gang more than
// half of its server (TestServerFillingGangRunsAtMostHalf).

// serverGangs returns, for each server of type t, the GPUs of its jobs and
// its largest gang, parts of multi-server jobs counted as gangs.
func (f *Fair) serverGangs(t topology.GPUType) (sum, largest []int) {
	sum = make([]int, len(f.c.Servers))
	largest = make([]int, len(f.c.Servers))
	for l, sv := range f.c.Servers {
		if sv.Type != t {
			continue
		}
		for _, e := range f.split.local[l].jobs {
			sum[l] += e.Gang
			largest[l] = max(largest[l], e.Gang)
		}
	}
	for _, lj := range f.split.large {
		for _, p := range lj.parts {
			if f.c.Servers[p.Server].Type == t {
				sum[p.Server] += p.GPUs
				largest[p.Server] = max(largest[p.Server], p.GPUs)
			}
		}
	}
	return sum, largest
}

// idleGPUs is the GPUs a server of gpus GPUs leaves idle while its largest
// gang waits, its jobs' gangs adding up to sum.
func idleGPUs(gpus, sum, largest int) int {
	if sum <= gpus {
		return 0
	}
	return max(0, gpus-(sum-largest))
}

// subscribed reports whether every server of type t holds jobs of at least
// its GPUs, sum being serverGangs'.
func (f *Fair) subscribed(t topology.GPUType, sum []int) bool {
	for l, sv := range f.c.Servers {
		if sv.Type == t && sum[l] < sv.GPUs {
			return false
		}
	}
	return true
}

// packGain is how many idle GPUs of server l a job of gang GPUs fills by
// joining it (negative if it opens some), sum and largest being
// serverGangs'.
func (f *Fair) packGain(l, gang int, sum, largest []int) int {
	g := f.c.Servers[l].GPUs
	return idleGPUs(g, sum[l], largest[l]) - idleGPUs(g, sum[l]+gang, max(largest[l], gang))
}

// largestWithout is the largest gang on server l once job id leaves it.
func (f *Fair) largestWithout(l int, id alloc.JobID) int {
	m := 0
	for _, e := range f.split.local[l].jobs {
		if e.ID != id {
			m = max(m, e.Gang)
		}
	}
	for _, lj := range f.split.large {
		if lj.ID == id {
			continue
		}
		for _, p := range lj.parts {
			if p.Server == l {
				m = max(m, p.GPUs)
			}
		}
	}
	return m
}

// leaveIdle is how many idle GPUs server l opens (negative: fills) when
// its single-server job id of gang GPUs leaves it.
func (f *Fair) leaveIdle(l int, id alloc.JobID, gang int, sum, largest []int) int {
	after := largest[l]
	if gang == after {
		after = f.largestWithout(l, id)
	}
	g := f.c.Servers[l].GPUs
	return idleGPUs(g, sum[l]-gang, after) - idleGPUs(g, sum[l], largest[l])
}
