package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpufair/gpufair/alloc"
)

// policyEntry is a policy the command offers: its name, and a constructor
// from the request's inputs that reports the input it lacks.
type policyEntry struct {
	name string
	make func(in inputs, p *alloc.Problem) (alloc.Policy, error)
}

// catalogue lists the policies, one line each.
func catalogue() []policyEntry {
	return []policyEntry{
		withTenants("oef-non-cooperative", alloc.OEF{Mode: alloc.NonCooperative}),
		withTenants("oef-cooperative", alloc.OEF{Mode: alloc.Cooperative}),
		fixed(alloc.MaxMin{}),
		fixed(alloc.WaterFilling{}),
		withTenants("hierarchical", alloc.Hierarchical{}),
		fixed(alloc.MaxMinAgnostic{}),
		fixed(alloc.MaxTotalThroughput{}),
		{"fifo", func(in inputs, _ *alloc.Problem) (alloc.Policy, error) { return alloc.FIFO{Arrival: in.Arrival}, nil }},
		{"shortest-job-first", func(in inputs, _ *alloc.Problem) (alloc.Policy, error) {
			return alloc.ShortestJobFirst{RemainingSteps: in.RemainingSteps}, need("remaining_steps", in.RemainingSteps)
		}},
		{"makespan", func(in inputs, _ *alloc.Problem) (alloc.Policy, error) {
			return alloc.Makespan{RemainingSteps: in.RemainingSteps}, need("remaining_steps", in.RemainingSteps)
		}},
		{"finish-time-fairness", func(in inputs, _ *alloc.Problem) (alloc.Policy, error) {
			return alloc.FinishTimeFairness{RemainingSteps: in.RemainingSteps, Elapsed: in.Elapsed, IsolatedElapsed: in.IsolatedElapsed}, need("remaining_steps", in.RemainingSteps)
		}},
		{"min-cost", func(in inputs, _ *alloc.Problem) (alloc.Policy, error) {
			pol := alloc.MinCost{Cost: in.Cost}
			if in.SLO != nil {
				pol.RemainingSteps, pol.SLO = in.RemainingSteps, in.SLO
			}
			return pol, need("cost", in.Cost)
		}},
	}
}

// fixed is a policy without inputs.
func fixed(pol alloc.Policy) policyEntry { return named(pol.Name(), pol) }

// named is a policy without inputs, under a name of the command's own.
func named(name string, pol alloc.Policy) policyEntry {
	return policyEntry{name, func(inputs, *alloc.Problem) (alloc.Policy, error) { return pol, nil }}
}

// withTenants is a policy over users: it runs only when the problem
// names its tenants.
func withTenants(name string, pol alloc.Policy) policyEntry {
	return policyEntry{name, func(_ inputs, p *alloc.Problem) (alloc.Policy, error) {
		if p.Tenants == nil {
			return nil, errMissing("problem.tenants")
		}
		return pol, nil
	}}
}

// errMissing marks a policy whose inputs were not given.
type errMissing string

func (e errMissing) Error() string { return string(e) + ": required" }

func need(field string, v []float64) error {
	if v == nil {
		return errMissing("inputs." + field)
	}
	return nil
}

