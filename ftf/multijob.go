package ftf

import (
	"math"
	"sort"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/topology"
)

// JobInfo is Figure 7's JobInfo: what an app's hyper-parameter optimizer
// tells its agent about one job.
type JobInfo struct {
	ItersRemaining float64 // iterations the job still runs in the phase
	// IterTime is the serial (one-GPU) seconds per iteration, avgTimePerIter.
	// Zero means not yet known: a job of a later phase whose survivor is
	// not decided. The median IterTime of the jobs running now stands in
	// (section 4.3.2's "median job"; of an even number of jobs, the mean of
	// the middle two, a job that may not exist: the paper does not say).
	IterTime float64
	// Slowdown is the job's locality sensitivity S(G); the zero value means
	// topology.DefaultSlowdown().
	Slowdown topology.Slowdown
	// DemandMax is the job's own job_demand_max, the most GPUs it can use
	// at once. Zero means the app-wide cap (PhaseTime's demandMax,
	// AppInfo.JobDemandMax); a DemandMax above that cap counts as the cap.
	// A negative DemandMax is refused: PhaseTime is NaN, and RhoHalving and
	// RhoCurve return an *gpufair.InputError wrapping gpufair.ErrValue.
	DemandMax int
	// Rigid marks a gang: the job runs on exactly its cap of GPUs at once
	// (DemandMax, or PhaseTime's demandMax where that is smaller), never
	// on fewer, and waits until that many are free. False is the paper's
	// elastic job, on 1 GPU up to its cap.
	Rigid bool
}

// HalvingApp is the successive-halving half of Figure 7's API, implemented
// by an app's hyper-parameter optimizer. Phases are numbered from 0, the
// phase running now.
type HalvingApp interface {
	NumPhases() int
	JobsInPhase(phase int, p Placement) []JobInfo
}

// CurveApp is the performance-curve half of Figure 7's API: the running
// jobs, each with the iterations at which its most pessimistic forecast
// convergence curve stops it.
type CurveApp interface {
	JobsRemaining(p Placement) []JobInfo
}

// AppInfo holds the app-wide inputs of Themis' equation 2. Times in seconds.
type AppInfo struct {
	Elapsed float64 // T_current - T_start
	// Budget is B, the app's aggregate work in GPU-seconds.
	Budget       float64
	AppDemandMax int // the most GPUs the app can use at once, for T_cluster
	// JobDemandMax is the most GPUs any one job can use; a job whose
	// JobInfo.DemandMax is set can use no more than the smaller of the two.
	JobDemandMax int
	ClusterGPUs  int // R_C
	Contention   float64
}

// Validate reports non-positive or non-finite budget, contention, demands
// and cluster size, and a negative or non-finite elapsed time.
func (a AppInfo) Validate() error {
	switch {
	case !finiteNonNeg(a.Elapsed):
		return badInput("AppInfo.Elapsed", "", gpufair.ErrValue, "%v is not finite and non-negative", a.Elapsed)
	case !positiveFinite(a.Budget):
		return badInput("AppInfo.Budget", "", gpufair.ErrValue, "%v is not positive and finite", a.Budget)
	case a.AppDemandMax < 1:
		return badInput("AppInfo.AppDemandMax", "", gpufair.ErrValue, "%d is below 1", a.AppDemandMax)
	case a.JobDemandMax < 1:
		return badInput("AppInfo.JobDemandMax", "", gpufair.ErrValue, "%d is below 1", a.JobDemandMax)
	case a.ClusterGPUs < 1:
		return badInput("AppInfo.ClusterGPUs", "", gpufair.ErrValue, "%d is below 1", a.ClusterGPUs)
	case !positiveFinite(a.Contention):
		return badInput("AppInfo.Contention", "", gpufair.ErrValue, "%v is not positive and finite", a.Contention)
	}
	return nil
}

// Independent returns T_id = B / min(R_C, app_demand_max) · N_avg, or NaN
// for an a that Validate refuses (a cluster of 0 GPUs gave +Inf, a negative
// budget a negative time).
func (a AppInfo) Independent() float64 {
	if a.Validate() != nil {
		return math.NaN()
	}
	return a.independent()
}

// independent is Independent for an a that Validate takes.
func (a AppInfo) independent() float64 {
	return a.Budget / float64(min(a.ClusterGPUs, a.AppDemandMax)) * a.Contention
}

