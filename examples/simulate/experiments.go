package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
)

// An experiment is one of the papers' evaluations, run by -experiment
// name with the other flags as its settings. Each paper's experiments
// register themselves from their own file (repro_*.go), so that
// docs/reproduction.md can give one command per claim.
type experiment struct {
	name  string
	about string // what it reproduces, one line
	run   func(ctx context.Context, cfg *config, w io.Writer) error
}

// experiments holds every registered experiment by name.
var experiments = map[string]experiment{}

// register adds e; a name registered twice is a programming error.
func register(e experiment) {
	if _, dup := experiments[e.name]; dup {
		panic("simulate: experiment " + e.name + " registered twice")
	}
	experiments[e.name] = e
}

// experimentNames returns the experiments' names, sorted.
func experimentNames() []string {
	out := make([]string, 0, len(experiments))
	for n := range experiments {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func init() {
	register(experiment{"load", "Gavel Figure 9: average JCT against arrival rate (-rates, -seeds, -multi)", loadSweep})
	register(experiment{"placement", "Themis Figures 9 and 15: rho with placement-sensitive multi-GPU jobs", placement})
}

// loadSweep is Gavel's Figure 9: the average JCT of the measured jobs of a
// continuous trace (single-GPU jobs, or multi-GPU with -multi) against the
// arrival rate, for each mechanism, averaged over seeds 1..cfg.seeds. The
// rates are cfg.rates. It prints the mean and standard deviation of the
// average JCT and of the average rho (finish-time fairness, Gavel's
// Figure 11), and each mechanism's ratio to the first one named. With
// -plots it also draws the curves and, at the highest rate, the CDFs of JCT
// and rho (Figure 9(b)), as files named -plot-prefix (default load_).
func loadSweep(ctx context.Context, cfg *config, w io.Writer) error {
	vs, err := mechanismVariants(cfg)
	if err != nil {
		return err
	}
	return sweep(ctx, cfg, w, vs)
}

// A variant is one line of a sweep: a mechanism with its settings, or the
// ideal baseline.
type variant struct {
	name string
	run  func(ctx context.Context, e *env) (*sim.Result, error)
}

// mechanismVariants returns the mechanisms cfg names, each run with cfg's
// settings.
func mechanismVariants(cfg *config) ([]variant, error) {
	mechs, err := pick(cfg.mechanisms)
	if err != nil {
		return nil, err
	}
	vs := make([]variant, len(mechs))
	for i, m := range mechs {
		vs[i] = variant{m.name, func(ctx context.Context, e *env) (*sim.Result, error) {
			return simulate(ctx, cfg, e, m, settings(cfg, len(e.w.Jobs)))
		}}
	}
	return vs, nil
}

// sweep runs each variant on the workloads of cfg.rates × seeds
// 1..cfg.seeds and prints, per rate, the mean and standard deviation of the
// average JCT and average rho, with each variant's ratio to the first.
func sweep(ctx context.Context, cfg *config, w io.Writer, vs []variant) error {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return err
	}
	c, err := newSimCluster(cfg, tp)
	if err != nil {
		return err
	}
	measured := "All"
	if cfg.measure[1] > 0 {
		measured = fmt.Sprintf("Jobs %d to %d", cfg.measure[0], cfg.measure[1])
	}
	fmt.Fprintf(w, "%s of %d Gavel-style jobs (multi-GPU: %v), mean ± standard deviation over %d seeds,\non %s, %g-minute rounds\n",
		measured, cfg.jobs, cfg.multi, cfg.seeds, c.about, cfg.round/60)
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	// jct[v][i], rho[v][i]: mean and standard deviation over seeds.
	jct := make([][][2]float64, len(vs))
	rho := make([][][2]float64, len(vs))
	shared := make([][][2]float64, len(vs)) // with cfg.sharedTable, in percent
	var last []*sim.Result
	cdfAt := slices.Index(cfg.rates, cfg.cdfRate)
	if cdfAt < 0 {
		cdfAt = len(cfg.rates) - 1
	}
	for i, rate := range cfg.rates {
		for m, v := range vs {
			var js, rs, ss []float64
			for seed := 1; seed <= cfg.seeds; seed++ {
				wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: cfg.jobs, Rate: rate, Multi: cfg.multi}, rand.NewPCG(uint64(seed), 0))
				if err != nil {
					return err
				}
				if wl, err = c.workload(wl); err != nil {
					return err
				}
				res, err := v.run(ctx, &env{c: c.c, w: wl, round: cfg.round, tp: tp})
				if err != nil {
					return err
				}
				res.Scheduler = v.name
				s := res.Summary()
				js, rs, ss = append(js, s.AvgJCT/3600), append(rs, s.AvgRho), append(ss, 100*s.SharedShare)
				if seed == 1 && i == cdfAt {
					last = append(last, res)
				}
			}
			jct[m] = append(jct[m], meanSD(js))
			rho[m] = append(rho[m], meanSD(rs))
			shared[m] = append(shared[m], meanSD(ss))
		}
	}
	printSweep(w, "Average JCT (hours)", "jobs/hour", "%10.1f ± %5.1f", cfg.rates, names, jct)
	printSweep(w, "Average rho (finish-time fairness)", "jobs/hour", "%10.2f ± %5.2f", cfg.rates, names, rho)
	if cfg.sharedTable {
		printSweep(w, "Placements of two jobs sharing their GPUs (% of all placements, whole run)", "jobs/hour", "%10.1f ± %5.1f", cfg.rates, names, shared)
	}
	if cfg.plots == "" {
		return nil
	}
	prefix := cmp.Or(cfg.plotPrefix, "load_")
	path := filepath.Join(cfg.plots, prefix+"jct.png")
	if err := plotSweep(path, "Average JCT against load", "input job rate (jobs/hour)", "average JCT (hours)", names, cfg.rates, means(jct)); err != nil {
		return err
	}
	files, err := plotCDFs(cfg.plots, fmt.Sprintf("%s%g_", prefix, cfg.rates[cdfAt]), last)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nplots: %s %v\n", path, files)
	return nil
}