// solve runs the requested policies (all those whose inputs are given if
// none is named) and audits their allocations if asked.
func solve(ctx context.Context, req *request) (*response, error) {
	p := &req.Problem
	if err := p.Validate(); err != nil {
		return nil, inJSON(p, err)
	}
	if req.AuditTenants && p.Tenants == nil {
		return nil, fmt.Errorf("audit_tenants: %w", errMissing("problem.tenants"))
	}
	type run struct {
		name string
		pol  alloc.Policy
	}
	var pols []run
	if len(req.Policies) == 0 {
		for _, e := range catalogue() {
			if pol, err := e.make(req.Inputs, p); err == nil {
				pols = append(pols, run{e.name, pol})
			}
		}
	}
	for _, name := range req.Policies {
		e, err := lookup(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		pol, err := e.make(req.Inputs, p)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", e.name, err)
		}
		pols = append(pols, run{e.name, pol})
	}
	resp := &response{Results: []result{}}
	for _, r := range pols {
		a, err := r.pol.Allocate(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", r.name, inJSON(p, err))
		}
		res := result{Policy: r.name, Allocation: a}
		if req.Audit {
			if res.Audit, err = auditOf(ctx, p, a); err != nil {
				return nil, fmt.Errorf("policy %s: audit: %w", r.name, inJSON(p, err))
			}
		}
		if req.AuditTenants {
			if res.TenantAudit, err = tenantAuditOf(ctx, p, a); err != nil {
				return nil, fmt.Errorf("policy %s: tenant audit: %w", r.name, inJSON(p, err))
			}
		}
		for _, row := range a.GPUs { // after the audit, which needs the exact values
			for k := range row {
				row[k] = roundSig(row[k])
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func lookup(name string) (policyEntry, error) {
	var names []string
	for _, e := range catalogue() {
		if e.name == name {
			return e, nil
		}
		names = append(names, e.name)
	}
	return policyEntry{}, fmt.Errorf("policies: unknown policy %q (known: %s)", name, strings.Join(names, ", "))
}

// auditOf holds a job allocation to the axioms, job by job, with each
// job's rows capped at its gang for the Pareto check (Gavel's rule: a job
// runs on at most its gang of GPUs at a time).
func auditOf(ctx context.Context, p *alloc.Problem, a *alloc.Allocation) (*audit, error) {
	caps := make([]float64, len(p.Jobs))
	weights := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		caps[i], weights[i] = float64(j.Gang), j.Weight
	}
	r, err := alloc.Audit(ctx, a, p.Capacity, p.Valuations(), weights, &alloc.AuditSettings{Pareto: &alloc.ParetoSettings{RowCap: caps}})
	if err != nil {
		return nil, err
	}
	return auditJSON(r, a.Rows), nil
}

// tenantAuditOf holds a job allocation to the axioms tenant by tenant: each
// tenant holds the sum of its jobs' bundles (Allocation.ByOwner) and values
// it by the best use its jobs make of each type (alloc.BestOf), with the
// tenants' weights. Those valuations are not linear, so Pareto efficiency
// is not checked.
func tenantAuditOf(ctx context.Context, p *alloc.Problem, a *alloc.Allocation) (*audit, error) {
	owned, err := a.ByOwner(p.Jobs, p.Tenants)
	if err != nil {
		return nil, err
	}
	linear := make([]alloc.Linear, len(p.Jobs))
	for i, v := range p.Valuations() {
		linear[i] = v.(alloc.Linear) // Problem.Valuations are linear rates
	}
	vals, err := alloc.OwnerValuations(p.Jobs, p.Tenants, linear)
	if err != nil {
		return nil, err
	}
	r, err := alloc.Audit(ctx, owned, p.Capacity, vals, alloc.OwnerWeights(p.Tenants), nil)
	if err != nil {
		return nil, err
	}
	return auditJSON(r, owned.Rows), nil
}

// auditJSON converts a report on rows into the output's form.
func auditJSON(r *alloc.AuditReport, rows []string) *audit {
	out := &audit{}
	si := &out.SharingIncentive
	si.Holds = r.SharingIncentive.Holds
	// The worst row is chosen among the rounded margins (ties to the first),
	// so that solver noise does not pick among equals.
	worst := -1
	for i, m := range r.SharingIncentive.Margin {
		si.Margins = append(si.Margins, finite(m))
		if worst < 0 || roundSig(m) < roundSig(r.SharingIncentive.Margin[worst]) {
			worst = i
		}
	}
	si.Worst, si.WorstMargin = rows[worst], si.Margins[worst]
	ef := &out.EnvyFreeness
	ef.Holds, ef.MaxEnvy = r.Envy.Holds, finite(r.Envy.MaxEnvy)
	if !r.Envy.Holds {
		ef.Envier, ef.Envied = rows[r.Envy.Envier], rows[r.Envy.Envied]
	}
	if r.Pareto != nil {
		out.Pareto = &struct {
			Holds bool     `json:"holds"`
			Gain  *float64 `json:"gain"`
		}{r.Pareto.Holds, finite(r.Pareto.Gain)}
	}
	return out
}
