package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
)

// compare runs every chosen mechanism on one workload and reports.
func compare(ctx context.Context, cfg *config, w io.Writer) error {
	mechs, err := pick(cfg.mechanisms)
	if err != nil {
		return err
	}
	wl, tp, desc, err := workload(cfg)
	if err != nil {
		return err
	}
	c, err := newSimCluster(cfg, tp)
	if err != nil {
		return err
	}
	if wl, err = c.workload(wl); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s on %s, %g-minute rounds\n", desc, c.about, cfg.round/60)
	var results []*sim.Result
	for _, m := range mechs {
		res, err := simulate(ctx, cfg, &env{c: c.c, w: wl, round: cfg.round, tp: tp}, m, settings(cfg, len(wl.Jobs)))
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	printSummaries(w, results)
	if cfg.csv != "" {
		if err := writeCSV(cfg.csv, results); err != nil {
			return err
		}
		fmt.Fprintf(w, "per-job results: %s\n", cfg.csv)
	}
	if cfg.plots != "" {
		files, err := plotCDFs(cfg.plots, cfg.plotPrefix, results)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(w, "plot: %s\n", f)
		}
	}
	return nil
}

// workload reads the trace or generates the jobs cfg asks for, and says
// what it is; tp is Gavel's throughputs, which it draws from.
func workload(cfg *config) (w *sim.Workload, tp *data.Throughputs, desc string, err error) {
	tp, err = data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return nil, nil, "", err
	}
	if cfg.trace == "" {
		kind := "single-GPU"
		if cfg.multi {
			kind = "single- and multi-GPU"
		}
		wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: cfg.jobs, Rate: cfg.rate, Multi: cfg.multi}, rand.NewPCG(cfg.seed, 0))
		return wl, tp, fmt.Sprintf("%d %s jobs drawn as Gavel does (seed %d, %g jobs/hour)", cfg.jobs, kind, cfg.seed, cfg.rate), err
	}
	var f fs.File
	if f, err = data.Gavel().Open("traces/" + cfg.trace); err != nil {
		if f, err = os.Open(cfg.trace); err != nil {
			return nil, nil, "", fmt.Errorf("-trace: %w", err)
		}
	}
	defer f.Close()
	wl, skipped, err := sim.ReadTrace(f, tp, &sim.TraceSettings{SkipUnmeasured: true})
	if err != nil {
		return nil, nil, "", err
	}
	return wl, tp, fmt.Sprintf("trace %s: %d jobs (%d without measured throughputs left out)", filepath.Base(cfg.trace), len(wl.Jobs), len(skipped)), nil
}

// settings returns the run settings cfg asks for, for n jobs.
func settings(cfg *config, n int) *sim.Settings {
	s := &sim.Settings{Round: cfg.round}
	if cfg.measure[1] > 0 {
		s.MeasureFrom, s.MeasureTo, s.StopWhenMeasured = cfg.measure[0], min(cfg.measure[1], n), true
	}
	if cfg.profileNoise > 0 {
		s.Profiled, _ = sim.ProfileNoise(cfg.profileNoise, cfg.seed) // the flag was checked
	}
	return s
}

// simulate runs one mechanism, with a progress bar if cfg has one, and
// records how long it took.
func simulate(ctx context.Context, cfg *config, e *env, m mechanism, s *sim.Settings) (*sim.Result, error) {
	if cfg.themisTrace != nil {
		cfg.runs++
		traced := *e
		traced.observe = traceThemis(cfg.themisTrace, fmt.Sprintf("%d:%s", cfg.runs, m.name))
		e = &traced
	}
	sched, err := m.make(e)
	if err != nil {
		return nil, err
	}
	if e.tp != nil {
		s.Colocated = sim.GavelColocation(e.tp) // for the jobs a space-sharing policy pairs
	}
	if cfg.progress != nil {
		b := &bar{w: cfg.progress, label: m.name}
		s.Progress = b.update
		defer b.done()
	}
	start := time.Now()
	res, err := sim.Run(ctx, e.w, e.c, sched, s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	if cfg.timings != nil {
		fmt.Fprintf(cfg.timings, "%s: %.1f s\n", m.name, time.Since(start).Seconds())
	}
	res.Scheduler = m.name // this command's name: two may share a scheduler type
	return res, nil
}

// printSummaries prints one line of metrics per result.
func printSummaries(w io.Writer, results []*sim.Result) {
	fmt.Fprintf(w, "\n%-28s %5s %5s | %8s %8s %8s | %7s %7s %6s | %9s %9s %5s | %8s %8s\n",
		"mechanism", "jobs", "done", "avg JCT", "p95 JCT", "p99 JCT", "avg rho", "max rho", "rho<=1", "makespan", "GPU time", "util", "restarts", "max")
	for _, r := range results {
		s := r.Summary()
		fmt.Fprintf(w, "%-28s %5d %5d | %7.1fh %7.1fh %7.1fh | %7.2f %7.2f %5.0f%% | %8.0fh %8.0fh %4.0f%% | %7.1f%% %7.0f%%\n",
			s.Scheduler, s.Measured, s.Finished, s.AvgJCT/3600, s.P95JCT/3600, s.P99JCT/3600,
			s.AvgRho, s.MaxRho, 100*s.SharingIncentive, s.Makespan/3600, s.GPUSeconds/3600, 100*s.Utilisation,
			100*s.RestartShare, 100*s.MaxRestartShare)
	}
	fmt.Fprintln(w, "restarts: the mean and largest share of a round's gangs that resumed from a checkpoint")
}

func writeCSV(path string, results []*sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := sim.WriteCSV(f, results...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