// HalvingModel chooses how equation 2 prices the phase running now.
type HalvingModel int

const (
	// Literal applies equation 2 as written: the jobs running now keep
	// their own iteration times; only undecided later jobs (IterTime 0)
	// take the median. ERRATA.md: this gives 133/125, 133/250 and 259/750
	// for Table 3's 4, 8 and 16 GPUs.
	Literal HalvingModel = iota
	// MedianAll prices every job, the running ones too, at the median
	// iteration time: the model behind Table 3's printed 1, 0.5 and 0.34.
	MedianAll
)

// RhoHalving returns rho(G) for a successive-halving app (equation 2):
// T_sh = elapsed + Σ_phases max_j T(G_j), each phase's jobs packed onto the
// placement's GPUs by PhaseTime, over T_id = B/min(R_C, app_demand_max)·N_avg.
// Section 4.3.2's survivors double their demand each phase (1 GPU, then 2,
// up to n); AppInfo.JobDemandMax is one cap for every phase, so a growing
// demand is set job by job (JobInfo.DemandMax in JobsInPhase's rows).
// A model other than Literal and MedianAll is an *gpufair.InputError on
// "HalvingModel" wrapping gpufair.ErrValue.
func RhoHalving(app HalvingApp, info AppInfo, p Placement, model HalvingModel) (float64, error) {
	if err := validateApp("HalvingApp", app == nil, info, p); err != nil {
		return 0, err
	}
	if model != Literal && model != MedianAll {
		return 0, badInput("HalvingModel", "", gpufair.ErrValue, "%d is neither Literal nor MedianAll", int(model))
	}
	n := app.NumPhases()
	if n < 0 {
		return 0, badInput("HalvingApp.NumPhases", "", gpufair.ErrValue, "%d phases", n)
	}
	phases := make([][]JobInfo, n)
	var known []float64
	for i := range phases {
		phases[i] = app.JobsInPhase(i, p)
		if err := validateJobs("HalvingApp.JobsInPhase", i, phases[i]); err != nil {
			return 0, err
		}
		if len(known) == 0 {
			for _, j := range phases[i] {
				if j.IterTime > 0 {
					known = append(known, j.IterTime)
				}
			}
		}
	}
	med := stat.Median(known)
	t := info.Elapsed
	for _, jobs := range phases {
		jobs = append([]JobInfo(nil), jobs...)
		for k := range jobs {
			if jobs[k].IterTime == 0 || model == MedianAll {
				if med == 0 && jobs[k].ItersRemaining > 0 {
					return 0, badInput("HalvingApp.JobsInPhase", "", gpufair.ErrEmpty, "no running job has a known iteration time for the median")
				}
				jobs[k].IterTime = med
			}
		}
		t += PhaseTime(jobs, p, info.JobDemandMax)
	}
	return ratio("HalvingApp", t, info.independent(), p)
}

// validateApp checks the inputs RhoHalving and RhoCurve share: an app
// (field names its interface; isNil whether it is nil), its AppInfo and the
// placement.
func validateApp(field string, isNil bool, info AppInfo, p Placement) error {
	if isNil {
		return badInput(field, "", gpufair.ErrEmpty, "nil app")
	}
	if err := info.Validate(); err != nil {
		return err
	}
	return p.Validate()
}

// RhoCurve returns rho(G) for a performance-curve app: the running jobs
// share the placement (packed as by PhaseTime) and the job forecast to finish
// last decides T_sh.
func RhoCurve(app CurveApp, info AppInfo, p Placement) (float64, error) {
	if err := validateApp("CurveApp", app == nil, info, p); err != nil {
		return 0, err
	}
	jobs := app.JobsRemaining(p)
	if err := validateJobs("CurveApp.JobsRemaining", -1, jobs); err != nil {
		return 0, err
	}
	for _, j := range jobs {
		if j.IterTime == 0 && j.ItersRemaining > 0 {
			return 0, badInput("CurveApp.JobsRemaining", "", gpufair.ErrValue, "a running job has no iteration time")
		}
	}
	return ratio("CurveApp", info.Elapsed+PhaseTime(jobs, p, info.JobDemandMax), info.independent(), p)
}

