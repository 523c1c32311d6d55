// Command simulate replays a trace of training jobs on a heterogeneous
// cluster under several mechanisms of gpufair and compares them by the
// metrics the papers report: average and tail job completion time (JCT),
// finish-time fairness rho (Themis' T_shared / T_isolated, its distribution
// and maximum), makespan, GPU time and utilisation.
//
// Jobs come from one of Gavel's traces (-trace) or are generated the way
// Gavel's simulator generates them (-jobs, -rate, -multi, -seed). The
// cluster is -cluster K80:P100:V100 GPUs on servers of -per-server GPUs;
// each -round seconds every mechanism decides who runs where (package sim).
// A fourth count, K80:P100:V100:H100, adds H100s on servers of
// -h100-per-server GPUs (8): jobs run there at the rates gpufair measured
// on one H100 (package data's Measured row), and at rates estimated where
// it has none (jobs of several GPUs; a gang spread over servers slowed as
// on a V100: sim.MeasuredRates), with no co-location on them (no pair was
// measured).
// It prints one line per mechanism, and on request writes every job's
// result as CSV (-csv) and plots the CDFs of JCT and rho (-plots), like
// Themis' Figures 9 and 10 and Gavel's Figure 9(b).
//
// Usage:
//
//	go run ./examples/simulate                       # 300 jobs, max-min vs agnostic
//	go run ./examples/simulate -jobs 5000 -rate 4 -measure 4000:5000 -csv jobs.csv -plots out/
//	go run ./examples/simulate -trace msr-seed0/6214e9.trace -mechanisms max-min,fifo
//	go run ./examples/simulate -list                 # every mechanism's name
//	go run ./examples/simulate -mechanisms all -jobs 200 -multi
//	go run ./examples/simulate -experiment load -plots docs/   # Gavel Figure 9 (docs/simulation.md)
//	go run ./examples/simulate -experiment load -cluster 36:36:36:12   # the same with 12 H100s added
//	go run ./examples/simulate -list-experiments     # the papers' evaluations (docs/reproduction.md)
//	go run ./examples/simulate -experiment themis-fig10 -jobs 85 -seeds 1 -mechanisms themis -themis-trace trace.csv -csv apps.csv
//
// For Themis' experiments, -csv writes each app's result, and
// -themis-trace every arbiter round, app by app (its rank, bid and
// grants), to see why an app was or was not served. -cpuprofile profiles
// the whole run. LPs are solved by the pure-Go backend unless the command
// is built with -tags clp (go run -tags clp ...), which made the numbers of
// docs/reproduction.md. A progress bar goes to stderr when it is a terminal
// (-progress=false turns it off).
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
)

