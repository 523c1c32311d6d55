package topology

import (
	"errors"
	"fmt"

	"github.com/gpufair/gpufair"
)

// ErrInvalid reports a malformed cluster description.
var ErrInvalid = errors.New("topology: invalid cluster")

// multiError is an error with its own message that wraps several
// sentinels: it lets an error keep wrapping ErrInvalid, which callers may
// test for, without saying "invalid cluster" about a slot or a slowdown.
type multiError struct {
	msg  string
	errs []error
}

func (e *multiError) Error() string   { return e.msg }
func (e *multiError) Unwrap() []error { return e.errs }

// wrapAll returns an error reading msg that wraps each of errs.
func wrapAll(msg string, errs ...error) error { return &multiError{msg: msg, errs: errs} }

// Server is one machine holding GPUs of a single type.
type Server struct {
	Name string  // unique within the cluster
	Rack string  // servers with equal Rack share a rack; empty means a rack of its own
	Type GPUType // the type of every GPU on the server
	GPUs int     // number of GPU slots, at least 1
}

// Cluster is the physical cluster: servers, grouped into racks.
type Cluster struct {
	Servers []Server
}

// GPU names one GPU slot: the Slot-th GPU of Servers[Server].
type GPU struct {
	Server int
	Slot   int
}

// Validate reports empty or duplicate server names, servers without GPUs and
// servers without a GPU type, all wrapping ErrInvalid, and a server or
// cluster beyond MaxServerGPUs or MaxClusterGPUs, wrapping
// gpufair.ErrTooLarge as well.
func (c Cluster) Validate() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("%w: no servers", ErrInvalid)
	}
	seen := make(map[string]bool, len(c.Servers))
	total := 0
	for i, s := range c.Servers {
		switch {
		case s.Name == "":
			return fmt.Errorf("%w: server %d has no name", ErrInvalid, i)
		case seen[s.Name]:
			return fmt.Errorf("%w: server %q listed twice", ErrInvalid, s.Name)
		case s.GPUs < 1:
			return fmt.Errorf("%w: server %q has %d GPUs", ErrInvalid, s.Name, s.GPUs)
		case s.Type == "":
			return fmt.Errorf("%w: server %q has no GPU type", ErrInvalid, s.Name)
		case s.GPUs > MaxServerGPUs:
			return fmt.Errorf("%w: server %q has %d GPUs, more than %d: %w", ErrInvalid, s.Name, s.GPUs, MaxServerGPUs, gpufair.ErrTooLarge)
		}
		seen[s.Name] = true
		total += s.GPUs
		if total > MaxClusterGPUs {
			return fmt.Errorf("%w: more than %d GPUs in all: %w", ErrInvalid, MaxClusterGPUs, gpufair.ErrTooLarge)
		}
	}
	return nil
}

// Bounds on a Cluster that Validate enforces. Every slot is tracked (a
// Placer keeps a flag per slot), so a server of 2^40 GPUs would exhaust
// memory instead of failing.
const (
	// MaxServerGPUs is the most GPUs one server may hold.
	MaxServerGPUs = 1 << 16
	// MaxClusterGPUs is the most GPUs a cluster may hold in all.
	MaxClusterGPUs = 1 << 24
)

// Has reports whether g is a slot of the cluster.
func (c Cluster) Has(g GPU) bool {
	return g.Server >= 0 && g.Server < len(c.Servers) && g.Slot >= 0 && g.Slot < c.Servers[g.Server].GPUs
}

// Capacity returns the number of GPUs of each type, with the types in order
// of first appearance among the servers; nil for a cluster Validate refuses
// (counts of 2^62 GPUs summed past int's range).
func (c Cluster) Capacity() (types []GPUType, count []int) {
	if c.Validate() != nil {
		return nil, nil
	}
	idx := map[GPUType]int{}
	for _, s := range c.Servers {
		k, ok := idx[s.Type]
		if !ok {
			k = len(types)
			idx[s.Type] = k
			types = append(types, s.Type)
			count = append(count, 0)
		}
		count[k] += s.GPUs
	}
	return types, count
}