// validateJobs returns an *gpufair.InputError on field wrapping
// gpufair.ErrValue for the first job PhaseTime would refuse; phase, unless
// negative, is the jobs' phase, named in the message with the job's index.
func validateJobs(field string, phase int, jobs []JobInfo) error {
	for k, j := range jobs {
		if !finiteNonNeg(j.ItersRemaining) || !finiteNonNeg(j.IterTime) {
			return badInput(field, "", gpufair.ErrValue, "job %+v has a negative, NaN or infinite field", j)
		}
		if j.DemandMax < 0 {
			if phase >= 0 {
				return badInput(field, "", gpufair.ErrValue, "phase %d, job %d: DemandMax %d is negative", phase, k, j.DemandMax)
			}
			return badInput(field, "", gpufair.ErrValue, "job %d: DemandMax %d is negative", k, j.DemandMax)
		}
		if j.Slowdown != (topology.Slowdown{}) {
			if err := j.Slowdown.Validate(); err != nil {
				return badInput(field, "", gpufair.ErrValue, "%v", err)
			}
		}
	}
	return nil
}

// phaseJobs reports whether PhaseTime can price jobs: iterations and
// iteration times finite and not negative, demand caps not negative,
// slowdowns (unless the zero value, the default) positive and finite.
func phaseJobs(jobs []JobInfo) bool {
	for _, j := range jobs {
		if !finiteNonNeg(j.ItersRemaining) || !finiteNonNeg(j.IterTime) || j.DemandMax < 0 {
			return false
		}
		if j.Slowdown == (topology.Slowdown{}) {
			continue // the default
		}
		for _, x := range j.Slowdown {
			if !(x > 0) || math.IsInf(x, 1) {
				return false
			}
		}
	}
	return true
}

// exactSerialJobs is the largest number of jobs for which PhaseTime
// serialises jobs onto fewer GPUs by exact branch and bound; above it, the
// longest-processing-time-first rule (within 4/3 of optimal) packs them.
const exactSerialJobs = 12

// PhaseTime returns the time the slowest job of a phase takes on the
// placement, the hyper-parameter optimizer packing the jobs as well as it can:
//
//   - with at least as many GPUs as jobs, every job gets one GPU and each
//     further GPU goes to the job that currently finishes last, up to the
//     job's own cap: its DemandMax, or demandMax where that is 0 or larger
//     (equation 2's iter_time(G) = iter_time_serial·S(G) /
//     min(‖G‖₁, job_demand_max), the cap being each job's); a job on
//     g > 1 GPUs takes iters · iter_time · S(G) / g. Giving the next GPU
//     to the current maximum is optimal for this min-max, since each job's
//     time falls as its GPUs grow (and stops there once that job is at its
//     cap).
//   - with fewer GPUs than jobs, jobs run one after another on single GPUs
//     and are partitioned among the GPUs to minimise the latest finish
//     (exactly up to 12 jobs, longest-first beyond).
//   - a Rigid job (a gang) takes exactly its cap at once, never fewer: if
//     every gang and one GPU per elastic job fit, all start together and
//     the elastic jobs share the rest as above; otherwise jobs run in
//     waves, longest first, each as soon as its GPUs are free (a gang
//     larger than the placement: +Inf).
//
// A job's work is ItersRemaining · IterTime, so one whose IterTime is 0 (not
// yet known) has none: give it a stand-in first, as RhoHalving gives the
// median. A phase without work takes 0; with work and no GPUs, +Inf, as
// where the time overflows float64. A Locality beyond CrossRack counts as
// CrossRack (topology.Slowdown.At).
//
// PhaseTime returns no error: it is NaN for a job with a negative, NaN or
// infinite ItersRemaining or IterTime, a negative DemandMax or a Slowdown
// that is not positive and finite, a negative GPU count, or a demandMax
// below 1. A slowdown below 1 (a gang measured faster spread over servers
// than on one, as some of Gavel's rows are) is taken as given, though
// RhoHalving and RhoCurve refuse it.
func PhaseTime(jobs []JobInfo, p Placement, demandMax int) float64 {
	if p.GPUs < 0 || demandMax < 1 || !phaseJobs(jobs) {
		return math.NaN() // a NaN iteration count gave 0, a phase that took no time
	}
	work := make([]float64, 0, len(jobs))
	var slow []float64
	var caps []int // each job's cap on its GPUs, 1 to demandMax
	var rigid []bool
	anyRigid := false
	for _, j := range jobs {
		if w := j.ItersRemaining * j.IterTime; w > 0 {
			work = append(work, w)
			slow = append(slow, slowdownOr(j.Slowdown).At(p.Locality))
			c := demandMax
			if j.DemandMax > 0 {
				c = min(c, j.DemandMax)
			}
			caps = append(caps, c)
			rigid = append(rigid, j.Rigid)
			anyRigid = anyRigid || j.Rigid
		}
	}
	if len(work) == 0 {
		return 0
	}
	g := p.GPUs
	if g <= 0 {
		return math.Inf(1)
	}
	if anyRigid {
		return gangMakespan(work, slow, caps, rigid, g)
	}
	return spreadMakespan(work, slow, caps, g)
}

