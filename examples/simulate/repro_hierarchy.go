package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
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
)

func init() {
	register(experiment{"gavel-fig12", "Gavel Figure 12: hierarchical fairness (weighted entities, fair within) as jobs arrive on 3 GPUs of each type", gavelHierarchy(false)})
	register(experiment{"gavel-fig13", "Gavel Figure 13: hierarchical policy with FIFO within entities as jobs arrive", gavelHierarchy(true)})
}

// The setting of Gavel's Figures 12 and 13: 3 GPUs of each type, 18 jobs
// arriving one every 4 timesteps (rounds), the first 6 of entity 0 (weight
// 1), the next 6 of entity 1 (weight 2), the last 6 of entity 2 (weight 3).
const (
	hierJobs     = 18
	hierPerGroup = 6
	hierEvery    = 4  // rounds between arrivals
	hierTail     = 20 // rounds after the last arrival
)

// hierTrace is one run of the hierarchical experiment, per round.
type hierTrace struct {
	ids    []alloc.JobID
	entity []int       // of each job
	norm   []float64   // each job's rate on an equal share of every type
	alloc  [][]float64 // [round][job] normalised throughput of the allocation X
	ran    [][]float64 // [round][job] normalised throughput of the placement
	static [][]float64 // [round][job] of the heterogeneity-agnostic static partition
}

// gavelHierarchy runs Gavel's hierarchical policy through its mechanism
// as Figures 12 (fair within entities) and 13 (FIFO within entities)
// describe, driving the round contract directly, and reports each job's
// share of the total normalised throughput over time, the entities'
// shares once all have arrived, and the total against a
// heterogeneity-agnostic static partition (Figure 12(b)), for -seeds job
// draws from -seed on (the table and plots are of the first).
func gavelHierarchy(fifo bool) func(context.Context, *config, io.Writer) error {
	return func(ctx context.Context, cfg *config, w io.Writer) error {
		tr, err := runHierarchy(ctx, cfg, fifo)
		if err != nil {
			return err
		}
		within := "fair"
		if fifo {
			within = "FIFO"
		}
		fmt.Fprintf(w, "Hierarchical policy (entities weighted 1, 2, 3; %s within each), 3 K80, 3 P100, 3 V100 GPUs,\n%d single-GPU Gavel jobs (seed %d), one arriving every %d rounds of %g minutes\n",
			within, hierJobs, cfg.seed, hierEvery, cfg.round/60)
		if cfg.resetInterval > 0 {
			fmt.Fprintf(w, "f_mk counted from the latest re-solve, resets at least %g s apart\n", cfg.resetInterval)
		}
		fmt.Fprintln(w)
		last := len(tr.alloc) - 1
		fmt.Fprintf(w, "after the last arrival (round %d), share of the total normalised throughput:\n", last)
		fmt.Fprintf(w, "%-8s %6s %10s %10s %12s %12s %8s\n", "entity", "weight", "allocation", "realised", "job min", "job max", "idle")
		realised := windowMean(tr.ran, hierTail)
		for e := 0; e < 3; e++ {
			var a, r float64
			lo, hi, idle := math.Inf(1), 0.0, 0
			for m := range tr.ids {
				if tr.entity[m] != e {
					continue
				}
				share := tr.alloc[last][m] / sum(tr.alloc[last])
				a += share
				r += realised[m] / sum(realised)
				lo, hi = min(lo, share), max(hi, share)
				if share < 1e-9 {
					idle++
				}
			}
			fmt.Fprintf(w, "%-8d %6d %10.3f %10.3f %12.3f %12.3f %8d\n", e, e+1, a, r, lo, hi, idle)
		}
		fmt.Fprintf(w, "(weights give 0.167, 0.333, 0.500; realised: the placements of the last %d rounds; idle: jobs with no allocation)\n", hierTail)
		fmt.Fprintf(w, "\ntotal normalised throughput over all rounds, heterogeneity-aware against an agnostic static partition:\n")
		for s := range cfg.seeds {
			t := tr
			if s > 0 {
				c := *cfg
				c.seed = cfg.seed + uint64(s)
				if t, err = runHierarchy(ctx, &c, fifo); err != nil {
					return err
				}
			}
			var aw, st float64
			for r := range t.alloc {
				aw += sum(t.alloc[r])
				st += sum(t.static[r])
			}
			fmt.Fprintf(w, "seed %d: %.1f against %.1f, %.0f%% lower\n", cfg.seed+uint64(s), aw, st, 100*(1-st/aw))
		}
		if cfg.plots == "" {
			return nil
		}
		prefix := cmp.Or(cfg.plotPrefix, fmt.Sprintf("gavel_fig%d_", map[bool]int{false: 12, true: 13}[fifo]))
		files, err := plotHierarchy(cfg.plots, prefix, tr)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "plots: %v\n", files)
		return nil
	}
}

