package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// Gandiva_fair's evaluation (EuroSys'20, sections 5.3 to 5.5), one
// experiment per figure; see docs/reproduction.md for the commands and the
// results. The paper ran these on a real cluster with one-minute quanta;
// here sim.Run drives stride.GandivaFair with one-minute rounds.
func init() {
	register(experiment{"gandiva-fair-fig6", "Gandiva_fair Figure 6: 70 tenants of 1/2/4/8-GPU jobs on 48 P100s, each class's GPUs against its fair share", gandivaFig6})
	register(experiment{"gandiva-fair-fig7", "Gandiva_fair Figure 7: 3 tenants of 128 jobs each (1/4/2-GPU) on 64 K80s, shares over time", gandivaFig7})
	register(experiment{"gandiva-fair-trading", "Gandiva_fair Figures 8, 10, 11: 4 tenants of 150 jobs on 64 K80, 24 P100, 12 V100, with and without trading", gandivaTrading})
}

// gandivaQuantum is the quantum of the paper's runs (section 3.5: one to
// two minutes), and gandivaRestart the time a job loses each time it
// resumes from a checkpoint: between the paper's suspend-resume (0.1 to
// 0.25 s) and a cross-server migration, whose ~5 s GPU setup it hides
// behind other jobs' runs (section 4).
const (
	gandivaQuantum = 60.0
	gandivaRestart = 1.0
)

// Table 1's speeds (mini-batches per second of one GPU: 1 / K80 time,
// times the speedup) of the models the evaluation runs, over K80, P100 and
// V100. A gang of g GPUs is taken to run g times as fast (data parallel).
var (
	resnet50 = []float64{1 / 0.134, 3.34 / 0.134, 5.14 / 0.134}
	superRes = []float64{1 / 0.2075, 1.73 / 0.2075, 1.87 / 0.2075}
	unitRate = []float64{1, 1, 1}
)

// longWork is the work of a job meant to outlast the run.
const longWork = 1e12

// gfTenant is one tenant of a Gandiva_fair experiment: jobs of one model,
// size and work.
type gfTenant struct {
	id      alloc.TenantID
	tickets float64
	jobs    int
	gang    int
	speed   []float64 // per GPU, over the workload's types
	work    float64   // mini-batches per job
	arrival func(i int) float64
}

// gfWorkload builds the workload of tenants over types.
func gfWorkload(types []topology.GPUType, tenants []gfTenant) *sim.Workload {
	w := &sim.Workload{Types: types}
	for _, t := range tenants {
		for i := range t.jobs {
			rates := make([]float64, len(types))
			for k := range rates {
				rates[k] = t.speed[k] * float64(t.gang)
			}
			at := 0.0
			if t.arrival != nil {
				at = t.arrival(i)
			}
			w.Jobs = append(w.Jobs, sim.Job{Job: alloc.Job{ID: alloc.JobID(fmt.Sprintf("%s-%03d", t.id, i)), Owner: t.id, Gang: t.gang, Weight: 1, Rates: rates},
				Arrival: at, Steps: t.work})
		}
	}
	return w
}

// trace records, round by round, each tenant's GPUs of each type and its
// mini-batch rate, from the decisions the scheduler returns to sim.Run.
type trace struct {
	round.Scheduler
	types []topology.GPUType
	owner map[alloc.JobID]alloc.TenantID
	rates map[alloc.JobID][]float64
	time  []float64                      // hours
	gpus  []map[alloc.TenantID][]float64 // per round
	rate  []map[alloc.TenantID]float64   // per round, mini-batches per second
}

func newTrace(s round.Scheduler, w *sim.Workload) *trace {
	t := &trace{Scheduler: s, types: w.Types, owner: map[alloc.JobID]alloc.TenantID{}, rates: map[alloc.JobID][]float64{}}
	for _, j := range w.Jobs {
		t.owner[j.ID], t.rates[j.ID] = j.Owner, j.Rates
	}
	return t
}

// Decide passes the round on and records its decision.
func (t *trace) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	d, err := t.Scheduler.Decide(ctx, now)
	if err != nil {
		return d, err
	}
	g := map[alloc.TenantID][]float64{}
	r := map[alloc.TenantID]float64{}
	for _, p := range d.Placements {
		k := slices.Index(t.types, p.Type)
		for _, id := range p.Jobs {
			o := t.owner[id]
			if g[o] == nil {
				g[o] = make([]float64, len(t.types))
			}
			g[o][k] += float64(len(p.GPUs))
			r[o] += t.rates[id][k]
		}
	}
	t.time = append(t.time, now/3600)
	t.gpus, t.rate = append(t.gpus, g), append(t.rate, r)
	return d, nil
}