// spreadMakespan is PhaseTime's latest finish of elastic jobs on g GPUs.
func spreadMakespan(work, slow []float64, caps []int, g int) float64 {
	if g < len(work) {
		return serialMakespan(work, g)
	}
	// extra is min(g − len(work), Σ_k (caps[k] − 1)), the GPUs the greedy
	// can hand out, summed so that it stops at g − len(work) (the product
	// len(work)·(demandMax − 1) overflowed for a demandMax near
	// math.MaxInt, and the greedy ran for ever).
	extra := 0
	for _, c := range caps {
		if c-1 >= g-len(work)-extra {
			extra = g - len(work)
			break
		}
		extra += c - 1
	}
	if extra > greedyGPUs {
		return levelMakespan(work, slow, g, caps)
	}
	gpus := make([]int, len(work))
	time := func(k int) float64 {
		if gpus[k] == 1 {
			return work[k]
		}
		return work[k] * slow[k] / float64(gpus[k])
	}
	for k := range gpus {
		gpus[k] = 1
	}
	for left := g - len(work); left > 0; left-- {
		worst := 0
		for k := range work {
			if time(k) > time(worst) {
				worst = k
			}
		}
		if gpus[worst] >= caps[worst] {
			break // the job that finishes last can take no more
		}
		before := time(worst)
		gpus[worst]++
		if time(worst) >= before {
			gpus[worst]--
			break
		}
	}
	var t float64
	for k := range work {
		t = max(t, time(k))
	}
	return t
}

// gangMakespan is PhaseTime's latest finish when some jobs are rigid: a
// rigid job of cap c takes work·slow/c on exactly c GPUs (work, on one).
// If every gang, and one GPU for each elastic job, fit at once, all start
// together and the elastic jobs share the GPUs left as spreadMakespan
// shares them. Otherwise the jobs run in waves: longest first, each as soon
// as its GPUs (one for an elastic job) are free, a later job starting
// before an earlier one that does not fit yet (list scheduling). A gang
// larger than g never runs: +Inf.
func gangMakespan(work, slow []float64, caps []int, rigid []bool, g int) float64 {
	width := make([]int, len(work))
	dur := make([]float64, len(work))
	var ew, es []float64 // the elastic jobs' work and slowdowns
	var ec []int
	left, fit := g, true
	for k, w := range work {
		width[k], dur[k] = 1, w
		if rigid[k] {
			if width[k] = caps[k]; width[k] > g {
				return math.Inf(1)
			}
			if width[k] > 1 {
				dur[k] = w * slow[k] / float64(width[k])
			}
		} else {
			ew, es, ec = append(ew, w), append(es, slow[k]), append(ec, caps[k])
		}
		if fit = fit && width[k] <= left; fit {
			left -= width[k]
		}
	}
	t := 0.0
	if fit {
		for k := range work {
			if rigid[k] {
				t = max(t, dur[k])
			}
		}
		if len(ew) > 0 {
			t = max(t, spreadMakespan(ew, es, ec, left+len(ew)))
		}
		return t
	}
	pending := make([]int, len(work))
	for k := range pending {
		pending[k] = k
	}
	sort.SliceStable(pending, func(a, b int) bool { return dur[pending[a]] > dur[pending[b]] })
	type run struct {
		end   float64
		width int
	}
	var running []run
	free, now := g, 0.0
	for {
		rest := pending[:0]
		for _, k := range pending {
			if width[k] <= free {
				free -= width[k]
				running = append(running, run{now + dur[k], width[k]})
				t = max(t, now+dur[k])
			} else {
				rest = append(rest, k)
			}
		}
		if pending = rest; len(pending) == 0 {
			return t
		}
		// The next job to end frees its GPUs (one runs: every gang fits g).
		next := 0
		for i, r := range running {
			if r.end < running[next].end {
				next = i
			}
		}
		now, free = running[next].end, free+running[next].width
		running = append(running[:next], running[next+1:]...)
	}
}

