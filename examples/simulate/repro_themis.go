package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/ftf"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
)

// Themis' evaluation (NSDI'20, section 6), one experiment per figure; see
// docs/reproduction.md for the commands and the results. -jobs is the
// number of apps.
func init() {
	register(experiment{"themis-fig9", "Themis Figures 9 and 11: apps' rho and GPU time, workload 1 (Hyperdrive apps)", themisMacro(1)})
	register(experiment{"themis-fig10", "Themis Figures 10 and 12: apps' rho and GPU time, workload 2 (successive halving)", themisMacro(2)})
	register(experiment{"themis-fig14", "Themis Figure 14: max rho at 1x, 2x and 4x contention, workload 1", themisContention})
	register(experiment{"themis-fig15", "Themis Figures 15 and 16: max rho and GPU time against the share of network-intensive apps", themisPlacement})
	register(experiment{"themis-fig19", "Themis Figure 19: Themis' max rho and GPU time against f and the lease", themisSensitivity})
}

// themisCluster is the simulator's cluster of Themis' footnote 6, scaled
// by 1/div: 16 8-GPU machines, 6 4-GPU machines and 16 1-GPU machines (168
// GPUs; the text says 256), racks of 4 machines, one GPU type.
func themisCluster(div int) topology.Cluster {
	var c topology.Cluster
	for _, g := range []struct{ n, gpus int }{{16, 8}, {6, 4}, {16, 1}} {
		for i := range g.n / div {
			c.Servers = append(c.Servers, topology.Server{Name: fmt.Sprintf("m%d-%d", g.gpus, i), Rack: fmt.Sprintf("r%d-%d", g.gpus, i/4), Type: "k80", GPUs: g.gpus})
		}
	}
	return c
}

// Placement sensitivity of the models (Table 4's mix: CV 10%, NLP 60%,
// speech 30%): the slowdown when a job's GPUs span machines. A network-
// intensive model runs 1.29x slower across machines (Table 1: VGG16, 103.6
// against 80.4 images/s), a compute-intensive one as fast (Inception-v3).
const (
	netSlowdown     = 103.6 / 80.4
	computeSlowdown = 1.0
)

// appLoad is the offered load the app arrivals aim at: the apps' work
// over the cluster's GPU time until the last arrival. Themis' trace is
// "heavily contended" (section 2.2).
const appLoad = 1.2

// appScale sizes the apps of Themis' workloads.
type appScale struct {
	jobsLo, jobsHi int     // jobs of a workload-1 app with several, uniform
	hours          float64 // median time of a workload-1 job on its GPUs, and of a workload-2 trial through every phase on one GPU
	trials         [2]int  // the trials of a workload-2 app, one or the other
}

// Themis' app sizes: the trace's (section 2.2: 85 apps, 10% of one job and
// the others up to 100 jobs with a median of 75; the median task runs 3.75
// GPU hours, and the median app 11.5 GPU days), and the small apps of the
// earlier runs (4 to 24 jobs of a 1-hour median; 8 or 16 trials).
var (
	traceApps = appScale{jobsLo: 50, jobsHi: 100, hours: 3.75, trials: [2]int{32, 64}}
	smallApps = appScale{jobsLo: 4, jobsHi: 24, hours: 1, trials: [2]int{8, 16}}
)

// themisScale returns the app sizes -app-scale names: "small", or the
// trace's ("trace" or empty).
func themisScale(name string) (appScale, error) {
	switch name {
	case "", "trace":
		return traceApps, nil
	case "small":
		return smallApps, nil
	}
	return appScale{}, fmt.Errorf("-app-scale %q: want trace or small", name)
}

