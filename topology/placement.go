package topology

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpufair/gpufair"
)

// Placement errors; test with errors.Is.
var (
	// ErrNoCapacity reports a gang larger than the free GPUs of its type.
	ErrNoCapacity = errors.New("topology: not enough free GPUs")
	// ErrSlot reports a GPU slot that does not exist or is not in the
	// state (free or taken) the call needs.
	ErrSlot = errors.New("topology: bad GPU slot")
	// ErrGang reports a request for fewer than one GPU.
	ErrGang = errors.New("topology: a gang needs at least one GPU")
)

// Placer hands out the GPU slots of a cluster to gangs, one scheduling
// round at a time. It packs each gang onto the fewest servers of its type:
// onto a single server when one has room (the fullest server that still
// fits, so large holes stay open for large gangs), otherwise onto the
// servers with the most free GPUs first, which needs the fewest servers.
// Ties go to the server listed first. Slots within a server are taken in
// increasing order.
//
// The zero value is not usable; build one with NewPlacer.
type Placer struct {
	c     Cluster
	taken [][]bool // taken[s][slot]
	free  []int    // free slots per server
}

// NewPlacer returns a Placer with every slot of c free. It copies c.
func NewPlacer(c Cluster) (*Placer, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Placer{c: Cluster{Servers: append([]Server(nil), c.Servers...)}}
	p.taken = make([][]bool, len(c.Servers))
	p.free = make([]int, len(c.Servers))
	for i, s := range c.Servers {
		p.taken[i] = make([]bool, s.GPUs)
		p.free[i] = s.GPUs
	}
	return p, nil
}

// Cluster returns the placer's cluster. The slice is the placer's own.
func (p *Placer) Cluster() Cluster { return p.c }

// Reset frees every slot.
func (p *Placer) Reset() {
	for i, t := range p.taken {
		clear(t)
		p.free[i] = len(t)
	}
}

// Free returns the number of free GPUs of type t.
func (p *Placer) Free(t GPUType) int {
	n := 0
	for i, s := range p.c.Servers {
		if s.Type == t {
			n += p.free[i]
		}
	}
	return n
}

// FreeOn returns the number of free GPUs on server s. It panics if s is out
// of range.
func (p *Placer) FreeOn(s int) int { return p.free[s] }

// Place takes n free GPUs of type t on the fewest servers and returns them
// in server then slot order. It returns gpufair.ErrUnknownType if no server holds t
// and ErrNoCapacity if fewer than n GPUs of t are free, ErrGang if n is
// below 1; nothing is taken then.
func (p *Placer) Place(t GPUType, n int) ([]GPU, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: Place of %d GPUs", ErrGang, n)
	}
	var cand []int
	total := 0
	for i, s := range p.c.Servers {
		if s.Type == t {
			cand = append(cand, i)
			total += p.free[i]
		}
	}
	if len(cand) == 0 {
		return nil, fmt.Errorf("%w: %q", gpufair.ErrUnknownType, t)
	}
	if total < n {
		return nil, fmt.Errorf("%w: %d of %q wanted, %d free", ErrNoCapacity, n, t, total)
	}
	// Best fit on one server: the fullest server that still has room.
	best := -1
	for _, i := range cand {
		if p.free[i] >= n && (best < 0 || p.free[i] < p.free[best]) {
			best = i
		}
	}
	if best >= 0 {
		return p.take(best, n, nil), nil
	}
	// Spread: most free first gives the fewest servers for n GPUs.
	sort.SliceStable(cand, func(a, b int) bool { return p.free[cand[a]] > p.free[cand[b]] })
	var out []GPU
	for _, i := range cand {
		if n == 0 {
			break
		}
		k := min(n, p.free[i])
		if k == 0 {
			continue
		}
		out = p.take(i, k, out)
		n -= k
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Server != out[b].Server {
			return out[a].Server < out[b].Server
		}
		return out[a].Slot < out[b].Slot
	})
	return out, nil
}

func (p *Placer) take(s, n int, out []GPU) []GPU {
	for slot, used := range p.taken[s] {
		if n == 0 {
			break
		}
		if !used {
			p.taken[s][slot] = true
			p.free[s]--
			out = append(out, GPU{Server: s, Slot: slot})
			n--
		}
	}
	return out
}

// Reserve takes exactly the given slots, for a gang that keeps its GPUs
// from one round to the next. It returns ErrSlot, and takes nothing, if a
// slot does not exist, is listed twice (wrapping gpufair.ErrDuplicate too)
// or is already taken.
func (p *Placer) Reserve(gpus []GPU) error {
	seen := make(map[GPU]bool, len(gpus))
	for _, g := range gpus {
		if !p.c.Has(g) {
			return fmt.Errorf("%w: server %d slot %d does not exist", ErrSlot, g.Server, g.Slot)
		}
		if seen[g] {
			return fmt.Errorf("%w: server %d slot %d is listed twice: %w", ErrSlot, g.Server, g.Slot, gpufair.ErrDuplicate)
		}
		if p.taken[g.Server][g.Slot] {
			return fmt.Errorf("%w: server %d slot %d is taken", ErrSlot, g.Server, g.Slot)
		}
		seen[g] = true
	}
	for _, g := range gpus {
		p.taken[g.Server][g.Slot] = true
		p.free[g.Server]--
	}
	return nil
}

// Release frees the given slots. It returns ErrSlot, and frees nothing, if a
// slot does not exist or is not taken.
func (p *Placer) Release(gpus []GPU) error {
	for _, g := range gpus {
		if !p.c.Has(g) {
			return fmt.Errorf("%w: server %d slot %d does not exist", ErrSlot, g.Server, g.Slot)
		}
		if !p.taken[g.Server][g.Slot] {
			return fmt.Errorf("%w: server %d slot %d is free", ErrSlot, g.Server, g.Slot)
		}
	}
	for _, g := range gpus {
		if p.taken[g.Server][g.Slot] {
			p.taken[g.Server][g.Slot] = false
			p.free[g.Server]++
		}
	}
	return nil
}

// ServersUsed returns the number of distinct servers among gpus.
func ServersUsed(gpus []GPU) int {
	seen := make(map[int]bool, len(gpus))
	for _, g := range gpus {
		seen[g.Server] = true
	}
	return len(seen)
}

// MinServers returns the fewest servers of type t whose GPUs add up to at
// least n, counting every GPU of each server (an empty cluster's answer),
// or 0 if the cluster's GPUs of type t are fewer than n or n is not
// positive.
func MinServers(c Cluster, t GPUType, n int) int {
	var sizes []int
	for _, s := range c.Servers {
		if s.Type == t {
			sizes = append(sizes, s.GPUs)
		}
	}
	if n <= 0 {
		return 0 // no server is needed (it said 1)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(sizes)))
	for k, size := range sizes {
		// Counting n down cannot wrap, as a running sum of sizes could.
		if n -= size; n <= 0 {
			return k + 1
		}
	}
	return 0
}
