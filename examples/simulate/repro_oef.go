package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

func init() {
	register(experiment{"oef-throughput", "OEF Figures 7 and 8: total normalised throughput, estimated and actual, against Gavel and Gandiva_fair (20 tenants, 8 GPUs of each type)", oefThroughput})
	register(experiment{"oef-fairness", "OEF Figures 4 to 6: equal throughput and a lying tenant (non-cooperative), sharing incentive and envy-freeness over time (cooperative), 4 tenants", oefFairness})
	register(experiment{"oef-profiling", "OEF Figure 10(b): deviation of the actual from the estimated throughput under profiling errors of 0 to 20%", oefProfiling})
	register(experiment{"oef-jct", "OEF Figure 9: average JCT of tenants' jobs arriving over time, against Gavel and Gandiva_fair (-jobs per tenant, -seeds)", oefJCT})
}

// The setting of OEF's evaluation (section 6.1): a cluster of 8 GPUs of
// each of three types, 4 per server (the paper's RTX 3070, 3080 and 3090;
// here Gavel's K80, P100 and V100, whose throughputs we have), 5-minute
// rounds, jobs in each tenant of one type, round-robin within a tenant by
// longest starvation in every scheduler.
const (
	oefGPUs   = 8   // of each type
	oefRound  = 300 // seconds
	oefRounds = 96  // 8 hours of 5-minute rounds
)

// drivenRounds returns the rounds of the driven OEF experiments.
func (cfg *config) drivenRounds() int {
	if cfg.oefRounds > 0 {
		return cfg.oefRounds
	}
	return oefRounds
}

// perTenant returns the jobs of each of tenants tenants: -jobs shared out.
func (cfg *config) perTenant(tenants int) int { return max(1, cfg.jobs/tenants) }

// oefBaselines are the schedulers OEF is compared with: Gavel's max-min
// (realised by its own mechanism) and Gandiva_fair with trading, each job's
// owner its tenant.
var oefBaselines = []string{"max-min", "gandiva-fair-trading"}

// oefWorkload returns tenants×perTenant single-GPU jobs drawn as Gavel
// draws them, regrouped so that each tenant's jobs are of one model (its
// first job's), each keeping its drawn duration; rate 0 puts every arrival
// at time 0.
func oefWorkload(tenants, perTenant int, rate float64, seed uint64) (*sim.Workload, error) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return nil, err
	}
	w, err := sim.Generate(tp, sim.GenerateSettings{Jobs: tenants * perTenant, Rate: rate}, rand.NewPCG(seed, 0))
	if err != nil {
		return nil, err
	}
	model := map[alloc.TenantID]*sim.Job{}
	for i := range w.Jobs {
		j := &w.Jobs[i]
		j.Owner = alloc.TenantID(fmt.Sprintf("t%02d", i%tenants))
		j.Weight = 1
		first, ok := model[j.Owner]
		if !ok {
			model[j.Owner] = j
			continue
		}
		dur := j.Steps / j.Rates[len(j.Rates)-1]
		j.Kind, j.Rates, j.Spread = first.Kind, slices.Clone(first.Rates), nil
		j.Steps = dur * j.Rates[len(j.Rates)-1]
	}
	return w, nil
}

// speedups returns rates over the slowest type the job runs on: OEF's
// normalised throughput of one GPU of each type (section 6.1.4).
func speedups(rates []float64) []float64 {
	low := math.Inf(1)
	for _, r := range rates {
		if r > 0 {
			low = min(low, r)
		}
	}
	out := make([]float64, len(rates))
	for k, r := range rates {
		out[k] = r / low
	}
	return out
}

// oefTrace is one driven run: per round, each tenant's normalised
// throughput as placed (actual) and as the mechanism's fractional
// allocation gives it (estimated; NaN where it has none).
type oefTrace struct {
	tenants   []alloc.TenantID
	actual    [][]float64 // [round][tenant]
	estimated [][]float64
	bundles   [][][]float64 // [round][tenant][type] GPUs placed
}

// total returns the mean over rounds of the sum over tenants of xs.
func total(xs [][]float64) float64 {
	var s float64
	for _, row := range xs {
		for _, x := range row {
			s += x
		}
	}
	return s / float64(len(xs))
}

