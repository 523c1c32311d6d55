package sim

import (
	"fmt"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// typeCounts returns the GPUs of c of each of types, and an
// *gpufair.InputError (field) naming the first type c lacks.
func typeCounts(c topology.Cluster, types []topology.GPUType, field string) ([]int, error) {
	ct, cc := c.Capacity()
	count := make([]int, len(types))
	for k, t := range types {
		i := slices.Index(ct, t)
		if i < 0 {
			return nil, gpufair.Invalid(field, string(t), gpufair.ErrUnknownID, "the cluster has no %q GPUs", t)
		}
		count[k] = cc[i]
	}
	return count, nil
}

// NewCluster returns a cluster with count[k] GPUs of types[k] on servers of
// perServer GPUs each (the last server of a type holds the remainder),
// named "<type>-<i>", one rack per type. Gavel's simulated cluster is
// NewCluster(GavelTypes(), []int{36, 36, 36}, 4). It returns an
// *gpufair.InputError for mismatched lengths, a count below 1 or perServer
// below 1, and counts that add up to more than topology.MaxClusterGPUs
// (gpufair.ErrTooLarge).
func NewCluster(types []topology.GPUType, count []int, perServer int) (topology.Cluster, error) {
	if len(types) != len(count) || len(types) == 0 {
		return topology.Cluster{}, gpufair.Invalid("Cluster.Count", "", gpufair.ErrShape, "%d counts for %d types", len(count), len(types))
	}
	if perServer < 1 {
		return topology.Cluster{}, gpufair.Invalid("Cluster.PerServer", "", gpufair.ErrValue, "%d GPUs per server", perServer)
	}
	var c topology.Cluster
	total := 0
	for k, t := range types {
		if count[k] < 1 {
			return topology.Cluster{}, gpufair.Invalid("Cluster.Count", string(t), gpufair.ErrValue, "%d GPUs", count[k])
		}
		// Checked before the servers are built: a count of math.MaxInt
		// built servers until memory ran out.
		if total += min(count[k], topology.MaxClusterGPUs+1); total > topology.MaxClusterGPUs {
			return topology.Cluster{}, gpufair.Invalid("Cluster.Count", string(t), gpufair.ErrTooLarge, "more than %d GPUs in all", topology.MaxClusterGPUs)
		}
		for i, left := 0, count[k]; left > 0; i++ {
			n := min(perServer, left)
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("%s-%d", t, i), Rack: string(t), Type: t, GPUs: n})
			left -= n
		}
	}
	return c, c.Validate()
}
