// Quickstart runs every mechanism of gpufair side by side on one small
// heterogeneous cluster shared by five tenants, with throughputs measured by
// Gavel's authors (data/gavel), and prints one table per mechanism: each
// tenant's GPUs of each type, its training rate, that rate relative to an
// equal 1/n share of every type, the total, and the fairness audit (sharing
// incentive, envy-freeness, Pareto efficiency) with its margins, then the
// first two again for every rate up to 5% off the measured one.
//
//	go run ./examples/quickstart      (or: make demo)
//	go run ./examples/quickstart -h100 4
//
// -h100 n adds n H100 GPUs, with the rates gpufair measured on one for the
// same job types (package data's Measured row: Gavel's models rebuilt in
// PyTorch on random inputs, so comparable with Gavel's columns in model and
// batch but not in every detail; docs/benchmarks/gpu.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

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

// v100 is the index of the V100 among the types: remaining work is counted
// in hours on one.
const v100 = 2

func main() {
	h100 := flag.Int("h100", 0, "add this many H100 GPUs, with the rates measured on one (data.Measured)")
	flag.Parse()
	if *h100 < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: quickstart [-h100 n]")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Stdout, *h100); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer, h100 int) error {
	in, err := newInstance(h100)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A cluster of %v K80, %v P100 and %v V100 GPUs", gpuCount[0], gpuCount[1], gpuCount[2])
	if h100 > 0 {
		fmt.Fprintf(w, " and %d H100s", h100)
	}
	fmt.Fprintf(w, " shared by %d tenants, each running %d single-GPU jobs;\n", len(in.p.Tenants), jobsPerTenant)
	fmt.Fprintln(w, "rates are training steps per second measured by Gavel's authors (data/gavel).")
	if h100 > 0 {
		fmt.Fprintln(w, "H100 rates were measured by gpufair on one H100 with the same models rebuilt in PyTorch")
		fmt.Fprintln(w, "(data/measured/h100.json): comparable in model and batch, not in every detail.")
	}
	fmt.Fprintln(w, "Tables show each tenant's GPUs of each type (averaged over time), its rate, and that rate")
	fmt.Fprintln(w, "relative to an equal 1/n share of every type; the audit holds tenants to the fairness axioms,")
	fmt.Fprintln(w, "at the rates given and at every rate up to 5% off them, as repeated profiling runs may be.")
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
// throughputs, and with h100 > 0 that many H100s with gpufair's measured
// rates: one user per tenant, jobsPerTenant jobs per user.
func newInstance(h100 int) (*instance, error) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return nil, err
	}
	types, count := gpuTypes, gpuCount
	var h100Row *data.MeasuredRow
	if h100 > 0 {
		if h100Row, err = data.LoadMeasured(data.Measured(), "h100.json"); err != nil {
			return nil, err
		}
		types = append(slices.Clone(types), "H100")
		count = append(slices.Clone(count), float64(h100))
	}
	c, err := alloc.NewCapacity(types, count)
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
		row := make([]float64, len(gpuKeys), len(types))
		for k, g := range gpuKeys {
			r, ok := tp.Isolated(g, jt)
			if !ok {
				return nil, fmt.Errorf("no %s throughput for %v", g, jt)
			}
			row[k] = r
		}
		if h100Row != nil {
			r, ok := h100Row.Rate(t.model)
			if !ok {
				return nil, fmt.Errorf("no measured H100 rate for %s", t.model)
			}
			row = append(row, r)
		}
		users = append(users, alloc.Tenant{ID: t.id, Weight: 1})
		for j := range jobsPerTenant {
			id := fmt.Sprintf("%s-%d", t.id, j)
			jobs = append(jobs, alloc.Job{ID: alloc.JobID(id), Owner: t.id, Gang: 1, Weight: 1})
			ids = append(ids, id)
			rates = append(rates, row)
			in.steps = append(in.steps, t.hours*3600*row[v100])
		}
		in.models = append(in.models, t.model)
		in.rates = append(in.rates, row)
	}
	m, err := speedup.New(ids, types, rates)
	if err != nil {
		return nil, err
	}
	if in.p, err = alloc.NewProblem(c, users, jobs, m); err != nil {
		return nil, err
	}
	return in, nil
}