// serialMakespan partitions work among g < len(work) single GPUs to minimise
// the largest sum.
func serialMakespan(work []float64, g int) float64 {
	w := append([]float64(nil), work...)
	sort.Sort(sort.Reverse(sort.Float64Slice(w)))
	load := make([]float64, g)
	for _, x := range w { // longest processing time first
		k := 0
		for i := range load {
			if load[i] < load[k] {
				k = i
			}
		}
		load[k] += x
	}
	best := 0.0
	for _, l := range load {
		best = max(best, l)
	}
	if len(w) > exactSerialJobs {
		return best
	}
	var total float64
	for _, x := range w {
		total += x
	}
	lower := max(w[0], total/float64(g))
	for i := range load {
		load[i] = 0
	}
	var dfs func(i int, cur float64)
	dfs = func(i int, cur float64) {
		if cur >= best || best <= lower {
			return
		}
		if i == len(w) {
			best = cur
			return
		}
		for k := range load {
			if k > 0 && load[k] == load[k-1] {
				continue // same load as its neighbour: a symmetric branch
			}
			if load[k]+w[i] >= best {
				continue
			}
			load[k] += w[i]
			dfs(i+1, max(cur, load[k]))
			load[k] -= w[i]
		}
	}
	dfs(0, 0)
	return best
}

// Phases is a successive-halving plan an optimizer can hand its agent: it
// implements HalvingApp with fixed jobs per phase (undecided jobs carry
// IterTime 0), whatever the placement.
type Phases [][]JobInfo

// NumPhases returns len(p).
func (p Phases) NumPhases() int { return len(p) }

// JobsInPhase returns the jobs of phase i.
func (p Phases) JobsInPhase(i int, _ Placement) []JobInfo { return p[i] }

// Running is a performance-curve app's running jobs; it implements CurveApp.
type Running []JobInfo

// JobsRemaining returns the jobs.
func (r Running) JobsRemaining(Placement) []JobInfo { return r }

// greedyGPUs bounds the GPUs PhaseTime hands out one at a time; beyond,
// levelMakespan finds the same optimum in time independent of the count
// (a phase with 2^40 GPUs took 2^40 steps).
const greedyGPUs = 1 << 12

// levelMakespan returns the least T such that every job finishes within T
// on GPUs that add up to at most g, job k on 1 to caps[k] of them (on
// gpus > 1 a job takes work·slow/gpus, on one GPU work), and a job whose
// slowdown is 2 or more on one GPU (the greedy gives it no second GPU, on
// which it would be no faster): the optimum PhaseTime's greedy reaches,
// found by bisection over T on the bits of float64, then evaluated on the
// allocation that meets it.
func levelMakespan(work, slow []float64, g int, caps []int) float64 {
	// need returns the latest finish of the GPUs T needs, or ok false when
	// some job cannot finish within T or they add up to more than g. It
	// counts down the GPUs left, so that no sum overflows.
	need := func(T float64) (latest float64, ok bool) {
		left := g
		for k, w := range work {
			if w <= T {
				if left < 1 {
					return 0, false
				}
				left--
				latest = max(latest, w)
				continue
			}
			if slow[k] >= 2 { // a second GPU does not help: the greedy stops there
				return 0, false
			}
			n := math.Ceil(w * slow[k] / T)
			if n < 2 {
				n = 2
			}
			// Compare before converting: from 2^63 on (or past a 32-bit
			// int), int(n) is not n; float64(m) may round m up.
			if m := min(caps[k], left); n >= 0x1p63 || n > float64(m) || int(n) > m {
				return 0, false
			}
			left -= int(n)
			latest = max(latest, w*slow[k]/n)
		}
		return latest, true
	}
	hi := 0.0
	for _, w := range work {
		hi = max(hi, w)
	}
	lo := 0.0
	for range 2000 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if _, ok := need(mid); ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	latest, _ := need(hi)
	return latest
}