// themisWorkload draws n apps of workload kind (1: Hyperdrive apps with
// performance-curve stopping; 2: successive halving) of sizes sc, each app
// network-intensive with probability net (negative: Table 4's mix, CV
// only), on a cluster of gpus GPUs. Arrivals are Poisson at the rate that
// makes the apps' work appLoad times the cluster's GPU time until the last
// arrival.
//
// Workload 1, from sections 2.2 and 6.1: 10% of apps have one job, the
// others a uniform sc.jobsLo to sc.jobsHi (the trace: 50 to 100, median 75);
// every job uses 1 or 2 GPUs (elastic: Themis' job_demand_max), and runs for
// a lognormal time on its GPUs (median sc.hours, the trace's median task
// of 3.75 hours; σ = 0.8); performance-curve stopping ends each job but one
// at a uniform 20% to 100% of its iterations. The trace's median app is
// then about 75 × 1.5 GPUs × 3.75 h × 0.6 ≈ 10 GPU days (11.5 in section
// 2.2).
//
// Workload 2: successive halving over n = sc.trials trials (32 or 64 at
// the trace's scale: 63 or 127 jobs an app, more GPUs per job than
// workload 1, as section 6.1 says), log2(n)+1 phases of I iterations each
// (section 4.3.2: "for the same number of iterations I"; a trial through
// every phase runs a lognormal sc.hours on one GPU, σ = 0.5), phase i's
// n/2^i trials each one elastic job of up to 2^i GPUs, so that every
// phase's demand is n GPUs. A barrier separates the phases
// (sim.Job.Phase): phase i+1's trials arrive when the last of phase i's
// finishes.
func themisWorkload(kind, n int, net float64, gpus int, seed uint64, sc appScale) *sim.Workload {
	r := rand.New(rand.NewPCG(seed, 15))
	w := &sim.Workload{Types: []topology.GPUType{"k80"}}
	var apps [][]sim.Job
	work := 0.0
	for a := range n {
		owner := alloc.TenantID(fmt.Sprintf("app%03d", a))
		isNet := r.Float64() < net
		if net < 0 {
			isNet = r.Float64() < 0.1
		}
		slow := computeSlowdown
		if isNet {
			slow = netSlowdown
		}
		job := func(i, gang int, steps float64) sim.Job {
			// One step per second on one GPU: Rates = gang steps/s.
			rate := float64(gang)
			return sim.Job{Job: alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-%02d", owner, i)), Owner: owner, Gang: gang, Rates: []float64{rate}, Elastic: true},
				Kind: map[bool]string{true: "network", false: "compute"}[isNet], Steps: steps, Spread: []float64{rate / slow}}
		}
		var jobs []sim.Job
		switch kind {
		case 1:
			k := 1
			if r.Float64() >= 0.1 {
				k = sc.jobsLo + r.IntN(sc.jobsHi-sc.jobsLo+1)
			}
			for i := range k {
				gang := 1 + r.IntN(2)
				hours := sc.hours * math.Exp(r.NormFloat64()*0.8) // on its GPUs
				frac := 1.0
				if i > 0 {
					frac = 0.2 + 0.8*r.Float64()
				}
				jobs = append(jobs, job(i, gang, hours*3600*frac*float64(gang)))
			}
		default:
			trials := sc.trials[r.IntN(2)]
			phases := int(math.Log2(float64(trials))) + 1
			iters := sc.hours * 3600 * math.Exp(r.NormFloat64()*0.5) / float64(phases) // I, one GPU
			i := 0
			for phase := range phases {
				for range trials >> phase { // the trials that reach this phase
					j := job(i, 1<<phase, iters)
					j.Phase = phase
					jobs = append(jobs, j)
					i++
				}
			}
		}
		for _, j := range jobs {
			work += j.Steps * float64(j.Gang) / j.Rates[0]
		}
		apps = append(apps, jobs)
	}
	// Poisson arrivals over span: work = appLoad · gpus · span.
	span := work / (appLoad * float64(gpus))
	t := 0.0
	for _, jobs := range apps {
		for i := range jobs {
			jobs[i].Arrival = t
		}
		w.Jobs = append(w.Jobs, jobs...)
		t += r.ExpFloat64() * span / float64(n)
	}
	return w
}