// config is what the flags set.
type config struct {
	jobs       int
	rate       float64
	multi      bool
	seed       uint64
	trace      string
	mechanisms string
	cluster    []int
	perServer  int
	// h100PerServer is the GPUs of each H100 server (-cluster's fourth
	// count).
	h100PerServer int
	round         float64
	// profileNoise tells each mechanism every rate off by up to this
	// fraction (sim.ProfileNoise, seeded with seed); 0: the rates themselves.
	profileNoise float64
	measure      [2]int
	csv          string
	plots        string
	plotPrefix   string
	experiment   string
	rates        []float64 // -experiment load
	seeds        int       // -experiment load
	sizes        []float64 // jobs of each static trace, -experiment gavel-makespan
	rounds       []float64 // round lengths in seconds, -experiment gavel-fig15
	cdfRate      float64   // the rate of a sweep's CDF plots; 0: the last
	sharedTable  bool      // a sweep also prints the share of placements that were pairs
	oefRounds    int       // rounds of the driven OEF experiments; 0: oefRounds
	appScale     string    // Themis' app sizes (themisScale); "": the trace's
	// contentions are -experiment themis-fig14's; nil: 1, 2, 4.
	contentions []float64
	progress    io.Writer // nil: no bar
	timings     io.Writer // nil: no timings
	cpuProfile  string    // "": no profile
	// themisTracePath is -themis-trace's file; "": none.
	themisTracePath string
	// themisTrace, if not nil, gets a CSV line per app and Themis round
	// (traceThemis); runs counts the runs traced so far.
	themisTrace *csv.Writer
	runs        int
	list        bool
	// listExperiments prints the experiments instead of running one.
	listExperiments bool

	// resetInterval is stride.GavelSettings.ResetInterval of -experiment
	// gavel-fig12 and gavel-fig13; 0: f_mk counted from arrival.
	resetInterval float64
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err == nil {
		err = run(context.Background(), cfg, os.Stdout)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr *os.File) (*config, error) {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	fs.IntVar(&cfg.jobs, "jobs", 300, "number of generated jobs")
	fs.Float64Var(&cfg.rate, "rate", 3, "arrivals per hour of generated jobs (0: all at once)")
	fs.BoolVar(&cfg.multi, "multi", false, "generate multi-GPU jobs (Gavel's continuous-multiple trace)")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated jobs")
	fs.StringVar(&cfg.trace, "trace", "", "replay a Gavel trace instead: a name under data/gavel/traces (msr-seed0/6214e9.trace) or a file")
	fs.StringVar(&cfg.mechanisms, "mechanisms", "max-min,max-min-agnostic", "comma-separated mechanisms to compare, or all (see -list)")
	fs.BoolVar(&cfg.list, "list", false, "print every mechanism's name, one per line, and exit")
	timings := fs.Bool("timings", false, "print each run's wall-clock time on stderr")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	fs.StringVar(&cfg.themisTracePath, "themis-trace", "", "write every Themis arbiter round to this CSV file: per app, its rank, rho, invitation and GPUs granted by kind")
	cluster := fs.String("cluster", "36:36:36", "GPUs of each type, K80:P100:V100, or K80:P100:V100:H100 to add H100s (comparisons and -experiment load)")
	fs.IntVar(&cfg.perServer, "per-server", 4, "GPUs per server")
	fs.IntVar(&cfg.h100PerServer, "h100-per-server", 8, "GPUs per H100 server, with -cluster's fourth count (HGX H100 boards and AWS p5.48xlarge hold 8)")
	fs.Float64Var(&cfg.round, "round", 360, "round length in seconds")
	fs.Float64Var(&cfg.profileNoise, "profile-noise", 0, "tell the mechanisms each rate off by up to this fraction, drawn per job from -seed (comparisons and -experiment load); jobs run at their true rates")
	measure := fs.String("measure", "", "measure jobs FROM:TO of the arrival order only, and stop when they finish (Gavel measures 4000:5000)")
	fs.StringVar(&cfg.csv, "csv", "", "write per-job results to this CSV file")
	fs.StringVar(&cfg.plots, "plots", "", "write CDF plots (PNG) to this directory")
	fs.StringVar(&cfg.plotPrefix, "plot-prefix", "", "prefix of the plots' file names")
	fs.StringVar(&cfg.experiment, "experiment", "", "run one of the papers' evaluations instead (see -list-experiments and docs/reproduction.md)")
	fs.BoolVar(&cfg.listExperiments, "list-experiments", false, "print every experiment's name and what it reproduces, and exit")
	rates := fs.String("rates", "1,2,3,4,5,6", "arrival rates (jobs/hour) of -experiment load")
	fs.IntVar(&cfg.seeds, "seeds", 1, "seeds per point of a sweep (-experiment load and the papers' sweeps)")
	sizes := fs.String("sizes", "100,200,400", "jobs of each static trace of -experiment gavel-makespan")
	rounds := fs.String("round-lengths", "6,12,24,48", "round lengths in minutes of -experiment gavel-fig15")
	fs.StringVar(&cfg.appScale, "app-scale", "trace", "size of the apps of Themis' experiments: trace (section 2.2's: 50 to 100 jobs, 3.75-hour tasks) or small (4 to 24 jobs of an hour)")
	contentions := fs.String("contentions", "1,2,4", "contention levels of -experiment themis-fig14: the cluster divided by each (whole numbers)")
	fs.Float64Var(&cfg.resetInterval, "reset-interval", 0, "-experiment gavel-fig12 and gavel-fig13: count f_mk from the latest re-solve, resets at least this many seconds apart (stride.GavelSettings.ResetInterval; Gavel's is 1920); 0: from arrival")
	progress := fs.Bool("progress", isTerminal(stderr), "show a progress bar on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if cfg.cluster, err = ints(*cluster, 3, "-cluster"); err != nil {
		if cfg.cluster, err = ints(*cluster, 4, "-cluster"); err != nil {
			return nil, fmt.Errorf("-cluster %q: want K80:P100:V100 or K80:P100:V100:H100, each a non-negative integer", *cluster)
		}
	}
	if *measure != "" {
		m, err := ints(*measure, 2, "-measure")
		if err != nil {
			return nil, err
		}
		cfg.measure = [2]int{m[0], m[1]}
	}
	if cfg.rates, err = positives(*rates, "-rates"); err != nil {
		return nil, err
	}
	if cfg.contentions, err = positives(*contentions, "-contentions"); err != nil {
		return nil, err
	}
	if cfg.sizes, err = positives(*sizes, "-sizes"); err != nil {
		return nil, err
	}
	if cfg.rounds, err = positives(*rounds, "-round-lengths"); err != nil {
		return nil, err
	}
	for i := range cfg.rounds {
		cfg.rounds[i] *= 60
	}
	if !(cfg.profileNoise >= 0 && cfg.profileNoise < 1) {
		return nil, fmt.Errorf("-profile-noise %v: want a fraction in [0, 1)", cfg.profileNoise)
	}
	if cfg.seeds < 1 {
		return nil, fmt.Errorf("-seeds %d: want at least 1", cfg.seeds)
	}
	if *progress {
		cfg.progress = stderr
	}
	if *timings {
		cfg.timings = stderr
	}
	return cfg, nil
}

// positives parses a comma-separated list of positive numbers.
func positives(s, flagName string) ([]float64, error) {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s %q: %q is not a positive number", flagName, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

// ints parses n colon-separated non-negative integers.
func ints(s string, n int, flagName string) ([]int, error) {
	parts := strings.Split(s, ":")
	if len(parts) != n {
		return nil, fmt.Errorf("%s %q: want %d numbers separated by ':'", flagName, s, n)
	}
	out := make([]int, n)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%s %q: %q is not a non-negative integer", flagName, s, p)
		}
		out[i] = v
	}
	return out, nil
}