// mean returns f's mean over the rounds that start in [from, to) hours.
func (t *trace) mean(from, to float64, f func(i int) float64) float64 {
	var s, n float64
	for i, h := range t.time {
		if h >= from && h < to {
			s += f(i)
			n++
		}
	}
	return s / n
}

// series returns f over every round, for plots.
func (t *trace) series(f func(i int) float64) []float64 {
	out := make([]float64, len(t.time))
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// gfRun runs Gandiva_fair with settings set (trading, packing) on w, in
// Gandiva_fair's quanta with the given tickets, recording it.
func gfRun(ctx context.Context, w *sim.Workload, c topology.Cluster, tickets map[alloc.TenantID]float64, set stride.GandivaSettings, hours float64) (*trace, *stride.GandivaFair, *sim.Result, error) {
	set.Quantum = gandivaQuantum
	set.Tickets = func(id alloc.TenantID) float64 { return tickets[id] }
	s, err := stride.NewGandivaFair(c, w.Types, &set)
	if err != nil {
		return nil, nil, nil, err
	}
	tr := newTrace(s, w)
	res, err := sim.Run(ctx, w, c, tr, &sim.Settings{Round: gandivaQuantum, Restart: gandivaRestart, Horizon: hours * 3600})
	return tr, s, res, err
}

// tenantGPUs returns a func giving tenant id's GPUs of type k (all types
// if k < 0) in round i.
func (t *trace) tenantGPUs(id alloc.TenantID, k int) func(int) float64 {
	return func(i int) float64 {
		var s float64
		for kk, g := range t.gpus[i][id] {
			if k < 0 || kk == k {
				s += g
			}
		}
		return s
	}
}

// gandivaFig6 is section 5.3's first experiment: 48 P100s (12 servers),
// 70 tenants with one job each, as many tickets as the job's GPUs: 62 of
// 1 GPU, 3 of 2, 3 of 4 and 2 of 8, arriving at random in the first half
// hour; the 8-GPU jobs finish about midway (their work is 2 hours at half
// the time, their fair share). Each class's mean GPUs per tenant over the
// first and second halves (after half an hour of each) against its fair
// share, and the GPUs in use.
func gandivaFig6(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := sim.NewCluster([]topology.GPUType{"p100"}, []int{48}, 4)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 6))
	arrive := func(int) float64 { return 1800 * rng.Float64() }
	classes := []struct {
		name  string
		n     int
		gang  int
		work  float64
		speed []float64
	}{{"1-GPU", 62, 1, longWork, unitRate}, {"2-GPU", 3, 2, longWork, unitRate}, {"4-GPU", 3, 4, longWork, unitRate}, {"8-GPU", 2, 8, 8 * 3600, unitRate}}
	var tenants []gfTenant
	tickets := map[alloc.TenantID]float64{}
	class := map[alloc.TenantID]int{}
	for ci, cl := range classes {
		for i := range cl.n {
			id := alloc.TenantID(fmt.Sprintf("%dgpu-%02d", cl.gang, i))
			tenants = append(tenants, gfTenant{id: id, tickets: float64(cl.gang), jobs: 1, gang: cl.gang, speed: cl.speed, work: cl.work, arrival: arrive})
			tickets[id], class[id] = float64(cl.gang), ci
		}
	}
	wl := gfWorkload([]topology.GPUType{"p100"}, tenants)
	const hours = 4.0
	// The plot is of the first run, the paper's mechanism without the
	// packing it leaves unspecified; the second packs (GandivaSettings.Pack).
	var plotted *trace
	var names []string
	var ys [][]float64
	for _, pack := range []bool{false, true} {
		tr, _, res, err := gfRun(ctx, wl, c, tickets, stride.GandivaSettings{Pack: pack}, hours)
		if err != nil {
			return err
		}
		end8 := 0.0
		for _, j := range res.Jobs {
			if j.Gang == 8 && j.Finished() {
				end8 = max(end8, j.Finish/3600)
			}
		}
		if !pack {
			plotted = tr
			fmt.Fprintf(w, "Gandiva_fair Figure 6: 70 tenants on 48 P100s (12 servers), tickets = job size, one-minute quanta, %g s lost per resume\n", float64(gandivaRestart))
			fmt.Fprintf(w, "The 8-GPU jobs finished at %.2f h. Mean GPUs per tenant of each class (fair share in brackets):\n\n", end8)
		} else {
			fmt.Fprintf(w, "\nWith packing (GandivaSettings.Pack) the 8-GPU jobs finished at %.2f h:\n\n", end8)
		}
		fmt.Fprintf(w, "%-8s %22s %22s\n", "class", fmt.Sprintf("0.5 h to %.2f h", end8), fmt.Sprintf("%.2f h to %g h", end8+0.5, hours))
		for ci, cl := range classes {
			var ids []alloc.TenantID
			for id, c := range class {
				if c == ci {
					ids = append(ids, id)
				}
			}
			slices.Sort(ids)
			per := func(i int) float64 {
				var s float64
				for _, id := range ids {
					s += tr.tenantGPUs(id, -1)(i)
				}
				return s / float64(len(ids))
			}
			fair1 := 48 * float64(cl.gang) / 96
			fair2 := 48 * float64(cl.gang) / 80
			second := fmt.Sprintf("%.2f [%.2f]", tr.mean(end8+0.5, hours, per), fair2)
			if cl.gang == 8 {
				second = "gone"
			}
			fmt.Fprintf(w, "%-8s %22s %22s\n", cl.name, fmt.Sprintf("%.2f [%.2f]", tr.mean(0.5, end8, per), fair1), second)
			if !pack {
				names, ys = append(names, cl.name+" tenant"), append(ys, tr.series(per))
			}
		}
		total := func(i int) float64 {
			var s float64
			for id := range tickets {
				s += tr.tenantGPUs(id, -1)(i)
			}
			return s
		}
		fmt.Fprintf(w, "%-8s %22.2f %22.2f   (GPUs in use, of 48)\n", "total", tr.mean(0.5, end8, total), tr.mean(end8+0.5, hours, total))
	}
	return gfPlot(cfg, "gandiva_fig6.png", "Figure 6: GPUs per tenant, 48 P100s", "GPUs per tenant", plotted.time, names, ys, w)
}

