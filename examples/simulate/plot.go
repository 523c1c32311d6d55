package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/gpufair/gpufair/sim"
)

// plotCDFs writes the CDFs of JCT (hours, log scale) and of rho over the
// measured finished jobs of each result, one line per mechanism, to
// dir/<prefix>jct_cdf.png and dir/<prefix>rho_cdf.png.
func plotCDFs(dir, prefix string, results []*sim.Result) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, m := range []struct {
		file, title, x string
		log            bool
		value          func(j sim.JobResult) float64
	}{
		{"jct_cdf.png", "Job completion time", "JCT (hours, log scale)", true, func(j sim.JobResult) float64 { return j.JCT / 3600 }},
		{"rho_cdf.png", "Finish-time fairness", "rho = JCT / time alone on a 1/N share (log scale)", true, func(j sim.JobResult) float64 { return j.Rho }},
	} {
		p := plot.New()
		p.Title.Text = m.title
		p.X.Label.Text = m.x
		p.Y.Label.Text = "fraction of jobs"
		if m.log {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = doublingTicks{}
		}
		p.Legend.Top, p.Legend.Left = false, false
		var lines []any
		for _, r := range results {
			var v []float64
			for _, j := range r.Measured() {
				if j.Finished() && j.Rho > 0 {
					v = append(v, m.value(j))
				}
			}
			lines = append(lines, r.Scheduler, cdf(v))
		}
		if err := plotutil.AddLines(p, lines...); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, prefix+m.file)
		if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}

// doublingTicks marks powers of two (…, 0.25, 0.5, 1, 2, 4, …) on a log
// axis, which labels ranges narrower than a decade, unlike plot.LogTicks.
type doublingTicks struct{}

// Ticks returns a labelled tick at every power of two in [lo, hi].
func (doublingTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for x := math.Pow(2, math.Floor(math.Log2(lo))); x <= hi; x *= 2 {
		if x >= lo {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
	}
	return ticks
}

// cdf returns the empirical CDF of v as a step line.
func cdf(v []float64) plotter.XYs {
	v = slices.Clone(v)
	slices.Sort(v)
	xy := make(plotter.XYs, 0, 2*len(v))
	n := float64(len(v))
	for i, x := range v {
		xy = append(xy, plotter.XY{X: x, Y: float64(i) / n}, plotter.XY{X: x, Y: float64(i+1) / n})
	}
	return xy
}

// plotSweep writes one line per mechanism of y[m][i] against x[i], like
// Gavel's Figure 9(a), to path; NaN points are left out.
func plotSweep(path, title, xLabel, yLabel string, names []string, x []float64, y [][]float64) error {
	return linePlot(path, title, xLabel, yLabel, names, x, y, true)
}

// plotLines is plotSweep without point markers, for long time series.
func plotLines(path, title, xLabel, yLabel string, names []string, x []float64, y [][]float64) error {
	return linePlot(path, title, xLabel, yLabel, names, x, y, false)
}

// linePlot writes one line per name of y[m][i] against x[i] to path, with
// a marker at each point if points; NaN points are left out.
func linePlot(path, title, xLabel, yLabel string, names []string, x []float64, y [][]float64, points bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, points
	var lines []any
	for m, name := range names {
		xy := make(plotter.XYs, 0, len(x))
		for i, v := range x {
			if !math.IsNaN(y[m][i]) {
				xy = append(xy, plotter.XY{X: v, Y: y[m][i]})
			}
		}
		lines = append(lines, name, xy)
	}
	add, width := plotutil.AddLinePoints, 6*vg.Inch
	if !points {
		add, width = plotutil.AddLines, 7*vg.Inch
	}
	if err := add(p, lines...); err != nil {
		return err
	}
	return p.Save(width, 4*vg.Inch, path)
}
