package gpu

import (
	"errors"
	"fmt"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// ErrNoHosts reports that no host, or no schedulable GPU, was given to
// Cluster or Capacity.
var ErrNoHosts = errors.New("gpu: no hosts with schedulable GPUs")

// Cluster combines several hosts' probes into one topology.Cluster: the
// servers of each host (see Host.Servers), hosts in the order given. It
// returns an error wrapping topology.ErrInvalid if a host has no name, two
// servers share a name (give hosts distinct names first), a schedulable
// device has no type, or the cluster is larger than topology.Cluster.Validate
// allows, and ErrNoHosts if a host is nil or there are no servers.
func Cluster(hosts ...*Host) (topology.Cluster, error) {
	var c topology.Cluster
	for i, h := range hosts {
		if h == nil {
			return topology.Cluster{}, fmt.Errorf("%w: host %d is nil", ErrNoHosts, i)
		}
		if h.Name == "" {
			return topology.Cluster{}, fmt.Errorf("%w: host %d has no name", topology.ErrInvalid, i)
		}
		c.Servers = append(c.Servers, h.Servers()...)
	}
	if len(c.Servers) == 0 {
		return topology.Cluster{}, ErrNoHosts
	}
	if err := c.Validate(); err != nil {
		return topology.Cluster{}, err
	}
	return c, nil
}

// Capacity returns the alloc.Cluster of several hosts: the number of
// schedulable GPUs of each type, summed over hosts, with the types in order
// of first appearance (hosts in the order given, then device index). It
// returns an error wrapping ErrNoHosts if a host is nil or there is no
// schedulable GPU, and alloc.NewCapacity's *gpufair.InputError if a
// schedulable device has no type or a count is beyond alloc.MaxCount.
func Capacity(hosts ...*Host) (alloc.Capacity, error) {
	var types []topology.GPUType
	var count []float64
	idx := map[topology.GPUType]int{}
	for i, h := range hosts {
		if h == nil {
			return alloc.Capacity{}, fmt.Errorf("%w: host %d is nil", ErrNoHosts, i)
		}
		ts, ns := h.Capacity()
		for k, t := range ts {
			j, ok := idx[t]
			if !ok {
				j = len(types)
				idx[t] = j
				types = append(types, t)
				count = append(count, 0)
			}
			count[j] += float64(ns[k])
		}
	}
	if len(types) == 0 {
		return alloc.Capacity{}, ErrNoHosts
	}
	return alloc.NewCapacity(types, count)
}
