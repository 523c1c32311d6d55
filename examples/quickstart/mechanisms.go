package main

import (
	"context"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/topology"
	"github.com/gpufair/gpufair/trade"
)

// A mechanism turns the instance into a fractional allocation, one row per
// tenant. paper says where it comes from, note what it aims for.
type mechanism struct {
	name, paper, note string
	run               func(context.Context, *instance) (*alloc.Allocation, error)
}

// mechanisms lists the mechanisms compared, one line each: to add a
// fractional policy of package alloc, add policy(...) here.
func mechanisms(in *instance) []mechanism {
	return []mechanism{
		policy(alloc.OEF{Mode: alloc.NonCooperative}, "OEF §4.2.1", "equal throughput in K80-equivalents (speedups over the slowest type) for every tenant, as high as possible"),
		policy(alloc.OEF{Mode: alloc.Cooperative}, "OEF §4.2.2", "the most total normalised throughput among envy-free allocations"),
		policy(alloc.MaxMin{}, "Gavel §4.1", "heterogeneity-aware max-min: every tenant's rate relative to its equal share is equal, as high as possible"),
		policy(alloc.MaxMinAgnostic{}, "Gavel §7 baseline", "the same GPU count for everyone, blind to speed: the baseline Gavel beats"),
		policy(alloc.MaxTotalThroughput{}, "Gavel §3.1", "the most steps per second in total, whoever gets them"),
		policy(alloc.FinishTimeFairness{RemainingSteps: in.steps}, "Gavel §4.2, after Themis", "minimise the largest finish-time ratio rho"),
		policy(alloc.Makespan{RemainingSteps: in.steps}, "Gavel §4.2", "finish all the work as early as possible"),
		policy(alloc.ShortestJobFirst{RemainingSteps: in.steps}, "Gavel §4.2", "shortest remaining job first"),
		policy(alloc.FIFO{}, "Gavel §4.2", "first come (here: tenant order), first served, heterogeneity-aware"),
		{"gandiva_fair trading", "Gandiva_fair §3.4", "equal shares of every type, then fast GPUs sold for slow ones at the second price", gandivaTrading},
		{"themis auction", "Themis §3.3", "one partial-allocation auction: proportionally fair, minus hidden payments left unallocated", themisAuction},
	}
}

// policy is a mechanism that is a fractional policy of package alloc: it
// allocates jobs, and each tenant holds what its jobs hold.
func policy(pol alloc.Policy, paper, note string) mechanism {
	return mechanism{pol.Name(), paper, note, func(ctx context.Context, in *instance) (*alloc.Allocation, error) {
		a, err := pol.Allocate(ctx, in.p)
		if err != nil {
			return nil, err
		}
		return a.ByOwner(in.p.Jobs, in.p.Tenants)
	}}
}

// tenantIDs returns the tenants' IDs as allocation rows.
func tenantIDs(p *alloc.Problem) []string {
	ids := make([]string, len(p.Tenants))
	for i, u := range p.Tenants {
		ids[i] = string(u.ID)
	}
	return ids
}

// gandivaTrading gives every tenant an equal ticket share of each GPU type
// and lets them trade fast GPUs for slow ones at the second-highest price.
func gandivaTrading(ctx context.Context, in *instance) (*alloc.Allocation, error) {
	p := in.p
	m, err := trade.NewMarket(p.Capacity.Types, p.Capacity.Count, &trade.Settings{Unit: 0.25})
	if err != nil {
		return nil, err
	}
	for i, u := range p.Tenants {
		rates := make(map[topology.GPUType]float64, len(p.Capacity.Types))
		for k, t := range p.Capacity.Types {
			rates[t] = in.rates[i][k]
		}
		if _, err := m.Join(trade.Bidder{Tenant: alloc.Tenant{ID: u.ID, Weight: u.Weight}, Rates: rates}, 0); err != nil {
			return nil, err
		}
	}
	if _, err := m.Run(ctx, 1); err != nil {
		return nil, err
	}
	// The market lists users by ID; the report lists them as p does.
	a := alloc.NewAllocation(tenantIDs(p), p.Capacity)
	for i, u := range p.Tenants {
		h, _ := m.Holdings(u.ID)
		copy(a.GPUs[i], h)
	}
	return a, nil
}

// themisAuction offers the whole cluster to every tenant at once; each bids
// its linear valuation (its rates), and the partial-allocation mechanism
// keeps a hidden payment from each: the leftover is not allocated.
func themisAuction(ctx context.Context, in *instance) (*alloc.Allocation, error) {
	vals := make([]alloc.Valuation, len(in.rates))
	for i, r := range in.rates {
		vals[i] = r
	}
	out, err := auction.PartialAllocation(ctx, in.p.Capacity, tenantIDs(in.p), vals, nil)
	if err != nil {
		return nil, err
	}
	return out.Final, nil
}
