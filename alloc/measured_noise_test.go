package alloc_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/speedup"
)

var noiseReport = flag.Bool("noise.report", false, "audit allocations made from measured medians against single runs (docs/benchmarks/oef.md)")

// TestMeasuredNoiseReport asks how exact an envy-free allocation needs to
// be, given how noisy the rates it is made from are. Gavel's job types
// measured on both an H100 and an H200 (data.Measured), each job its own
// user, on 8 K80s, P100s, V100s, H100s and H200s (Gavel's rates for the
// first three): each policy allocates from the median rates, and the
// allocation is audited against draws in which each rate measured in
// several runs is one of its runs, picked at random. Run with
// go test ./alloc -run MeasuredNoiseReport -v -noise.report.
func TestMeasuredNoiseReport(t *testing.T) {
	if !*noiseReport {
		t.Skip("run with -noise.report")
	}
	gavel, err := data.LoadThroughputs(data.Gavel(), "simulation_throughputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []*data.MeasuredRow
	for _, f := range []string{"h100.json", "h200.json"} {
		r, err := data.LoadMeasured(data.Measured(), f)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	var jobs []oefJob
	var runs [][][]float64 // runs[i][k]: the runs of job i's rate on type k; nil for one value
	for _, j := range gavel.JobTypes() {
		if j.Scale != 1 {
			continue
		}
		rates := make([]float64, 0, 5)
		cell := make([][]float64, 5)
		for _, g := range []string{"k80", "p100", "v100"} {
			r, _ := gavel.Isolated(g, j)
			rates = append(rates, r)
		}
		for k, row := range rows {
			r, ok := row.Rate(j.Model)
			if !ok {
				break
			}
			rates = append(rates, r)
			for _, mj := range row.Jobs {
				if mj.JobType == j.Model && len(mj.Runs) > 1 {
					cell[3+k] = mj.Runs
				}
			}
		}
		if len(rates) < 5 {
			continue // not measured on the H100
		}
		jobs = append(jobs, oefJob{owner: len(jobs), rates: rates})
		runs = append(runs, cell)
	}
	count := []float64{8, 8, 8, 8, 8}
	var dist []float64 // each run's distance from its median, relative
	for i := range runs {
		for k, rs := range runs[i] {
			for _, r := range rs {
				dist = append(dist, math.Abs(r/jobs[i].rates[k]-1))
			}
		}
	}
	abs := slices.Sorted(slices.Values(dist))
	t.Logf("%d jobs; %d runs of cells measured more than once: distance from their median %.3f at the median, %.3f at p90, %.3f at most",
		len(jobs), len(abs), stat.Median(abs), abs[len(abs)*9/10], abs[len(abs)-1])
	oneRun := func(rng *rand.Rand, i, k int, rate float64) float64 {
		if rs := runs[i][k]; rs != nil {
			return rs[rng.IntN(len(rs))]
		}
		return rate
	}
	p := oefProblem(t, count, nil, jobs)
	a, _ := allocateTimed(t, alloc.OEF{Mode: alloc.Cooperative}, p)
	auditDraws(t, "measured jobs, exact cooperative OEF, each rate one of its runs", p, a, oneRun)
	// The worst case over every rate between a cell's slowest and fastest
	// runs.
	lo, hi := make([]alloc.Linear, len(jobs)), make([]alloc.Linear, len(jobs))
	for i, j := range jobs {
		lo[i], hi[i] = slices.Clone(j.rates), slices.Clone(j.rates)
		for k, rs := range runs[i] {
			if rs != nil {
				lo[i][k], hi[i][k] = slices.Min(rs), slices.Max(rs)
			}
		}
	}
	worstWithin(t, "measured jobs, exact cooperative OEF, rates anywhere between their slowest and fastest runs", a, p.Capacity, lo, hi)

	// The 2,000 jobs of BenchmarkOEFCooperativeScale's noisy instance, each
	// of their rates moved as a real run moves from its median: by one of
	// the measured distances, with a random sign.
	noisy := oefNoisyJobs(2000, 1)
	runLike := func(rng *rand.Rand, _, _ int, rate float64) float64 {
		d := dist[rng.IntN(len(dist))]
		if rng.IntN(2) == 0 {
			d = -d
		}
		return rate * (1 + d)
	}
	// The same rates moved by at most 1%, as the runs of the GPU-bound jobs
	// are.
	withinOne := func(rng *rand.Rand, _, _ int, rate float64) float64 {
		return rate * (1 + 0.01*(2*rng.Float64()-1))
	}
	for _, tol := range []float64{0, 0.01, 0.02, 0.05} {
		pol := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{EnvyTolerance: tol}}
		p := oefProblem(t, []float64{160, 280, 280, 280}, nil, noisy)
		a, took := allocateTimed(t, pol, p)
		name := fmt.Sprintf("2,000 noisy jobs, cooperative OEF with EnvyTolerance %g (%.2g s)", tol, took.Seconds())
		auditDraws(t, name+", rates moved as runs", p, a, runLike)
		auditDraws(t, name+", rates moved by up to 1%", p, a, withinOne)
		lo, hi := p.Throughputs.Values(), p.Throughputs.Values()
		wlo, whi := make([]alloc.Linear, len(lo)), make([]alloc.Linear, len(hi))
		for i := range lo {
			for k := range lo[i] {
				lo[i][k] *= 0.99
				hi[i][k] *= 1.01
			}
			wlo[i], whi[i] = lo[i], hi[i]
		}
		worstWithin(t, name+", rates anywhere within 1%", a, p.Capacity, wlo, whi)
	}
}

// worstWithin logs the worst envy of a over every rate within [lo, hi]
// (EnvyFreenessWithin) and the smallest sharing-incentive margin on c
// (SharingIncentiveWithin).
func worstWithin(t *testing.T, name string, a *alloc.Allocation, c alloc.Capacity, lo, hi []alloc.Linear) {
	start := time.Now()
	r, err := alloc.EnvyFreenessWithin(a, lo, hi, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	si, err := alloc.SharingIncentiveWithin(a, c, lo, hi, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: worst envy %.4f (row %d of row %d; %.2g s), smallest sharing-incentive margin %.4f", name, r.MaxEnvy, r.Envier, r.Envied, took.Seconds(), si.Margin[si.Worst])
}

// allocateTimed returns pol's allocation of p and how long it took.
func allocateTimed(t *testing.T, pol alloc.Policy, p *alloc.Problem) (*alloc.Allocation, time.Duration) {
	start := time.Now()
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return a, time.Since(start)
}

// auditDraws audits a, p's allocation, against 200 draws of p's rates, each
// rate of job i on type k replaced by draw(rng, i, k, rate), and logs the
// envy on p's rates and over the draws.
func auditDraws(t *testing.T, name string, p *alloc.Problem, a *alloc.Allocation, draw func(rng *rand.Rand, i, k int, rate float64) float64) {
	given, err := alloc.EnvyFreeness(a, p.Valuations(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var envy, short []float64
	for range 200 {
		rates := p.Throughputs.Values()
		for i, row := range rates {
			for k, r := range row {
				row[k] = draw(rng, i, k, r)
			}
		}
		tp, err := speedup.New(p.Throughputs.Rows(), p.Capacity.Types, rates)
		if err != nil {
			t.Fatal(err)
		}
		q, err := alloc.NewProblem(p.Capacity, p.Tenants, p.Jobs, tp)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := alloc.EnvyFreeness(a, q.Valuations(), nil)
		if err != nil {
			t.Fatal(err)
		}
		si, err := alloc.SharingIncentive(a, q.Capacity, q.Valuations(), nil)
		if err != nil {
			t.Fatal(err)
		}
		envy, short = append(envy, ef.MaxEnvy), append(short, -si.Margin[si.Worst])
	}
	slices.Sort(envy)
	slices.Sort(short)
	t.Logf("%s: max envy %.2g on the rates allocated from; over 200 draws median %.4f, p95 %.4f, max %.4f; largest sharing-incentive shortfall %.4f",
		name, given.MaxEnvy, stat.Median(envy), envy[190], envy[199], short[199])
}