// themisRun runs the mechanisms named by cfg on workload w and cluster c,
// and returns their results in that order.
func themisRun(ctx context.Context, cfg *config, w *sim.Workload, c topology.Cluster) ([]*sim.Result, error) {
	mechs, err := pick(cfg.mechanisms)
	if err != nil {
		return nil, err
	}
	var out []*sim.Result
	for _, m := range mechs {
		res, err := simulate(ctx, cfg, &env{c: c, w: w, round: cfg.round}, m, &sim.Settings{Round: cfg.round})
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// themisPrefix returns the prefix of an experiment's plot files: -plot-prefix,
// or else def.
func themisPrefix(cfg *config, def string) string {
	if cfg.plotPrefix != "" {
		return cfg.plotPrefix
	}
	return def
}

// gpuHours returns the GPU time the apps held, in hours.
func gpuHours(r *sim.Result) float64 {
	s := 0.0
	for _, a := range r.Apps {
		s += a.GPUSeconds
	}
	return s / 3600
}

// themisMacro is Figures 9-12 for workload kind: the apps' rho (its CDF
// and maximum) and the GPU time each mechanism takes for the same work,
// for each of cfg.seeds seeds, then their means and standard deviations.
func themisMacro(kind int) func(context.Context, *config, io.Writer) error {
	return func(ctx context.Context, cfg *config, w io.Writer) error {
		sc, err := themisScale(cfg.appScale)
		if err != nil {
			return err
		}
		c := themisCluster(1)
		gpus := len(c.AllGPUs())
		var all [][]*sim.Result // by seed
		for seed := cfg.seed; seed < cfg.seed+uint64(cfg.seeds); seed++ {
			wl := themisWorkload(kind, cfg.jobs, -1, gpus, seed, sc)
			fmt.Fprintf(w, "Workload %d: %d apps, %d jobs (seed %d) on %d GPUs (%d machines), %g-minute rounds\n\n",
				kind, cfg.jobs, len(wl.Jobs), seed, gpus, len(c.Servers), cfg.round/60)
			res, err := themisRun(ctx, cfg, wl, c)
			if err != nil {
				return err
			}
			themisTable(w, res)
			all = append(all, res)
		}
		if len(all) > 1 {
			themisSeedSummary(w, all)
		}
		if err := appCSV(cfg, w, all); err != nil {
			return err
		}
		if cfg.plots == "" {
			return nil
		}
		pooled := slices.Clone(all[0])
		for m := range pooled {
			r := *pooled[m]
			for _, res := range all[1:] {
				r.Apps = append(slices.Clip(r.Apps), res[m].Apps...)
			}
			pooled[m] = &r
		}
		path := filepath.Join(cfg.plots, themisPrefix(cfg, fmt.Sprintf("themis_fig%d_", 8+kind))+"rho_cdf.png")
		title := fmt.Sprintf("Finish-time fairness of apps, workload %d", kind)
		if len(all) > 1 {
			title += fmt.Sprintf(" (%d seeds)", len(all))
		}
		if err := plotAppRho(path, title, pooled); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nplot: %s\n", path)
		return nil
	}
}

// themisTable prints one seed's results: a row per mechanism, then each
// baseline's max rho and GPU time over Themis'.
func themisTable(w io.Writer, res []*sim.Result) {
	fmt.Fprintf(w, "%-22s %5s %9s %8s %8s %8s %9s %10s\n", "mechanism", "apps", "avg JCT", "avg rho", "p95 rho", "max rho", "rho<=1", "GPU hours")
	for _, r := range res {
		s := r.AppSummary()
		fmt.Fprintf(w, "%-22s %5d %8.1fh %8.2f %8.2f %8.2f %8.0f%% %10.0f\n", r.Scheduler, s.Finished, s.AvgJCT/3600, s.AvgRho, s.P95Rho, s.MaxRho, 100*s.SharingIncentive, gpuHours(r))
	}
	if i := slices.IndexFunc(res, func(r *sim.Result) bool { return r.Scheduler == "themis" }); i >= 0 {
		th := res[i].AppSummary()
		fmt.Fprintln(w, "\nmax rho of each baseline over Themis' (the paper: 2.2x to 3.25x); GPU time over Themis'")
		for _, r := range res {
			if r.Scheduler != "themis" {
				fmt.Fprintf(w, "%-22s %6.2fx %6.2fx\n", r.Scheduler, r.AppSummary().MaxRho/th.MaxRho, gpuHours(r)/gpuHours(res[i]))
			}
		}
	}
	fmt.Fprintln(w)
}

// themisSeedSummary prints, per mechanism, the mean ± standard deviation
// over seeds of the average JCT, the maximum rho, the GPU time, and the
// maximum rho over Themis' of the same seed.
func themisSeedSummary(w io.Writer, all [][]*sim.Result) {
	th := slices.IndexFunc(all[0], func(r *sim.Result) bool { return r.Scheduler == "themis" })
	fmt.Fprintf(w, "Mean ± standard deviation over %d seeds\n%-22s %15s %15s %15s %17s\n", len(all), "mechanism", "avg JCT (h)", "max rho", "GPU hours", "max rho/Themis'")
	for m := range all[0] {
		var jct, rho, hours, ratio []float64
		for _, res := range all {
			s := res[m].AppSummary()
			jct, rho, hours = append(jct, s.AvgJCT/3600), append(rho, s.MaxRho), append(hours, gpuHours(res[m]))
			if th >= 0 {
				ratio = append(ratio, s.MaxRho/res[th].AppSummary().MaxRho)
			}
		}
		fmt.Fprintf(w, "%-22s", all[0][m].Scheduler)
		for _, v := range [][]float64{jct, rho, hours} {
			ms := meanSD(v)
			fmt.Fprintf(w, " %7.2f ± %5.2f", ms[0], ms[1])
		}
		if th >= 0 {
			ms := meanSD(ratio)
			fmt.Fprintf(w, " %8.2fx ± %4.2f", ms[0], ms[1])
		}
		fmt.Fprintln(w)
	}
}

// plotAppRho draws the CDF of the apps' rho per result.
func plotAppRho(path, title string, res []*sim.Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "rho (log scale)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = doublingTicks{}
	p.Y.Label.Text = "fraction of apps"
	p.Legend.Top, p.Legend.Left = false, false
	var lines []any
	for _, r := range res {
		var v []float64
		for _, a := range r.Apps {
			if a.Rho > 0 {
				v = append(v, a.Rho)
			}
		}
		lines = append(lines, r.Scheduler, cdf(v))
	}
	if err := plotutil.AddLines(p, lines...); err != nil {
		return err
	}
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// themisPoints runs a sweep: for each x, a workload and cluster, and the
// mechanisms' max rho and GPU hours, averaged over cfg.seeds seeds.
func themisPoints(ctx context.Context, cfg *config, w io.Writer, title, xLabel string, x []float64,
	setup func(x float64, seed uint64) (*sim.Workload, topology.Cluster), plotPrefix string) error {
	if _, err := themisScale(cfg.appScale); err != nil {
		return err
	}
	mechs, err := pick(cfg.mechanisms)
	if err != nil {
		return err
	}
	names := make([]string, len(mechs))
	for m := range mechs {
		names[m] = mechs[m].name
	}
	rho := make([][]float64, len(mechs))
	hours := make([][]float64, len(mechs))
	for _, v := range x {
		sumR, sumH := make([]float64, len(mechs)), make([]float64, len(mechs))
		for seed := 1; seed <= cfg.seeds; seed++ {
			wl, c := setup(v, cfg.seed+uint64(seed)-1)
			res, err := themisRun(ctx, cfg, wl, c)
			if err != nil {
				return err
			}
			for m, r := range res {
				sumR[m] += r.AppSummary().MaxRho
				sumH[m] += gpuHours(r)
			}
		}
		for m := range mechs {
			rho[m] = append(rho[m], sumR[m]/float64(cfg.seeds))
			hours[m] = append(hours[m], sumH[m]/float64(cfg.seeds))
		}
	}
	for _, t := range []struct {
		what string
		v    [][]float64
	}{{"max rho", rho}, {"GPU hours", hours}} {
		fmt.Fprintf(w, "%s: %s (mean of %d seeds)\n%-12s", title, t.what, cfg.seeds, xLabel)
		for _, n := range names {
			fmt.Fprintf(w, " %12s", n)
		}
		fmt.Fprintln(w)
		for i, v := range x {
			fmt.Fprintf(w, "%-12g", v)
			for m := range names {
				fmt.Fprintf(w, " %12.4g", t.v[m][i])
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	if cfg.plots == "" {
		return nil
	}
	for _, p := range []struct {
		file, y string
		v       [][]float64
	}{{"max_rho.png", "max rho over apps", rho}, {"gpu_hours.png", "GPU hours", hours}} {
		path := filepath.Join(cfg.plots, themisPrefix(cfg, plotPrefix)+p.file)
		if err := os.MkdirAll(cfg.plots, 0o755); err != nil {
			return err
		}
		if err := plotSweep(path, title, xLabel, p.y, names, x, p.v); err != nil {
			return err
		}
		fmt.Fprintf(w, "plot: %s\n", path)
	}
	return nil
}

// themisContention is Figure 14: workload 1 on the whole cluster, half of
// it and a quarter of it (contention 1x, 2x, 4x; -contentions picks them:
// the cluster's machines of each kind divided by each).
func themisContention(ctx context.Context, cfg *config, w io.Writer) error {
	full := len(themisCluster(1).AllGPUs())
	sc, _ := themisScale(cfg.appScale) // checked by themisPoints
	x := cfg.contentions
	if x == nil {
		x = []float64{1, 2, 4}
	}
	for _, v := range x {
		if v != math.Trunc(v) || v > 16 {
			return fmt.Errorf("-contentions: %g is not a whole number from 1 to 16", v)
		}
	}
	return themisPoints(ctx, cfg, w, "Themis Figure 14, workload 1", "contention", x,
		func(x float64, seed uint64) (*sim.Workload, topology.Cluster) {
			return themisWorkload(1, cfg.jobs, -1, full, seed, sc), themisCluster(int(x))
		}, "themis_fig14_")
}

// themisPlacement is Figures 15 and 16: workload 2 with 0% to 100% of its
// apps network-intensive.
func themisPlacement(ctx context.Context, cfg *config, w io.Writer) error {
	c := themisCluster(1)
	sc, _ := themisScale(cfg.appScale) // checked by themisPoints
	return themisPoints(ctx, cfg, w, "Themis Figures 15-16, workload 2", "network %", []float64{0, 20, 40, 60, 80, 100},
		func(x float64, seed uint64) (*sim.Workload, topology.Cluster) {
			return themisWorkload(2, cfg.jobs, x/100, len(c.AllGPUs()), seed, sc), c
		}, "themis_fig15_")
}

// themisSensitivity is Figure 19: Themis alone on workload 1 for each f,
// one line per lease (-mechanisms is ignored), on the whole cluster as in
// the paper, or with small apps on half of it (2x contention): with small
// apps on the whole cluster every f gives the same maximum.
func themisSensitivity(ctx context.Context, cfg *config, w io.Writer) error {
	sc, err := themisScale(cfg.appScale)
	if err != nil {
		return err
	}
	div, where := 1, "the whole cluster"
	if sc == smallApps {
		div, where = 2, "half the cluster"
	}
	c := themisCluster(div)
	fs := []float64{0, 0.2, 0.4, 0.6, 0.8, 1}
	leases := []float64{5, 10, 20} // minutes
	var names []string
	rho := make([][]float64, len(leases))
	hours := make([][]float64, len(leases))
	bySeed := make([][]*sim.Result, cfg.seeds) // for -csv
	for l, lease := range leases {
		names = append(names, fmt.Sprintf("lease %g min", lease))
		for _, f := range fs {
			var sr, sh float64
			for seed := 1; seed <= cfg.seeds; seed++ {
				wl := themisWorkload(1, cfg.jobs, -1, len(themisCluster(1).AllGPUs()), cfg.seed+uint64(seed)-1, sc)
				m := themisWith(fmt.Sprintf("themis f=%g lease=%g", f, lease), f, lease)
				round := min(cfg.round, lease*60)
				res, err := simulate(ctx, cfg, &env{c: c, w: wl, round: round}, m, &sim.Settings{Round: round})
				if err != nil {
					return err
				}
				sr += res.AppSummary().MaxRho
				sh += gpuHours(res)
				if cfg.csv != "" {
					bySeed[seed-1] = append(bySeed[seed-1], res)
				}
			}
			rho[l] = append(rho[l], sr/float64(cfg.seeds))
			hours[l] = append(hours[l], sh/float64(cfg.seeds))
		}
	}
	for _, t := range []struct {
		what string
		v    [][]float64
	}{{"max rho", rho}, {"GPU hours", hours}} {
		fmt.Fprintf(w, "Themis Figure 19, workload 1 on %s: %s (mean of %d seeds)\n%-6s", where, t.what, cfg.seeds, "f")
		for _, n := range names {
			fmt.Fprintf(w, " %14s", n)
		}
		fmt.Fprintln(w)
		for i, f := range fs {
			fmt.Fprintf(w, "%-6g", f)
			for l := range names {
				fmt.Fprintf(w, " %14.4g", t.v[l][i])
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
	if err := appCSV(cfg, w, bySeed); err != nil {
		return err
	}
	if cfg.plots == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.plots, 0o755); err != nil {
		return err
	}
	for _, p := range []struct {
		file, y string
		v       [][]float64
	}{{"max_rho.png", "max rho over apps", rho}, {"gpu_hours.png", "GPU hours", hours}} {
		path := filepath.Join(cfg.plots, themisPrefix(cfg, "themis_fig19_")+p.file)
		if err := plotSweep(path, "Themis Figure 19, workload 1", "fairness knob f", p.y, names, fs, p.v); err != nil {
			return err
		}
		fmt.Fprintf(w, "plot: %s\n", path)
	}
	return nil
}

// themisTraceHeader names the columns of -themis-trace's CSV.
var themisTraceHeader = []string{"run", "hour", "app", "rank", "apps", "rho", "invited", "rows", "rho_none", "rho_best", "best_gpus", "won", "leftover", "payment", "overdue", "spare", "keep"}

// traceThemis returns an observer of Themis' rounds that writes one line
// per app ranked: the run's label, the round's time in hours, the app, its
// rank (0 worst rho) among apps, its rho, whether it was invited; of its
// bid in the auction, the rows, its rho without a row, its best row's rho
// and GPUs; the GPUs it was granted by kind, and c_i of a won row (empty
// if none). A write error stays in w (csv.Writer.Error).
func traceThemis(w *csv.Writer, run string) func(*auction.Round) {
	return func(r *auction.Round) {
		got := map[string]*[5]int{}
		keep := map[string]float64{}
		for _, g := range r.Grants {
			if got[g.App] == nil {
				got[g.App] = &[5]int{}
			}
			got[g.App][g.Kind] += len(g.GPUs)
			if g.Kind == auction.Won {
				keep[g.App] = g.Keep
			}
		}
		invited := map[string]bool{}
		for _, a := range r.Invited {
			invited[a] = true
		}
		bids := map[string]ftf.BidTable{}
		for _, b := range r.Bids {
			bids[b.App] = b.Table
		}
		g := func(x float64) string { return strconv.FormatFloat(x, 'g', 5, 64) }
		hour := strconv.FormatFloat(r.At.Sub(time.Unix(0, 0)).Hours(), 'f', 3, 64)
		for i, a := range r.Ranking {
			line := []string{run, hour, a.App, strconv.Itoa(i), strconv.Itoa(len(r.Ranking)), g(a.Rho), strconv.FormatBool(invited[a.App])}
			if b, ok := bids[a.App]; ok {
				best, gpus := math.Inf(1), 0
				for _, row := range b.Rows {
					if row.Rho < best {
						best, gpus = row.Rho, 0
						for _, c := range row.Counts {
							gpus += c
						}
					}
				}
				line = append(line, strconv.Itoa(len(b.Rows)), g(b.RhoNone), g(best), strconv.Itoa(gpus))
			} else {
				line = append(line, "", "", "", "")
			}
			n := got[a.App]
			if n == nil {
				n = &[5]int{}
			}
			for _, k := range []auction.GrantKind{auction.Won, auction.Leftover, auction.Payment, auction.Overdue, auction.Spare} {
				line = append(line, strconv.Itoa(n[k]))
			}
			k := ""
			if c, ok := keep[a.App]; ok {
				k = strconv.FormatFloat(c, 'f', 3, 64)
			}
			_ = w.Write(append(line, k))
		}
	}
}

// appCSV writes every app's result of bySeed's runs (the first seed being
// cfg.seed) to -csv's file, if there is one, and says so on w.
func appCSV(cfg *config, w io.Writer, bySeed [][]*sim.Result) error {
	if cfg.csv == "" {
		return nil
	}
	if err := writeAppCSV(cfg.csv, cfg.seed, bySeed); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nper-app results: %s\n", cfg.csv)
	return nil
}

// writeAppCSV writes every app's result of every run to path, one line per
// app: its mechanism, seed (the first being first), equation 1's terms and
// its rho, times in hours.
func writeAppCSV(path string, first uint64, bySeed [][]*sim.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"mechanism", "seed", "app", "jobs", "arrival", "finish", "work", "demand", "n_avg", "t_id", "jct", "rho", "gpu_hours"})
	h := func(sec float64) string { return strconv.FormatFloat(sec/3600, 'f', 3, 64) }
	for i, res := range bySeed {
		for _, r := range res {
			for _, a := range r.Apps {
				_ = w.Write([]string{r.Scheduler, strconv.FormatUint(first+uint64(i), 10), string(a.App), strconv.Itoa(a.Jobs),
					h(a.Arrival), h(a.Finish), h(a.Work), strconv.Itoa(a.Demand), strconv.FormatFloat(a.Contention, 'f', 2, 64),
					h(a.Isolated), h(a.JCT), strconv.FormatFloat(a.Rho, 'f', 3, 64), h(a.GPUSeconds)})
			}
		}
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}