// oefDrive runs s for rounds rounds with every job of w arriving at time 0
// with no end, reported with rates report(job) (nil: its own), and values
// placements with the jobs' true rates.
func oefDrive(ctx context.Context, s round.Scheduler, w *sim.Workload, rounds int, report func(*sim.Job) []float64) (*oefTrace, error) {
	tr := &oefTrace{}
	idx := map[alloc.TenantID]int{}
	owner := map[alloc.JobID]int{}
	speed := map[alloc.JobID][]float64{}
	var ev []round.Event
	for i := range w.Jobs {
		j := w.Jobs[i].Job
		if _, ok := idx[j.Owner]; !ok {
			idx[j.Owner] = len(tr.tenants)
			tr.tenants = append(tr.tenants, j.Owner)
		}
		owner[j.ID] = idx[j.Owner]
		speed[j.ID] = speedups(j.Rates)
		if report != nil {
			j.Rates = report(&w.Jobs[i])
		}
		ev = append(ev, round.Arrive(0, j, 0))
	}
	if err := s.Apply(ev...); err != nil {
		return nil, err
	}
	n := len(tr.tenants)
	for q := range rounds {
		d, err := s.Decide(ctx, float64(q)*oefRound)
		if err != nil {
			return nil, err
		}
		act, est := make([]float64, n), make([]float64, n)
		bundle := make([][]float64, n)
		for u := range bundle {
			bundle[u] = make([]float64, len(w.Types))
		}
		for _, p := range d.Placements {
			k := slices.Index(w.Types, p.Type)
			for _, id := range p.Jobs {
				act[owner[id]] += speed[id][k] * float64(len(p.GPUs)) / float64(len(p.Jobs))
				bundle[owner[id]][k] += float64(len(p.GPUs)) / float64(len(p.Jobs))
			}
		}
		for u := range est {
			est[u] = math.NaN()
		}
		switch m := s.(type) {
		case *stride.OEF:
			for u, t := range tr.tenants {
				x, _ := m.Ideal(t)
				est[u] = 0
				for _, j := range w.Jobs {
					if j.Owner == t {
						s := speedups(j.Rates)
						if report != nil {
							s = speedups(report(&j))
						}
						for k := range x {
							est[u] += x[k] * s[k]
						}
						break
					}
				}
			}
		case *stride.Gavel:
			for u := range est {
				est[u] = 0
			}
			for _, j := range w.Jobs {
				x, _ := m.Target(j.ID)
				for k := range x {
					est[owner[j.ID]] += x[k] * float64(j.Gang) * speed[j.ID][k]
				}
			}
		}
		tr.actual, tr.estimated, tr.bundles = append(tr.actual, act), append(tr.estimated, est), append(tr.bundles, bundle)
	}
	return tr, nil
}

// oefScheduler makes mechanism name for cluster c and workload w.
func oefScheduler(name string, c topology.Cluster, w *sim.Workload) (round.Scheduler, error) {
	ms, err := pick(name)
	if err != nil {
		return nil, err
	}
	return ms[0].make(&env{c: c, w: w, round: oefRound})
}

// oefCluster is the evaluation's cluster.
func oefCluster() (topology.Cluster, error) {
	return sim.NewCluster(sim.GavelTypes(), []int{oefGPUs, oefGPUs, oefGPUs}, 4)
}

// oefThroughput is OEF's Figures 7 and 8: 20 tenants, each with
// -jobs/20 jobs of one model, on 8 GPUs of each type for oefRounds
// rounds; the total normalised throughput (slowest-GPU equivalents) of each
// mechanism, estimated (its fractional allocation) and actual (its
// placements), averaged over rounds and over -seeds draws from -seed.
func oefThroughput(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := oefCluster()
	if err != nil {
		return err
	}
	names := append([]string{"oef-non-cooperative", "oef-cooperative"}, oefBaselines...)
	act := make([]float64, len(names))
	est := make([]float64, len(names))
	for s := range cfg.seeds {
		wl, err := oefWorkload(20, cfg.perTenant(20), 0, cfg.seed+uint64(s))
		if err != nil {
			return err
		}
		for i, name := range names {
			sched, err := oefScheduler(name, c, wl)
			if err != nil {
				return err
			}
			tr, err := oefDrive(ctx, sched, wl, cfg.drivenRounds(), nil)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			act[i] += total(tr.actual) / float64(cfg.seeds)
			est[i] += total(tr.estimated) / float64(cfg.seeds)
		}
	}
	fmt.Fprintf(w, "20 tenants × %d single-GPU jobs of one Gavel model each, %d K80, P100 and V100 GPUs (4 per server),\n%d rounds of 5 minutes, seeds %d..%d: total normalised throughput (slowest-GPU equivalents)\n\n",
		cfg.perTenant(20), oefGPUs, cfg.drivenRounds(), cfg.seed, cfg.seed+uint64(cfg.seeds)-1)
	fmt.Fprintf(w, "%-22s %10s %10s %14s %14s\n", "mechanism", "estimated", "actual", "vs max-min", "vs gandiva-fair")
	for i, name := range names {
		fmt.Fprintf(w, "%-22s %10.2f %10.2f %+13.1f%% %+13.1f%%\n", name, est[i], act[i], 100*(act[i]/act[2]-1), 100*(act[i]/act[3]-1))
	}
	fmt.Fprintf(w, "\nestimated against max-min's: non-cooperative %+.1f%%, cooperative %+.1f%%\n", 100*(est[0]/est[2]-1), 100*(est[1]/est[2]-1))
	if cfg.plots == "" {
		return nil
	}
	path := filepath.Join(cfg.plots, "oef_throughput.png")
	fmt.Fprintf(w, "plot: %s\n", path)
	return plotBars(path, "OEF Figs. 7-8: total normalised throughput", "slowest-GPU equivalents", names, []string{"estimated", "actual"}, [][]float64{est, act})
}

