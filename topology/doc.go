// Package topology describes the physical cluster: GPU types, servers holding
// GPUs of one type, racks of servers, the locality of a set of GPUs (same
// machine, same rack, across racks), the placement slowdown S(G) that Themis
// charges for spread-out allocations, and packing gangs onto the fewest
// servers.
package topology
