package topology_test

import (
	"fmt"

	"github.com/gpufair/gpufair/topology"
)

// Packing gangs on the fewest servers: a 2-GPU gang takes the fullest
// server it fits on, a 10-GPU gang the two largest.
func ExamplePlacer() {
	c := topology.Cluster{Servers: []topology.Server{
		{Name: "a", Type: "v100", GPUs: 4}, {Name: "b", Type: "v100", GPUs: 2}, {Name: "c", Type: "v100", GPUs: 8},
	}}
	p, _ := topology.NewPlacer(c)
	two, _ := p.Place("v100", 2)
	ten, _ := p.Place("v100", 10)
	fmt.Println(two, topology.ServersUsed(two))
	fmt.Println(len(ten), topology.ServersUsed(ten), "servers;", p.Free("v100"), "free")
	_, err := p.Place("v100", 3)
	fmt.Println(err)
	// Output:
	// [{1 0} {1 1}] 1
	// 10 2 servers; 2 free
	// topology: not enough free GPUs: 3 of "v100" wanted, 2 free
}