// plotWindow is the moving average, in quanta, of the plotted series: one
// quantum runs a tenant's gangs or not, so a line per quantum is mostly
// noise (the paper's plots are smoothed too).
const plotWindow = 15

// gfPlot draws lines over hours into cfg.plots, if set, each a moving
// average over plotWindow quanta.
func gfPlot(cfg *config, file, title, ylabel string, hours []float64, names []string, ys [][]float64, w io.Writer) error {
	if cfg.plots == "" {
		return nil
	}
	path := filepath.Join(cfg.plots, file)
	smooth := make([][]float64, len(ys))
	for m, y := range ys {
		smooth[m] = make([]float64, len(y))
		var sum float64
		for i, v := range y {
			sum += v
			if i >= plotWindow {
				sum -= y[i-plotWindow]
			}
			smooth[m][i] = sum / float64(min(i+1, plotWindow))
		}
	}
	title += fmt.Sprintf(" (%d-minute mean)", int(plotWindow*gandivaQuantum/60))
	if err := plotLines(path, title, "hours", ylabel, names, hours, smooth); err != nil {
		return err
	}
	fmt.Fprintf(w, "plot: %s\n", path)
	return nil
}

// gandivaFig7 is section 5.3's second experiment: 64 K80s (16 servers),
// three tenants of 100 tickets: User1 with 128 1-GPU jobs
// (SuperResolution), User2 with 128 4-GPU jobs (ResNet-50), User3 with 128
// 2-GPU jobs (DCGAN), all at time 0 (-jobs caps the jobs per tenant). The
// work is set so that, at fair shares, User3's jobs finish after about an
// hour and User1's after about four (the paper's timeline): 300 s of its
// gang each for User3 (21.3 GPUs for an hour over 256 GPUs of jobs), 3,300
// s for User1.
func gandivaFig7(ctx context.Context, cfg *config, w io.Writer) error {
	c, err := sim.NewCluster([]topology.GPUType{"k80"}, []int{64}, 4)
	if err != nil {
		return err
	}
	n := min(cfg.jobs, 128)
	scale := float64(n) / 128 // fewer jobs: proportionally more work each
	tenants := []gfTenant{
		{id: "user1", tickets: 100, jobs: n, gang: 1, speed: unitRate, work: 3300 / scale},
		{id: "user2", tickets: 100, jobs: n, gang: 4, speed: unitRate, work: longWork},
		{id: "user3", tickets: 100, jobs: n, gang: 2, speed: unitRate, work: 300 / scale},
	}
	tickets := map[alloc.TenantID]float64{"user1": 100, "user2": 100, "user3": 100}
	wl := gfWorkload([]topology.GPUType{"k80"}, tenants)
	const hours = 6.0
	tr, _, res, err := gfRun(ctx, wl, c, tickets, stride.GandivaSettings{}, hours)
	if err != nil {
		return err
	}
	done := map[alloc.TenantID]float64{}
	for _, j := range res.Jobs {
		if j.Finished() {
			done[j.Owner] = max(done[j.Owner], j.Finish/3600)
		}
	}
	d3, d1 := done["user3"], done["user1"]
	fmt.Fprintf(w, "Gandiva_fair Figure 7: 3 tenants of %d jobs each on 64 K80s (16 servers), 100 tickets each, one-minute quanta\n", n)
	fmt.Fprintf(w, "User3's last job finished at %.2f h, User1's at %.2f h. Mean GPUs of each tenant (fair share in brackets):\n\n", d3, d1)
	windows := [][2]float64{{0.1, d3 - 0.1}, {d3 + 0.25, d1 - 0.1}, {d1 + 0.25, hours}}
	fair := [][]float64{{64. / 3, 64. / 3, 64. / 3}, {32, 32, 0}, {0, 64, 0}}
	fmt.Fprintf(w, "%-8s", "tenant")
	for _, win := range windows {
		fmt.Fprintf(w, " %20s", fmt.Sprintf("%.2f h to %.2f h", win[0], win[1]))
	}
	fmt.Fprintln(w)
	var names []string
	var ys [][]float64
	for u, id := range []alloc.TenantID{"user1", "user2", "user3"} {
		f := tr.tenantGPUs(id, -1)
		fmt.Fprintf(w, "%-8s", id)
		for wi, win := range windows {
			cell := "gone"
			if fair[wi][u] > 0 {
				cell = fmt.Sprintf("%.1f [%.1f]", tr.mean(win[0], win[1], f), fair[wi][u])
			}
			fmt.Fprintf(w, " %20s", cell)
		}
		fmt.Fprintln(w)
		names, ys = append(names, string(id)), append(ys, tr.series(f))
	}
	total := func(i int) float64 {
		var s float64
		for id := range tickets {
			s += tr.tenantGPUs(id, -1)(i)
		}
		return s
	}
	fmt.Fprintf(w, "%-8s", "total")
	for _, win := range windows {
		fmt.Fprintf(w, " %20.1f", tr.mean(win[0], win[1], total))
	}
	fmt.Fprintln(w, "   (GPUs in use, of 64)")
	return gfPlot(cfg, "gandiva_fig7.png", "Figure 7: GPUs per tenant, 64 K80s", "GPUs", tr.time, names, ys, w)
}