// run does what cfg says and prints the results to w.
func run(ctx context.Context, cfg *config, w io.Writer) (err error) {
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
		}()
	}
	if cfg.themisTracePath != "" {
		f, err := os.Create(cfg.themisTracePath)
		if err != nil {
			return err
		}
		cfg.themisTrace = csv.NewWriter(f)
		if err := cfg.themisTrace.Write(themisTraceHeader); err != nil {
			f.Close()
			return err
		}
		defer func() {
			cfg.themisTrace.Flush()
			err = errors.Join(err, cfg.themisTrace.Error(), f.Close())
		}()
	}
	if cfg.listExperiments {
		for _, n := range experimentNames() {
			fmt.Fprintf(w, "%-24s %s\n", n, experiments[n].about)
		}
		return nil
	}
	if cfg.list {
		for _, n := range names() {
			fmt.Fprintln(w, n)
		}
		return nil
	}
	if cfg.experiment == "" {
		return compare(ctx, cfg, w)
	}
	e, ok := experiments[cfg.experiment]
	if !ok {
		return fmt.Errorf("-experiment %q: unknown (known: %s)", cfg.experiment, strings.Join(experimentNames(), ", "))
	}
	if len(cfg.cluster) == 4 && cfg.experiment != "load" {
		// The papers' evaluations run on their own clusters of Gavel's
		// three types; H100s are a question of ours.
		return fmt.Errorf("-experiment %s: H100s (-cluster's fourth count) are for comparisons and -experiment load only", cfg.experiment)
	}
	return e.run(ctx, cfg, w)
}