// means returns the means of a sweep's (mean, sd) pairs.
func means(v [][][2]float64) [][]float64 {
	out := make([][]float64, len(v))
	for m := range v {
		for _, x := range v[m] {
			out[m] = append(out[m], x[0])
		}
	}
	return out
}

// meanSD returns the mean and the (population) standard deviation of v.
func meanSD(v []float64) [2]float64 {
	var sum, sq float64
	for _, x := range v {
		sum += x
		sq += x * x
	}
	n := float64(len(v))
	mean := sum / n
	return [2]float64{mean, math.Sqrt(math.Max(sq/n-mean*mean, 0))}
}

// printSweep prints one table of a sweep: a row per rate, a column per
// mechanism (mean ± sd, in format), then each mechanism's mean over the
// first mechanism's ("-" where the first's is 0).
func printSweep(w io.Writer, title, xLabel, format string, x []float64, names []string, v [][][2]float64) {
	fmt.Fprintf(w, "\n%s\n%-10s", title, xLabel)
	for _, n := range names {
		fmt.Fprintf(w, " %18s", n)
	}
	for _, n := range names[1:] {
		fmt.Fprintf(w, " %12s", n+"/"+names[0])
	}
	fmt.Fprintln(w)
	for i, xi := range x {
		fmt.Fprintf(w, "%-10g", xi)
		for m := range names {
			fmt.Fprintf(w, " "+format, v[m][i][0], v[m][i][1])
		}
		for m := range names[1:] {
			if v[0][i][0] == 0 {
				fmt.Fprintf(w, " %12s", "-") // no ratio to nothing
				continue
			}
			fmt.Fprintf(w, " %12.2f", v[m+1][i][0]/v[0][i][0])
		}
		fmt.Fprintln(w)
	}
}

// placement is the comparison of Themis' Figures 9 and 15: the distribution
// and maximum of rho under max-min (aware and agnostic) and Themis'
// auction, on a workload with multi-GPU jobs whose throughput drops when
// their GPUs span servers (Gavel's unconsolidated measurements). It is
// compare with multi-GPU jobs, and its plots are named placement_*.
func placement(ctx context.Context, cfg *config, w io.Writer) error {
	c := *cfg
	c.multi = true
	c.plotPrefix = "placement_"
	return compare(ctx, &c, w)
}