// gandivaTrading is sections 5.4 and 5.5: 64 K80s, 24 P100s and 12 V100s
// (4-GPU servers), four tenants of 100 tickets with 150 jobs each (-jobs
// caps them): User1 1-GPU ResNet-50, User2 2-GPU ResNet-50, User3 4-GPU
// ResNet-50, User4 1-GPU SuperResolution, at Table 1's speeds. User1's
// work is what its fair share of every type runs in four hours, so it
// leaves about then, as in the paper. The same workload runs without
// trading (Figure 10) and with it (Figure 11); Figure 8 compares each
// tenant's mini-batch rate.
func gandivaTrading(ctx context.Context, cfg *config, w io.Writer) error {
	types := []topology.GPUType{"k80", "p100", "v100"}
	count := []int{64, 24, 12}
	c, err := sim.NewCluster(types, count, 4)
	if err != nil {
		return err
	}
	n := min(cfg.jobs, 150)
	var fairRate float64 // User1's mini-batch rate on a quarter of every type
	for k, m := range count {
		fairRate += float64(m) / 4 * resnet50[k]
	}
	tenants := []gfTenant{
		{id: "user1", tickets: 100, jobs: n, gang: 1, speed: resnet50, work: fairRate * 4 * 3600 / float64(n)},
		{id: "user2", tickets: 100, jobs: n, gang: 2, speed: resnet50, work: longWork},
		{id: "user3", tickets: 100, jobs: n, gang: 4, speed: resnet50, work: longWork},
		{id: "user4", tickets: 100, jobs: n, gang: 1, speed: superRes, work: longWork},
	}
	tickets := map[alloc.TenantID]float64{"user1": 100, "user2": 100, "user3": 100, "user4": 100}
	users := []alloc.TenantID{"user1", "user2", "user3", "user4"}
	wl := gfWorkload(types, tenants)
	const hours = 6.0
	var traces [2]*trace
	var trades []string
	leave := [2]float64{hours, hours} // when User1's last job finished, per run
	for i, trading := range []bool{false, true} {
		tr, s, res, err := gfRun(ctx, wl, c, tickets, stride.GandivaSettings{Trading: trading}, hours)
		if err != nil {
			return err
		}
		traces[i] = tr
		for _, t := range s.Trades() {
			trades = append(trades, fmt.Sprintf("%6.2f h  %v", float64(t.Quantum)*gandivaQuantum/3600, t))
		}
		last := 0.0
		for _, j := range res.Jobs {
			if j.Owner == "user1" {
				last = max(last, j.Finish/3600) // NaN if one did not finish
			}
		}
		if !math.IsNaN(last) {
			leave[i] = last
		}
	}
	// K80-equivalent GPUs: a tenant's mini-batch rate over its rate on one K80.
	k80 := map[alloc.TenantID]float64{"user1": resnet50[0], "user2": resnet50[0], "user3": resnet50[0], "user4": superRes[0]}
	fmt.Fprintf(w, "Gandiva_fair Figures 8, 10, 11: 4 tenants of %d jobs on 64 K80, 24 P100, 12 V100 (4-GPU servers), 100 tickets each,\n", n)
	fmt.Fprintf(w, "one-minute quanta, %g s lost per resume; User1's jobs are all done at %.2f h without trading, %.2f h with it.\n\n", float64(gandivaRestart), leave[0], leave[1])
	from, to := 1.0, min(leave[0], leave[1])-0.1
	fmt.Fprintf(w, "Mini-batch rate of each tenant, in K80-GPU equivalents, mean over %.2f h to %.2f h (Figure 8):\n", from, to)
	fmt.Fprintf(w, "%-8s %12s %12s %8s\n", "tenant", "no trading", "trading", "gain")
	var names []string
	var ys [][]float64
	var sumA, sumB float64
	for _, id := range users {
		r := func(tr *trace) func(int) float64 { return func(i int) float64 { return tr.rate[i][id] / k80[id] } }
		a, b := traces[0].mean(from, to, r(traces[0])), traces[1].mean(from, to, r(traces[1]))
		sumA, sumB = sumA+a, sumB+b
		fmt.Fprintf(w, "%-8s %12.1f %12.1f %+7.1f%%\n", id, a, b, 100*(b/a-1))
		names = append(names, string(id)+" no trading", string(id)+" trading")
		ys = append(ys, traces[0].series(r(traces[0])), traces[1].series(r(traces[1])))
	}
	fmt.Fprintf(w, "%-8s %12.1f %12.1f %+7.1f%%\n", "total", sumA, sumB, 100*(sumB/sumA-1))
	for i, name := range []string{"without trading (Figure 10)", "with trading (Figure 11)"} {
		fmt.Fprintf(w, "\nGPUs of each type per tenant %s, mean over %.2f h to %.2f h (fair share %.3g K80, %.3g P100, %.3g V100):\n", name, from, to, 64./4, 24./4, 12./4)
		fmt.Fprintf(w, "%-8s %8s %8s %8s\n", "tenant", "K80", "P100", "V100")
		for _, id := range users {
			fmt.Fprintf(w, "%-8s", id)
			for k := range types {
				fmt.Fprintf(w, " %8.2f", traces[i].mean(from, to, traces[i].tenantGPUs(id, k)))
			}
			fmt.Fprintln(w)
		}
	}
	shown := min(40, len(trades))
	fmt.Fprintf(w, "\n%d trades and undos (Figure 9); the first %d:\n", len(trades), shown)
	for _, t := range trades[:shown] {
		fmt.Fprintln(w, t)
	}
	if err := gfPlot(cfg, "gandiva_fig8.png", "Figure 8: mini-batch rate, with and without trading", "K80-GPU equivalents", traces[0].time, names, ys, w); err != nil {
		return err
	}
	for i, fig := range []string{"fig10", "fig11"} {
		for k, t := range types {
			var names []string
			var ys [][]float64
			for _, id := range users {
				names, ys = append(names, string(id)), append(ys, traces[i].series(traces[i].tenantGPUs(id, k)))
			}
			file := fmt.Sprintf("gandiva_%s_%s.png", fig, t)
			if err := gfPlot(cfg, file, fmt.Sprintf("Figure %s: %s GPUs per tenant", fig[3:], t), "GPUs", traces[i].time, names, ys, w); err != nil {
				return err
			}
		}
	}
	return nil
}
