// Quickstart runs every mechanism of gpufair side by side on one small
// heterogeneous cluster shared by five tenants, with throughputs measured by
// Gavel's authors (data/gavel), and prints one table per mechanism: each
// tenant's GPUs of each type, its training rate, that rate relative to an
// equal 1/n share of every type, the total, and the fairness audit (sharing
// incentive, envy-freeness, Pareto efficiency) with its margins.
//
//	go run ./examples/quickstart      (or: make demo)
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// tenant is one user of the cluster, running jobsPerTenant single-GPU jobs
// of one model, each with hours of work left on a V100 (for the policies
// that look at remaining work). Their speedups over a K80 differ widely: CycleGAN runs
// 8.8× faster on a V100, A3C 2.1×, and the recommendation model gains most
// from a P100.
type tenant struct {
	id    alloc.TenantID
	model string
	hours float64
}

func tenants() []tenant {
	return []tenant{
		{"vision", "ResNet-50 (batch size 64)", 10},
		{"gan", "CycleGAN", 4},
		{"lang", "LM (batch size 20)", 20},
		{"rl", "A3C", 2},
		{"recsys", "Recommendation (batch size 8192)", 8},
	}
}

// jobsPerTenant is the number of jobs each tenant runs: 20 jobs for 12
// GPUs, so that they contend (a single-GPU job uses at most one GPU at a
// time, Gavel's rule).
const jobsPerTenant = 4

var (
	gpuTypes = []topology.GPUType{"K80", "P100", "V100"}
	gpuKeys  = []string{"k80", "p100", "v100"} // Gavel's names for them
	gpuCount = []float64{4, 4, 4}
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	in, err := newInstance()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A cluster of %v K80, %v P100 and %v V100 GPUs shared by %d tenants, each running %d single-GPU jobs;\n", gpuCount[0], gpuCount[1], gpuCount[2], len(in.p.Tenants), jobsPerTenant)
	fmt.Fprintln(w, "rates are training steps per second measured by Gavel's authors (data/gavel).")
	fmt.Fprintln(w, "Tables show each tenant's GPUs of each type (averaged over time), its rate, and that rate")
	fmt.Fprintln(w, "relative to an equal 1/n share of every type; the audit holds tenants to the fairness axioms.")
	for _, m := range mechanisms(in) {
		a, err := m.run(ctx, in)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if err := report(ctx, w, m, in, a); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return nil
}

// instance is the problem every mechanism solves, with what the tables show.
type instance struct {
	p      *alloc.Problem // one row per job
	models []string       // each tenant's model
	rates  []alloc.Linear // each tenant's rate per GPU of each type
	steps  []float64      // remaining steps of each job
}

// newInstance builds the tenants' problem from Gavel's measured
// throughputs: one user per tenant, jobsPerTenant jobs per user.
func newInstance() (*instance, error) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return nil, err
	}
	c, err := alloc.NewCapacity(gpuTypes, gpuCount)
	if err != nil {
		return nil, err
	}
	in := &instance{}
	var (
		users []alloc.Tenant
		jobs  []alloc.Job
		ids   []string
		rates [][]float64
	)
	for _, t := range tenants() {
		jt := data.JobType{Model: t.model, Scale: 1}
		row := make([]float64, len(gpuKeys))
		for k, g := range gpuKeys {
			r, ok := tp.Isolated(g, jt)
			if !ok {
				return nil, fmt.Errorf("no %s throughput for %v", g, jt)
			}
			row[k] = r
		}
		users = append(users, alloc.Tenant{ID: t.id, Weight: 1})
		for j := range jobsPerTenant {
			id := fmt.Sprintf("%s-%d", t.id, j)
			jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Owner: t.id, Gang: 1, Weight: 1})
			ids = append(ids, id)
			rates = append(rates, row)
			in.steps = append(in.steps, t.hours*3600*row[len(row)-1])
		}
		in.models = append(in.models, t.model)
		in.rates = append(in.rates, row)
	}
	m, err := speedup.New(ids, gpuTypes, rates)
	if err != nil {
		return nil, err
	}
	if in.p, err = alloc.NewProblem(c, users, jobs, m); err != nil {
		return nil, err
	}
	return in, nil
}
