package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gpufair/gpufair/alloc"
)

// report prints one mechanism's table and audit.
func report(ctx context.Context, w io.Writer, m mechanism, in *instance, a *alloc.Allocation) error {
	p := in.p
	equal := make([]float64, len(p.Capacity.Count))
	for k, n := range p.Capacity.Count {
		equal[k] = n / float64(len(p.Tenants))
	}
	fmt.Fprintf(w, "\n== %s (%s) ==\n%s\n", m.name, m.paper, m.note)
	fmt.Fprintf(w, "%-8s %-34s", "tenant", "model")
	for _, t := range p.Capacity.Types {
		fmt.Fprintf(w, " %6s", t)
	}
	fmt.Fprintf(w, " %8s %7s\n", "steps/s", "vs 1/n")
	var total float64
	for i, u := range p.Tenants {
		fmt.Fprintf(w, "%-8s %-34s", u.ID, in.models[i])
		for _, x := range a.GPUs[i] {
			fmt.Fprintf(w, " %6.2f", x)
		}
		v := in.rates[i].Value(a.GPUs[i])
		rel := v / in.rates[i].Value(equal)
		total += rel
		fmt.Fprintf(w, " %8.2f %6.2fx\n", v, rel)
	}
	used := a.Used()
	var idle []string
	for k, n := range p.Capacity.Count {
		if left := n - used[k]; left > 1e-6 {
			idle = append(idle, fmt.Sprintf("%.2f %s", left, p.Capacity.Types[k]))
		}
	}
	fmt.Fprintf(w, "total efficiency %.3f (sum of 'vs 1/n'; %d for an equal split)", total, len(p.Tenants))
	if len(idle) > 0 {
		fmt.Fprintf(w, "; unallocated: %s", strings.Join(idle, ", "))
	}
	fmt.Fprintln(w)
	return audit(ctx, w, in, a)
}

// audit holds the tenants' allocation to the fairness axioms and prints
// each verdict with its margin and witness. A tenant's jobs use at most
// jobsPerTenant GPUs at once, the cap of the Pareto check.
func audit(ctx context.Context, w io.Writer, in *instance, a *alloc.Allocation) error {
	p := in.p
	vals := make([]alloc.Valuation, len(in.rates))
	caps := make([]float64, len(in.rates))
	for i, r := range in.rates {
		vals[i], caps[i] = r, jobsPerTenant
	}
	set := &alloc.AuditSettings{Pareto: &alloc.ParetoSettings{RowCap: caps}}
	r, err := alloc.Audit(ctx, a, p.Capacity, vals, alloc.OwnerWeights(p.Tenants), set)
	if err != nil {
		return err
	}
	name := func(i int) string { return string(p.Tenants[i].ID) }
	si := r.SharingIncentive
	fmt.Fprintf(w, "  sharing incentive  %-6s worst margin %+.3f (%s: %.3g of the %.3g steps/s an equal share gives)\n",
		verdict(si.Holds), clean(si.Margin[si.Worst]), name(si.Worst), si.Own[si.Worst], si.Share[si.Worst])
	ef := r.Envy
	fmt.Fprintf(w, "  envy-freeness      %-6s max envy %+.3f", verdict(ef.Holds), clean(ef.MaxEnvy))
	if !ef.Holds {
		fmt.Fprintf(w, " (%s would value %s's GPUs %.1f%% more than its own)", name(ef.Envier), name(ef.Envied), 100*ef.MaxEnvy)
	}
	fmt.Fprintln(w)
	if pe := r.Pareto; pe != nil {
		fmt.Fprintf(w, "  Pareto efficiency  %-6s", verdict(pe.Holds))
		if !pe.Holds {
			best := 0
			for i, g := range pe.Gains {
				if g > pe.Gains[best] {
					best = i
				}
			}
			fmt.Fprintf(w, " an allocation hurting no one gives %s %+.3g%%", name(best), 100*pe.Gains[best])
		}
		fmt.Fprintln(w)
	}
	return auditWithin(w, in, a, name)
}

// rateSpread is how far off every rate may be in the audit's last lines:
// profiling runs of one job on one GPU were seen to agree within 1% where
// the GPU is the bound and to spread up to 27% where the host is
// (docs/benchmarks/oef.md).
const rateSpread = 0.05

// auditWithin prints sharing incentive and envy-freeness for every rate
// within rateSpread of the tenants' (alloc.SharingIncentiveWithin,
// alloc.EnvyFreenessWithin): whether the verdicts survive rates measured
// that much off.
func auditWithin(w io.Writer, in *instance, a *alloc.Allocation, name func(int) string) error {
	p := in.p
	lo, hi := make([]alloc.Linear, len(in.rates)), make([]alloc.Linear, len(in.rates))
	for i, r := range in.rates {
		lo[i], hi[i] = make(alloc.Linear, len(r)), make(alloc.Linear, len(r))
		for k, x := range r {
			lo[i][k], hi[i][k] = x*(1-rateSpread), x*(1+rateSpread)
		}
	}
	weights := alloc.OwnerWeights(p.Tenants)
	si, err := alloc.SharingIncentiveWithin(a, p.Capacity, lo, hi, weights)
	if err != nil {
		return err
	}
	ef, err := alloc.EnvyFreenessWithin(a, lo, hi, weights)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %-19ssharing incentive %s (%s: %+.3f), envy-freeness %s (%s of %s: %+.3f)\n",
		fmt.Sprintf("rates %.0f%% off", 100*rateSpread), verdict(si.Holds), name(si.Worst), clean(si.Margin[si.Worst]), verdict(ef.Holds), name(ef.Envier), name(ef.Envied), clean(ef.MaxEnvy))
	return nil
}

// clean rounds margins within the axioms' tolerance to 0, so that -0.000
// does not read as a failure.
func clean(x float64) float64 {
	if math.Abs(x) <= alloc.AxiomTol {
		return 0
	}
	return x
}

func verdict(holds bool) string {
	if holds {
		return "holds"
	}
	return "FAILS"
}