// plotBars writes a bar chart to path: for each series (estimated,
// actual, ...), one bar per name; NaN bars are drawn as 0.
func plotBars(path, title, yLabel string, names, series []string, v [][]float64) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	width := vg.Points(60 / float64(len(series)))
	for s, vals := range v {
		bars := make(plotter.Values, len(vals))
		for i, x := range vals {
			if !math.IsNaN(x) {
				bars[i] = x
			}
		}
		b, err := plotter.NewBarChart(bars, width)
		if err != nil {
			return err
		}
		b.Color = plotutil.Color(s)
		b.Offset = width * vg.Length(float64(s)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(series[s], b)
	}
	p.NominalX(names...)
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}

// oefFairness is OEF's Figures 4 to 6 with 4 tenants of 6 jobs each (one
// model each) on 8 GPUs of each type: non-cooperative OEF's tenants'
// normalised throughputs, honest and with tenant 0 inflating its speedups
// (its rates on the faster types × 1.5, so each reported speedup is at
// least the true one); cooperative OEF's worst sharing-incentive margin
// (a tenant's throughput over that of a quarter of every type, less 1)
// and worst envy (a tenant's value of another's GPUs over its own, less
// 1), estimated and actual (actual averaged over windows of 12 rounds,
// an hour), over oefRounds rounds.
func oefFairness(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := oefCluster()
	if err != nil {
		return err
	}
	wl, err := oefWorkload(4, 6, 0, cfg.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "4 tenants × 6 single-GPU jobs (seed %d), %d K80, P100 and V100 GPUs, %d rounds of 5 minutes\n\n", cfg.seed, oefGPUs, cfg.drivenRounds())
	kinds := map[alloc.TenantID]string{}
	for _, j := range wl.Jobs {
		kinds[j.Owner] = j.Kind
	}
	// Non-cooperative, honest and with a liar.
	liar := func(j *sim.Job) []float64 {
		r := slices.Clone(j.Rates)
		if j.Owner == "t00" {
			for k := 1; k < len(r); k++ {
				r[k] *= 1.5
			}
		}
		return r
	}
	var runs [2]*oefTrace
	for i, report := range []func(*sim.Job) []float64{nil, liar} {
		sched, err := oefScheduler("oef-non-cooperative", c, wl)
		if err != nil {
			return err
		}
		if runs[i], err = oefDrive(ctx, sched, wl, cfg.drivenRounds(), report); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "non-cooperative OEF, mean normalised throughput per round (actual; estimated):\n")
	fmt.Fprintf(w, "%-6s %-34s %16s %16s\n", "tenant", "model", "honest", "t00 lies")
	for u, t := range runs[0].tenants {
		fmt.Fprintf(w, "%-6s %-34s %7.2f; %6.2f %7.2f; %6.2f\n", t, kinds[t], column(runs[0].actual, u), column(runs[0].estimated, u), column(runs[1].actual, u), column(runs[1].estimated, u))
	}
	fmt.Fprintf(w, "total: honest %.2f, with the liar %.2f (%+.1f%%); spread of honest estimated levels (max/min - 1): %.2g\n\n",
		total(runs[0].actual), total(runs[1].actual), 100*(total(runs[1].actual)/total(runs[0].actual)-1), spread(runs[0].estimated))
	if cfg.plots != "" {
		for i, file := range []string{"oef_fig4a.png", "oef_fig4b.png"} {
			path := filepath.Join(cfg.plots, file)
			title := []string{"OEF Fig. 4(a): non-cooperative, honest", "OEF Fig. 4(b): non-cooperative, t00 lies"}[i]
			if err := plotTenants(path, title, runs[i]); err != nil {
				return err
			}
			fmt.Fprintf(w, "plot: %s\n", path)
		}
	}
	// Cooperative: sharing incentive and envy over time.
	sched, err := oefScheduler("oef-cooperative", c, wl)
	if err != nil {
		return err
	}
	o := sched.(*stride.OEF)
	tr, err := oefDrive(ctx, sched, wl, cfg.drivenRounds(), nil)
	if err != nil {
		return err
	}
	speed := make([][]float64, len(tr.tenants))
	for u, t := range tr.tenants {
		for _, j := range wl.Jobs {
			if j.Owner == t {
				speed[u] = speedups(j.Rates)
				break
			}
		}
	}
	ideal := make([][]float64, len(tr.tenants))
	for u, t := range tr.tenants {
		ideal[u], _ = o.Ideal(t)
	}
	share := make([]float64, len(wl.Types))
	for k := range share {
		share[k] = oefGPUs / float64(len(tr.tenants))
	}
	siEst, envyEst := fairness(speed, [][][]float64{ideal}, share)
	siAct, envyAct := fairness(speed, windows(tr.bundles, min(12, len(tr.bundles))), share)
	fmt.Fprintf(w, "cooperative OEF: worst sharing-incentive margin estimated %+.3f, actual (hourly) %+.3f;\nworst envy estimated %+.3f, actual (hourly) %+.3f; total actual %.2f\n",
		siEst, siAct, envyEst, envyAct, total(tr.actual))
	return nil
}

