package main

import (
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
// rates are cfg.rates. With -plots it also draws the curves and, at the
// highest rate, the CDFs of JCT and rho (Figure 9(b)).
func loadSweep(ctx context.Context, cfg *config, w io.Writer) error {
	mechs, err := pick(cfg.mechanisms)
	if err != nil {
		return err
	}
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return err
	}
	c, err := sim.NewCluster(sim.GavelTypes(), cfg.cluster, cfg.perServer)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Average JCT (hours) of jobs %d to %d of %d Gavel-style jobs (multi-GPU: %v), mean of %d seeds,\non %d K80, %d P100 and %d V100 GPUs, %g-minute rounds\n\n",
		cfg.measure[0], cfg.measure[1], cfg.jobs, cfg.multi, cfg.seeds, cfg.cluster[0], cfg.cluster[1], cfg.cluster[2], cfg.round/60)
	fmt.Fprintf(w, "%-10s", "jobs/hour")
	for _, m := range mechs {
		fmt.Fprintf(w, " %18s", m.name)
	}
	fmt.Fprintln(w)
	names := make([]string, len(mechs))
	avg := make([][]float64, len(mechs))
	var last []*sim.Result
	for i, rate := range cfg.rates {
		fmt.Fprintf(w, "%-10g", rate)
		last = last[:0]
		for m, mech := range mechs {
			names[m] = mech.name
			var sum, sq float64
			for seed := 1; seed <= cfg.seeds; seed++ {
				wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: cfg.jobs, Rate: rate, Multi: cfg.multi}, rand.NewPCG(uint64(seed), 0))
				if err != nil {
					return err
				}
				res, err := simulate(ctx, cfg, &env{c: c, w: wl, round: cfg.round, tp: tp}, mech, settings(cfg, cfg.jobs))
				if err != nil {
					return err
				}
				j := res.Summary().AvgJCT / 3600
				sum += j
				sq += j * j
				if seed == 1 && i == len(cfg.rates)-1 {
					last = append(last, res)
				}
			}
			n := float64(cfg.seeds)
			mean := sum / n
			avg[m] = append(avg[m], mean)
			fmt.Fprintf(w, " %10.1f ± %5.1f", mean, math.Sqrt(math.Max(sq/n-mean*mean, 0)))
		}
		fmt.Fprintln(w)
	}
	if cfg.plots == "" {
		return nil
	}
	path := filepath.Join(cfg.plots, "load_jct.png")
	if err := plotLoad(path, names, cfg.rates, avg); err != nil {
		return err
	}
	files, err := plotCDFs(cfg.plots, fmt.Sprintf("load_%g_", cfg.rates[len(cfg.rates)-1]), last)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nplots: %s %v\n", path, files)
	return nil
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
