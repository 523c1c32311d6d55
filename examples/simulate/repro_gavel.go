package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
)

// Gavel's evaluation (OSDI'20, section 7), one experiment per claim; see
// docs/reproduction.md for the commands and the results.
func init() {
	register(experiment{"gavel-fig9", "Gavel Figure 9: LAS, heterogeneity-aware against agnostic, continuous-single trace", gavelLoad(false, 5.6, "gavel_fig9_")})
	register(experiment{"gavel-fig10", "Gavel Figure 10: LAS, heterogeneity-aware against agnostic, continuous-multiple trace", gavelLoad(true, 2.6, "gavel_fig10_")})
	register(experiment{"gavel-fig11", "Gavel Figure 11: finish-time fairness, aware against agnostic, continuous-multiple trace", gavelLoad(true, 2.6, "gavel_fig11_")})
	register(experiment{"gavel-space-sharing", "Gavel section 7.3: space sharing against none, continuous-single trace (-multi: multiple)", gavelSharing})
	register(experiment{"gavel-makespan", "Gavel section 7.3: makespan of static traces (-sizes jobs, all at time 0)", gavelMakespan})
	register(experiment{"gavel-fig15", "Gavel Figure 15: LAS over round lengths (-round-lengths) and against the ideal fluid allocation", gavelRounds})
}

// gavelLoad is loadSweep over Gavel's continuous-single (multi false) or
// continuous-multiple trace (or the one -multi asks for), with the CDFs
// drawn at the rate of the paper's claim (cdf, when among -rates) and its
// plots named prefix unless -plot-prefix says otherwise.
func gavelLoad(multi bool, cdf float64, prefix string) func(context.Context, *config, io.Writer) error {
	return func(ctx context.Context, cfg *config, w io.Writer) error {
		c := *cfg
		c.multi = multi || cfg.multi
		c.cdfRate = cdf
		c.plotPrefix = cmp.Or(c.plotPrefix, prefix)
		return loadSweep(ctx, &c, w)
	}
}

// gavelSharing is gavelLoad for space sharing: it also prints the share of
// the placements that were pairs.
func gavelSharing(ctx context.Context, cfg *config, w io.Writer) error {
	c := *cfg
	c.sharedTable = true
	return gavelLoad(false, 5.6, "gavel_ss_")(ctx, &c, w)
}

// gavelMakespan runs each mechanism on static traces (every job at time
// 0, Gavel's "static" trace) of cfg.sizes jobs, seeds 1..cfg.seeds, and
// prints the makespan: the time the last job finishes. Every job is
// measured (-measure does not apply).
func gavelMakespan(ctx context.Context, cfg *config, w io.Writer) error {
	all := *cfg
	all.measure = [2]int{}
	cfg = &all
	vs, err := mechanismVariants(cfg)
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
	fmt.Fprintf(w, "Static traces of Gavel-style jobs (multi-GPU: %v), all arriving at time 0, mean ± standard deviation over %d seeds,\non %d K80, %d P100 and %d V100 GPUs, %g-minute rounds\n",
		cfg.multi, cfg.seeds, cfg.cluster[0], cfg.cluster[1], cfg.cluster[2], cfg.round/60)
	names := make([]string, len(vs))
	span := make([][][2]float64, len(vs))
	for m, v := range vs {
		names[m] = v.name
		for _, n := range cfg.sizes {
			var hours []float64
			for seed := 1; seed <= cfg.seeds; seed++ {
				wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: int(n), Multi: cfg.multi}, rand.NewPCG(uint64(seed), 0))
				if err != nil {
					return err
				}
				res, err := v.run(ctx, &env{c: c, w: wl, round: cfg.round, tp: tp})
				if err != nil {
					return err
				}
				hours = append(hours, res.Summary().Makespan/3600)
			}
			span[m] = append(span[m], meanSD(hours))
		}
	}
	printSweep(w, "Makespan (hours)", "jobs", "%10.1f ± %5.1f", cfg.sizes, names, span)
	if cfg.plots == "" {
		return nil
	}
	path := filepath.Join(cfg.plots, cmp.Or(cfg.plotPrefix, "gavel_makespan_")+"makespan.png")
	if err := plotSweep(path, "Makespan of a static trace", "jobs", "makespan (hours)", names, cfg.sizes, means(span)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nplot: %s\n", path)
	return nil
}

// gavelRounds is Gavel's Figure 15: heterogeneity-aware LAS (max-min)
// realised by Gavel's mechanism with rounds of each of cfg.rounds, and the
// ideal baseline that runs every job exactly at its allocation
// (sim.Ideal), against the arrival rate.
func gavelRounds(ctx context.Context, cfg *config, w io.Writer) error {
	mechs, err := pick("max-min")
	if err != nil {
		return err
	}
	var vs []variant
	for _, l := range cfg.rounds {
		c := *cfg
		c.round = l
		vs = append(vs, variant{"max-min, " + strconv.FormatFloat(l/60, 'g', -1, 64) + " min", func(ctx context.Context, e *env) (*sim.Result, error) {
			e.round = l
			return simulate(ctx, &c, e, mechs[0], settings(&c, len(e.w.Jobs)))
		}})
	}
	vs = append(vs, variant{"ideal", func(ctx context.Context, e *env) (*sim.Result, error) {
		s := settings(cfg, len(e.w.Jobs))
		return sim.Ideal(ctx, e.w, e.c, alloc.MaxMin{}, s)
	}})
	c := *cfg
	c.plotPrefix = cmp.Or(c.plotPrefix, "gavel_fig15_")
	return sweep(ctx, &c, w, vs)
}
