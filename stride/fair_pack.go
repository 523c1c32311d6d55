package stride

import "github.com/gpufair/gpufair/topology"

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

// gangs summarises the jobs on one server for packing: the GPUs they add
// up to, the largest gang, how many gangs are that large, and the next
// largest.
type gangs struct {
	sum, largest, nLargest, second int
}

func (g *gangs) add(n int) {
	g.sum += n
	switch {
	case n > g.largest:
		g.second, g.largest, g.nLargest = g.largest, n, 1
	case n == g.largest:
		g.nLargest++
	case n > g.second:
		g.second = n
	}
}

// idle is the GPUs a server of gpus GPUs with these jobs leaves idle while
// its largest gang waits.
func (g gangs) idle(gpus int) int { return idleGPUs(gpus, g.sum, g.largest) }

// joinIdle is idle once a job of gang n joins.
func (g gangs) joinIdle(gpus, n int) int { return idleGPUs(gpus, g.sum+n, max(g.largest, n)) }

// leaveIdle is idle once one of its jobs of gang n leaves.
func (g gangs) leaveIdle(gpus, n int) int {
	largest := g.largest
	if n == largest && g.nLargest == 1 {
		largest = g.second
	}
	return idleGPUs(gpus, g.sum-n, largest)
}

// serverGangs returns the gangs on each server of type t (zero elsewhere),
// parts of multi-server jobs counted as gangs.
func (f *Fair) serverGangs(t topology.GPUType) []gangs {
	out := make([]gangs, len(f.c.Servers))
	for l, sv := range f.c.Servers {
		if sv.Type != t {
			continue
		}
		for _, e := range f.split.local[l].jobs {
			out[l].add(e.Gang)
		}
	}
	for _, lj := range f.split.large {
		for _, p := range lj.parts {
			if f.c.Servers[p.Server].Type == t {
				out[p.Server].add(p.GPUs)
			}
		}
	}
	return out
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
// its GPUs, on is serverGangs'.
func (f *Fair) subscribed(t topology.GPUType, on []gangs) bool {
	for l, sv := range f.c.Servers {
		if sv.Type == t && on[l].sum < sv.GPUs {
			return false
		}
	}
	return true
}

// packGain is how many idle GPUs of server l a job of gang GPUs fills by
// joining it (negative if it opens some), on being serverGangs'.
func (f *Fair) packGain(l, gang int, on []gangs) int {
	g := f.c.Servers[l].GPUs
	return on[l].idle(g) - on[l].joinIdle(g, gang)
}

// leaveIdle is how many idle GPUs server l opens (negative: fills) when
// one of its single-server jobs of gang GPUs leaves it.
func (f *Fair) leaveIdle(l, gang int, on []gangs) int {
	g := f.c.Servers[l].GPUs
	return on[l].leaveIdle(g, gang) - on[l].idle(g)
}