// runHierarchy drives stride.Gavel under alloc.Hierarchical through the
// experiment's arrivals and records every round.
func runHierarchy(ctx context.Context, cfg *config, fifo bool) (*hierTrace, error) {
	tp, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		return nil, err
	}
	wl, err := sim.Generate(tp, sim.GenerateSettings{Jobs: hierJobs, Rate: 1}, rand.NewPCG(cfg.seed, 0))
	if err != nil {
		return nil, err
	}
	types := sim.GavelTypes()
	c, err := sim.NewCluster(types, []int{3, 3, 3}, 3)
	if err != nil {
		return nil, err
	}
	capa, err := alloc.CapacityOf(c, types)
	if err != nil {
		return nil, err
	}
	tenants := make([]alloc.Tenant, 3)
	for e := range tenants {
		tenants[e] = alloc.Tenant{ID: alloc.TenantID(fmt.Sprintf("entity-%d", e)), Weight: float64(e + 1)}
	}
	pol := alloc.Hierarchical{}
	if fifo {
		pol.FIFO = []alloc.TenantID{tenants[0].ID, tenants[1].ID, tenants[2].ID}
	}
	g, err := stride.NewGavel(pol, c, types, &stride.GavelSettings{Round: cfg.round, Tenants: tenants, ResetInterval: cfg.resetInterval})
	if err != nil {
		return nil, err
	}
	tr := &hierTrace{}
	jobs := make([]alloc.Job, hierJobs)
	for i := range jobs {
		jobs[i] = wl.Jobs[i].Job
		jobs[i].ID = alloc.JobID(fmt.Sprintf("job-%02d", i))
		jobs[i].Owner = tenants[i/hierPerGroup].ID
		jobs[i].Weight = 1
		tr.ids = append(tr.ids, jobs[i].ID)
		tr.entity = append(tr.entity, i/hierPerGroup)
		tr.norm = append(tr.norm, alloc.IsolatedRate(jobs[i].Rates, jobs[i].Gang, capa, 1))
	}
	rounds := hierEvery*(hierJobs-1) + 1 + hierTail
	for t := 0; t < rounds; t++ {
		now := float64(t) * cfg.round
		if t%hierEvery == 0 && t/hierEvery < hierJobs {
			// Work that never runs out: the figures follow shares, not finishes.
			if err := g.Apply(round.Arrive(now, jobs[t/hierEvery], math.MaxFloat64)); err != nil {
				return nil, err
			}
		}
		d, err := g.Decide(ctx, now)
		if err != nil {
			return nil, err
		}
		present := min(t/hierEvery+1, hierJobs)
		a, r := make([]float64, hierJobs), make([]float64, hierJobs)
		for m := 0; m < present; m++ {
			x, _ := g.Target(jobs[m].ID)
			for k, xk := range x {
				a[m] += xk * jobs[m].Rates[k] / tr.norm[m]
			}
		}
		for _, p := range d.Placements {
			m := slices.Index(tr.ids, p.Jobs[0])
			r[m] = jobs[m].Rates[slices.Index(types, p.Type)] / tr.norm[m]
		}
		tr.alloc, tr.ran = append(tr.alloc, a), append(tr.ran, r)
		tr.static = append(tr.static, staticPartition(jobs[:present], tenants, capa, tr.norm))
	}
	return tr, nil
}

