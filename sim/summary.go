package sim

import (
	"math"
	"slices"
)

// Summary is the metrics of a run that the papers report. JCT and rho
// statistics are over the measured jobs that finished, NaN if none did;
// makespan, GPU time and utilisation are over every job, 0 if there is
// none.
type Summary struct {
	Scheduler string
	Measured  int // jobs measured (Result.Measured)
	Finished  int // measured jobs that finished
	// Average and percentiles of the job completion time, seconds.
	AvgJCT, P50JCT, P95JCT, P99JCT, MaxJCT float64
	// Average, percentiles and maximum of finish-time fairness rho.
	AvgRho, P50Rho, P95Rho, P99Rho, MaxRho float64
	// SharingIncentive is the fraction of finished measured jobs with
	// rho ≤ 1 (Themis' sharing incentive), 0 if none finished.
	SharingIncentive float64
	// Makespan runs from the first arrival to the last finish (or the end
	// of the run, if a job did not finish), seconds.
	Makespan float64
	// GPUSeconds is the GPU time held by all jobs (JobResult.GPUSeconds);
	// Utilisation is GPUSeconds / (GPUs × Makespan), 0 if Makespan is.
	GPUSeconds, Utilisation float64
	// Restarts counts the placements (gangs) that resumed from a
	// checkpoint, over the whole run. RestartShare and MaxRestartShare are
	// the mean and the largest share of a round's placements that
	// restarted, over the rounds with placements: the cost of preemption.
	Restarts                      int
	RestartShare, MaxRestartShare float64
	// SharedShare is the share of all placements, over the whole run, that
	// held more than one job (space sharing), 0 without placements.
	SharedShare float64
	// Partial counts the rounds whose decision the scheduler's time budget
	// cut short.
	Partial int
}

// Summary returns the run's metrics. Percentiles interpolate linearly
// between order statistics (the definition numpy uses by default). A nil
// r is summarised as an empty Result.
func (r *Result) Summary() Summary {
	if r == nil {
		r = &Result{} // a nil Result panicked
	}
	measured := r.Measured()
	s := Summary{Scheduler: r.Scheduler, Measured: len(measured)}
	var jct, rho []float64
	for _, j := range measured {
		if j.Finished() {
			jct = append(jct, j.JCT)
			rho = append(rho, j.Rho)
		}
	}
	s.Finished = len(jct)
	slices.Sort(jct)
	slices.Sort(rho)
	s.AvgJCT, s.P50JCT, s.P95JCT, s.P99JCT, s.MaxJCT = mean(jct), Percentile(jct, 50), Percentile(jct, 95), Percentile(jct, 99), Percentile(jct, 100)
	s.AvgRho, s.P50Rho, s.P95Rho, s.P99Rho, s.MaxRho = mean(rho), Percentile(rho, 50), Percentile(rho, 95), Percentile(rho, 99), Percentile(rho, 100)
	if len(rho) > 0 {
		n, _ := slices.BinarySearch(rho, math.Nextafter(1, 2))
		s.SharingIncentive = float64(n) / float64(len(rho))
	}
	first, last := math.Inf(1), math.Inf(-1)
	for _, j := range r.Jobs {
		first = math.Min(first, j.Arrival)
		end := j.Finish
		if !j.Finished() {
			end = r.End
		}
		last = math.Max(last, end)
		s.GPUSeconds += j.GPUSeconds
	}
	if len(r.Jobs) > 0 { // with none, last − first was −Inf
		s.Makespan = last - first
	}
	var shares, n float64
	var placed, shared int
	for _, h := range r.History {
		placed, shared = placed+h.Placements, shared+h.Shared
		s.Restarts += h.Restarts
		if h.Partial {
			s.Partial++
		}
		if h.Placements > 0 {
			x := float64(h.Restarts) / float64(h.Placements)
			shares += x
			n++
			s.MaxRestartShare = math.Max(s.MaxRestartShare, x)
		}
	}
	if n > 0 {
		s.RestartShare = shares / n
	}
	if placed > 0 {
		s.SharedShare = float64(shared) / float64(placed)
	}
	var gpus int
	for _, n := range r.Count {
		gpus += n
	}
	if s.Makespan > 0 {
		s.Utilisation = s.GPUSeconds / (float64(gpus) * s.Makespan)
	}
	return s
}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of sorted, by
// linear interpolation between the closest ranks: with h = (n−1)·p/100, it
// is sorted[⌊h⌋] + (h−⌊h⌋)·(sorted[⌊h⌋+1] − sorted[⌊h⌋]). A p below 0
// counts as 0, one above 100 as 100. It returns NaN for an empty slice or
// a NaN p.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	p = min(max(p, 0), 100) // outside [0, 100], ⌊h⌋ fell outside the slice or overflowed int
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// AppSummary is the metrics of a run over its apps (Result.Apps), as Themis
// reports them: completion time and finish-time fairness per app.
type AppSummary struct {
	Apps     int
	Finished int // apps whose every job finished
	// Average completion time (first arrival to last finish), seconds.
	AvgJCT float64
	// Average, 95th percentile and maximum of the apps' rho.
	AvgRho, P95Rho, MaxRho float64
	// SharingIncentive is the fraction of finished apps with rho ≤ 1.
	SharingIncentive float64
}

// AppSummary returns the metrics over the apps that finished: NaN
// averages, percentiles and maximum if none did. A nil r is summarised as
// an empty Result.
func (r *Result) AppSummary() AppSummary {
	if r == nil {
		r = &Result{}
	}
	s := AppSummary{Apps: len(r.Apps)}
	var jct, rho []float64
	for _, a := range r.Apps {
		if !math.IsNaN(a.Rho) {
			jct = append(jct, a.JCT)
			rho = append(rho, a.Rho)
		}
	}
	s.Finished = len(rho)
	slices.Sort(rho)
	s.AvgJCT, s.AvgRho, s.P95Rho, s.MaxRho = mean(jct), mean(rho), Percentile(rho, 95), Percentile(rho, 100)
	if len(rho) > 0 {
		n, _ := slices.BinarySearch(rho, math.Nextafter(1, 2))
		s.SharingIncentive = float64(n) / float64(len(rho))
	}
	return s
}
