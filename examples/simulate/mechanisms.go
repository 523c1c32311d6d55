package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
)

// A mechanism makes a fresh scheduler for one run.
type mechanism struct {
	name string
	make func(c topology.Cluster, types []topology.GPUType) (sim.Scheduler, error)
}

// mechanisms lists what the simulator can compare, one line each: a policy
// of package alloc realised by Gavel's rounds (with its per-job inputs when
// it has some), or a scheduler of its own.
func mechanisms() []mechanism {
	return []mechanism{
		policy(alloc.MaxMin{}, nil),
		policy(alloc.MaxMinAgnostic{}, nil),
		named("oef-non-cooperative", alloc.OEF{Mode: alloc.NonCooperative}),
		policy(alloc.FinishTimeFairness{}, &sim.PolicySettings{Inputs: sim.FinishTimeFairnessInputs, Every: 10}),
		policy(alloc.FIFO{}, &sim.PolicySettings{Inputs: sim.FIFOInputs}),
		policy(alloc.ShortestJobFirst{}, &sim.PolicySettings{Inputs: sim.ShortestJobFirstInputs, Every: 10}),
		policy(alloc.MaxTotalThroughput{}, nil),
		themis("themis", 0),
		themis("themis-patience-2", 2),
	}
}

// themis is Themis' arbiter with its paper's settings: 10-minute leases,
// f = 0.8 (section 6.4), and a fixed seed for its random draws; patience
// is the starvation guard (auction.ArbiterSettings.Patience, 0: none).
func themis(name string, patience int) mechanism {
	return mechanism{name, func(c topology.Cluster, types []topology.GPUType) (sim.Scheduler, error) {
		set := &auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.8, Patience: patience}
		return sim.NewThemisScheduler(c, types, set, rand.NewPCG(1, 0))
	}}
}

// policy is a mechanism that solves pol and realises it round by round.
func policy(pol alloc.Policy, s *sim.PolicySettings) mechanism {
	return mechanism{pol.Name(), func(c topology.Cluster, types []topology.GPUType) (sim.Scheduler, error) {
		return sim.NewPolicyScheduler(pol, c, types, s)
	}}
}

// named is a policy without per-job inputs under a name of this command's
// own (for names with spaces).
func named(name string, pol alloc.Policy) mechanism {
	m := policy(pol, nil)
	m.name = name
	return m
}

// pick returns the mechanisms named in list (comma-separated), in that
// order, or an error naming the first unknown one.
func pick(list string) ([]mechanism, error) {
	all := mechanisms()
	var out []mechanism
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, m := range all {
			if m.name == name {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			var names []string
			for _, m := range all {
				names = append(names, m.name)
			}
			return nil, fmt.Errorf("-mechanisms: unknown %q (known: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}