// staticPartition returns each job's normalised throughput when every
// type is split among the entities present by weight, and each entity's
// part equally among its jobs, blind to speeds: the heterogeneity-agnostic
// way to enforce the same weights (Gavel §7.3, Figure 12(b)). A job cannot
// use more than all of its time: its share is capped there.
func staticPartition(jobs []alloc.Job, tenants []alloc.Tenant, c alloc.Capacity, norm []float64) []float64 {
	n := map[alloc.TenantID]int{}
	for _, j := range jobs {
		n[j.Owner]++
	}
	var total float64
	for _, t := range tenants {
		if n[t.ID] > 0 {
			total += t.Weight
		}
	}
	out := make([]float64, hierJobs)
	for m, j := range jobs {
		var weight float64
		for _, t := range tenants {
			if t.ID == j.Owner {
				weight = t.Weight
			}
		}
		share := weight / total / float64(n[j.Owner]) // of every type
		x := make([]float64, len(c.Types))
		var time float64
		for k, cnt := range c.Count {
			x[k] = share * cnt / float64(j.Gang)
			time += x[k]
		}
		for k := range x {
			if time > 1 {
				x[k] /= time
			}
			out[m] += x[k] * j.Rates[k] / norm[m]
		}
	}
	return out
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// windowMean returns each column's mean over the last n rows.
func windowMean(rows [][]float64, n int) []float64 {
	out := make([]float64, len(rows[0]))
	for _, r := range rows[len(rows)-n:] {
		for i, x := range r {
			out[i] += x / float64(n)
		}
	}
	return out
}

// plotHierarchy draws Figure 12/13(a), each job's share of the total
// normalised throughput over time as stacked bands (boundaries coloured by
// entity), and 12(b), the total against the static partition.
func plotHierarchy(dir, prefix string, tr *hierTrace) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := plot.New()
	p.Title.Text = "Share of the total normalised throughput, by job"
	p.X.Label.Text = "round"
	p.Y.Label.Text = "cumulative share"
	p.Y.Min, p.Y.Max = 0, 1
	cum := make([]float64, len(tr.alloc))
	for m := range tr.ids {
		xy := make(plotter.XYs, len(tr.alloc))
		for t, a := range tr.alloc {
			if s := sum(a); s > 0 {
				cum[t] += a[m] / s
			}
			xy[t] = plotter.XY{X: float64(t), Y: cum[t]}
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(tr.entity[m])
		l.Width = vg.Points(1)
		p.Add(l)
		if m%hierPerGroup == 0 {
			p.Legend.Add(fmt.Sprintf("entity %d (weight %d)", tr.entity[m], tr.entity[m]+1), l)
		}
	}
	p.Legend.Top = true
	share := filepath.Join(dir, prefix+"shares.png")
	if err := p.Save(6*vg.Inch, 4*vg.Inch, share); err != nil {
		return nil, err
	}
	rounds := make([]float64, len(tr.alloc))
	totals := [][]float64{make([]float64, len(tr.alloc)), make([]float64, len(tr.alloc))}
	for t := range tr.alloc {
		rounds[t] = float64(t)
		totals[0][t], totals[1][t] = sum(tr.alloc[t]), sum(tr.static[t])
	}
	total := filepath.Join(dir, prefix+"total.png")
	if err := plotLines(total, "Total normalised throughput", "round", "sum of jobs' normalised throughput",
		[]string{"heterogeneity-aware", "agnostic static partition"}, rounds, totals); err != nil {
		return nil, err
	}
	return []string{share, total}, nil
}