// plotTenants writes each tenant's actual normalised throughput per round
// (its hourly mean) against time to path.
func plotTenants(path, title string, tr *oefTrace) error {
	n := min(12, len(tr.actual))
	var x []float64
	y := make([][]float64, len(tr.tenants))
	for start := 0; start+n <= len(tr.actual); start += n {
		x = append(x, float64(start+n)*oefRound/3600)
		for u := range tr.tenants {
			y[u] = append(y[u], column(tr.actual[start:start+n], u))
		}
	}
	names := make([]string, len(tr.tenants))
	for u, t := range tr.tenants {
		names[u] = string(t)
	}
	return plotSweep(path, title, "hours", "normalised throughput", names, x, y)
}

// column returns the mean over rounds of xs[.][u].
func column(xs [][]float64, u int) float64 {
	var s float64
	for _, row := range xs {
		s += row[u]
	}
	return s / float64(len(xs))
}

// spread returns the largest max/min - 1 over rounds of the tenants'
// values.
func spread(xs [][]float64) float64 {
	var worst float64
	for _, row := range xs {
		worst = max(worst, slices.Max(row)/slices.Min(row)-1)
	}
	return worst
}

// windows returns the mean bundles over consecutive windows of n rounds.
func windows(b [][][]float64, n int) [][][]float64 {
	var out [][][]float64
	for start := 0; start+n <= len(b); start += n {
		mean := make([][]float64, len(b[start]))
		for u := range mean {
			mean[u] = make([]float64, len(b[start][u]))
			for q := start; q < start+n; q++ {
				for k, x := range b[q][u] {
					mean[u][k] += x / float64(n)
				}
			}
		}
		out = append(out, mean)
	}
	return out
}

// fairness returns, over every round of bundles ([round][tenant][type]),
// the worst sharing-incentive margin (a tenant's value of its bundle over
// its value of share, less 1) and the worst envy (its value of another's
// bundle over its own, less 1).
func fairness(speed [][]float64, bundles [][][]float64, share []float64) (si, envy float64) {
	si, envy = math.Inf(1), math.Inf(-1)
	val := func(s, x []float64) float64 {
		var v float64
		for k := range x {
			v += s[k] * x[k]
		}
		return v
	}
	for _, b := range bundles {
		for u, s := range speed {
			own := val(s, b[u])
			si = min(si, own/val(s, share)-1)
			for v := range b {
				if v != u {
					envy = max(envy, val(s, b[v])/own-1)
				}
			}
		}
	}
	return si, envy
}

// oefProfiling is OEF's Figure 10(b): tenants report rates with a
// profiling error e (each rate times 1 + e·u, u uniform on [-1, 1], drawn
// per tenant and type), and the deviation is |actual - estimated| /
// estimated, estimated from the reported speedups and OEF's allocation,
// actual from the placements valued with the true rates. 20 tenants as in
// oef-throughput, cooperative and non-cooperative.
func oefProfiling(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := oefCluster()
	if err != nil {
		return err
	}
	wl, err := oefWorkload(20, cfg.perTenant(20), 0, cfg.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "20 tenants × %d single-GPU jobs (seed %d), %d K80, P100 and V100 GPUs, %d rounds of 5 minutes\n\n", cfg.perTenant(20), cfg.seed, oefGPUs, cfg.drivenRounds())
	fmt.Fprintf(w, "%-22s %6s %10s %10s %10s\n", "mechanism", "error", "estimated", "actual", "deviation")
	names := []string{"oef-non-cooperative", "oef-cooperative"}
	errs := []float64{0, 0.05, 0.1, 0.2}
	dev := make([][]float64, len(names))
	for m, name := range names {
		for _, e := range errs {
			rng := rand.New(rand.NewPCG(cfg.seed, 7))
			noise := map[alloc.TenantID][]float64{}
			for _, j := range wl.Jobs {
				if noise[j.Owner] == nil {
					f := make([]float64, len(j.Rates))
					for k := range f {
						f[k] = 1 + e*(2*rng.Float64()-1)
					}
					noise[j.Owner] = f
				}
			}
			report := func(j *sim.Job) []float64 {
				r := slices.Clone(j.Rates)
				for k := range r {
					r[k] *= noise[j.Owner][k]
				}
				return r
			}
			sched, err := oefScheduler(name, c, wl)
			if err != nil {
				return err
			}
			tr, err := oefDrive(ctx, sched, wl, cfg.drivenRounds(), report)
			if err != nil {
				return err
			}
			est, act := total(tr.estimated), total(tr.actual)
			dev[m] = append(dev[m], 100*math.Abs(act-est)/est)
			fmt.Fprintf(w, "%-22s %5.0f%% %10.2f %10.2f %9.1f%%\n", name, 100*e, est, act, dev[m][len(dev[m])-1])
		}
	}
	if cfg.plots == "" {
		return nil
	}
	pct := make([]float64, len(errs))
	for i, e := range errs {
		pct[i] = 100 * e
	}
	path := filepath.Join(cfg.plots, "oef_profiling.png")
	fmt.Fprintf(w, "plot: %s\n", path)
	return plotSweep(path, "OEF Fig. 10(b): deviation under profiling error", "profiling error (%)", "deviation (%)", names, pct, dev)
}

// oefJCT is OEF's Figure 9: -jobs jobs of 50 tenants (one model each, about
// -jobs/50 jobs each) arriving at -rate jobs per hour on 8 GPUs of each
// type, simulated to the end by sim.Run; the average JCT of OEF and of the
// baselines, averaged over -seeds draws from -seed.
func oefJCT(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := oefCluster()
	if err != nil {
		return err
	}
	names := append([]string{"oef-non-cooperative", "oef-cooperative"}, oefBaselines...)
	jct := make([]float64, len(names))
	const tenants = 50
	per := max(1, cfg.jobs/tenants)
	for s := range cfg.seeds {
		wl, err := oefWorkload(tenants, per, cfg.rate, cfg.seed+uint64(s))
		if err != nil {
			return err
		}
		for i, name := range names {
			ms, err := pick(name)
			if err != nil {
				return err
			}
			res, err := simulate(ctx, cfg, &env{c: c, w: wl, round: oefRound}, ms[0], &sim.Settings{Round: oefRound})
			if err != nil {
				return err
			}
			var sum float64
			for _, j := range res.Jobs {
				sum += j.JCT
			}
			jct[i] += sum / float64(len(res.Jobs)) / float64(cfg.seeds)
		}
	}
	fmt.Fprintf(w, "%d tenants × %d single-GPU jobs of one Gavel model each, %g jobs/hour, %d K80, P100 and V100 GPUs,\n5-minute rounds, seeds %d..%d: average JCT\n\n",
		tenants, per, cfg.rate, oefGPUs, cfg.seed, cfg.seed+uint64(cfg.seeds)-1)
	fmt.Fprintf(w, "%-22s %10s %12s %16s\n", "mechanism", "avg JCT", "vs max-min", "vs gandiva-fair")
	hours := make([]float64, len(jct))
	for i, name := range names {
		hours[i] = jct[i] / 3600
		fmt.Fprintf(w, "%-22s %9.1fh %+11.1f%% %+15.1f%%\n", name, hours[i], 100*(jct[i]/jct[2]-1), 100*(jct[i]/jct[3]-1))
	}
	if cfg.plots == "" {
		return nil
	}
	path := filepath.Join(cfg.plots, "oef_jct.png")
	fmt.Fprintf(w, "plot: %s\n", path)
	return plotBars(path, "OEF Fig. 9: average JCT", "hours", names, []string{"average JCT"}, [][]float64{hours})
}
