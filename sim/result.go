package sim

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// JobResult is one job's outcome. Times are in seconds; Start, Finish, JCT
// and Rho are NaN for a job that never ran or did not finish.
type JobResult struct {
	ID    alloc.JobID
	Owner alloc.TenantID
	Kind  string
	Gang  int
	Phase int
	// Arrival is when the job arrived: its Arrival in the workload, or for
	// a job of a later phase when its barrier lifted (Job.Phase; its
	// Arrival in the workload if that never happened).
	Arrival float64
	Start   float64 // start of the first round the job ran in
	Finish  float64
	Steps   float64 // work to do
	Done    float64 // steps done
	Rounds  int     // rounds the job ran
	// Restarts counts the leases in which it resumed from a checkpoint
	// (see Settings.Restart).
	Restarts int
	// GPUSeconds is the GPU time the job held: over its leases, the slots
	// it was placed on (fewer than Gang for an Elastic job) over the jobs
	// sharing them, times the seconds of the lease up to its end, a
	// failure or the job's finish, seconds lost to a restart included.
	GPUSeconds float64
	// Contention is N̄, the mean number of jobs in the system over the
	// job's lifetime (to the end of the run if it did not finish).
	Contention float64
	// Isolated is T_id, the time the job would take alone on a 1/N̄ share
	// of the cluster (see the package doc).
	Isolated float64
	JCT      float64 // Finish − Arrival
	Rho      float64 // JCT / Isolated, finish-time fairness
}

// Finished reports whether the job finished.
func (j *JobResult) Finished() bool { return !math.IsNaN(j.Finish) }

// Result is the outcome of a run.
type Result struct {
	Scheduler string
	Types     []topology.GPUType
	Count     []int   // GPUs of each type
	Round     float64 // round length, seconds
	Rounds    int     // rounds simulated (rounds without jobs are skipped)
	End       float64 // end of the last round simulated
	// Jobs holds every job of the workload, in the workload's (Arrival,
	// ID) order (a job behind a barrier may arrive later than that order
	// says: see Job.Phase).
	Jobs []JobResult
	// History holds every round simulated, in order.
	History []RoundStat
	// MeasureFrom and MeasureTo are the measured jobs, [From, To) in Jobs.
	MeasureFrom, MeasureTo int
	// Apps holds every app, by first arrival then name (see AppResult).
	Apps []AppResult
}

// AppResult is one app's outcome: Themis' unit of fairness (NSDI'20,
// section 2.1), the jobs of one owner (a job with no Owner is an app of its
// own). Times are in seconds; Finish, JCT and Rho are NaN unless every job
// of the app finished.
type AppResult struct {
	App     alloc.TenantID
	Jobs    int
	Arrival float64 // its first job's arrival
	Finish  float64 // its last job's finish
	// Work is B, the app's work in GPU-seconds: Σ steps × gang / rate over
	// its jobs, each on its fastest type.
	Work float64
	// Demand is app_demand_max, the most GPUs its jobs can use at once:
	// the sum of their gangs, or, for an app whose jobs have phases
	// (Job.Phase), the largest such sum over its phases.
	Demand int
	// Contention is N_avg, the mean number of apps in the system (arrived,
	// not finished) over the app's lifetime.
	Contention float64
	// Isolated is T_id = B / min(R_C, Demand) · N_avg, Themis' equations 1
	// and 2, R_C being the cluster's GPUs.
	Isolated   float64
	JCT, Rho   float64
	GPUSeconds float64 // held by its jobs
}

// RoundStat is what one round's decision did.
type RoundStat struct {
	Start float64 // seconds
	// Placements counts the decision's placements (gangs); Restarts those
	// that resumed from a checkpoint: not marked Renewed, with a job that
	// ran before (see Settings.Restart); Shared those of more than one job
	// (space sharing).
	Placements, Restarts, Shared int
	// Partial reports a decision the scheduler's time budget cut short.
	Partial bool
}

// Measured returns the measured jobs (a subslice of Jobs): those of
// [MeasureFrom, MeasureTo) that Jobs holds, as WriteCSV marks them; none
// for a nil r.
func (r *Result) Measured() []JobResult {
	if r == nil {
		return nil
	}
	from, to := max(r.MeasureFrom, 0), min(r.MeasureTo, len(r.Jobs))
	if from >= to {
		return nil // a Result built or read elsewhere sliced out of range
	}
	return r.Jobs[from:to]
}

func (r *run) result() *Result {
	res := &Result{
		Scheduler: r.name, Types: slices.Clone(r.types), Count: slices.Clone(r.count),
		Round: r.set.Round, Rounds: r.rounds, End: r.end, History: r.history,
		Jobs: make([]JobResult, len(r.jobs)), MeasureFrom: r.set.MeasureFrom, MeasureTo: r.set.MeasureTo,
	}
	arr, fin := make([]float64, 0, len(r.jobs)), make([]float64, 0, len(r.jobs))
	for i := range r.jobs {
		if a := r.jobs[i].arrival; !math.IsInf(a, 1) { // a job still behind a barrier never arrived
			arr, fin = append(arr, a), append(fin, r.jobs[i].finish)
		}
	}
	cont := newContention(arr, fin)
	for i := range r.jobs {
		js := &r.jobs[i]
		j := js.job
		at := js.arrival
		if math.IsInf(at, 1) {
			at = j.Arrival
		}
		jr := JobResult{
			ID: j.ID, Owner: j.owner(), Kind: j.Kind, Gang: j.Gang, Phase: j.Phase, Arrival: at,
			Start: js.start, Finish: js.finish, Steps: j.Steps, Done: j.Steps - js.remaining,
			Rounds: js.ran, Restarts: js.restarts, GPUSeconds: js.service, JCT: math.NaN(), Rho: math.NaN(),
		}
		end := js.finish
		if math.IsNaN(end) {
			end = math.Max(r.end, at)
		}
		jr.Contention = cont.mean(at, end)
		jr.Isolated = isolatedTime(j, r.count, jr.Contention)
		if jr.Finished() {
			jr.JCT = js.finish - at
			jr.Rho = jr.JCT / jr.Isolated
		}
		res.Jobs[i] = jr
	}
	res.Apps = r.apps(res.Jobs)
	return res
}

// apps groups the job results by owner (see AppResult).
func (r *run) apps(jobs []JobResult) []AppResult {
	index := map[alloc.TenantID]int{}
	var out []AppResult
	var phaseDemand []map[int]int // per app, the sum of the gangs of each phase
	gpus := 0
	for _, n := range r.count {
		gpus += n
	}
	for i := range jobs {
		jr, j := &jobs[i], r.jobs[i].job
		a, ok := index[jr.Owner]
		if !ok {
			a = len(out)
			index[jr.Owner] = a
			out = append(out, AppResult{App: jr.Owner, Arrival: jr.Arrival, Finish: jr.Finish})
			phaseDemand = append(phaseDemand, map[int]int{})
		}
		app := &out[a]
		app.Jobs++
		app.Arrival = min(app.Arrival, jr.Arrival)
		if jr.Finished() && !math.IsNaN(app.Finish) {
			app.Finish = max(app.Finish, jr.Finish)
		} else {
			app.Finish = math.NaN()
		}
		app.Work += j.Steps * float64(j.Gang) / slices.Max(j.Rates)
		phaseDemand[a][j.Phase] += j.Gang
		app.Demand = max(app.Demand, phaseDemand[a][j.Phase])
		app.GPUSeconds += jr.GPUSeconds
	}
	slices.SortStableFunc(out, func(a, b AppResult) int {
		if c := cmp.Compare(a.Arrival, b.Arrival); c != 0 {
			return c
		}
		return strings.Compare(string(a.App), string(b.App))
	})
	arr, fin := make([]float64, len(out)), make([]float64, len(out))
	for i, a := range out {
		arr[i], fin[i] = a.Arrival, a.Finish
	}
	cont := newContention(arr, fin)
	for i := range out {
		a := &out[i]
		end := a.Finish
		if math.IsNaN(end) {
			end = math.Max(r.end, a.Arrival)
		}
		a.Contention = cont.mean(a.Arrival, end)
		a.Isolated = a.Work / float64(min(gpus, a.Demand)) * a.Contention
		a.JCT, a.Rho = math.NaN(), math.NaN()
		if !math.IsNaN(a.Finish) {
			a.JCT = a.Finish - a.Arrival
			a.Rho = a.JCT / a.Isolated
		}
	}
	return out
}

// isolatedTime returns T_id: the job's steps over its isolated rate.
func isolatedTime(j *Job, count []int, n float64) float64 {
	return j.Steps / isolatedRate(j, count, n)
}

// isolatedRate returns the job's throughput on a 1/n share of the cluster:
// x_k = count_k/(n·gang) of the time on type k, scaled to Σ_k x_k = 1 when
// above.
func isolatedRate(j *Job, count []int, n float64) float64 {
	c := alloc.Capacity{Count: make([]float64, len(count))}
	for k, x := range count {
		c.Count[k] = float64(x)
	}
	return alloc.IsolatedRate(j.Rates, j.Gang, c, n)
}

// contention answers ∫_a^b n(t) dt, with n(t) the number of jobs arrived at
// or before t and not finished before t, from the sorted arrival and finish
// times and their prefix sums: ∫_0^x A(t) dt = Σ_{a_i < x} (x − a_i).
type contention struct {
	arr, fin       []float64
	arrSum, finSum []float64 // prefix sums
}

// newContention counts what arrives at arr[i] and finishes at fin[i] (NaN:
// never).
func newContention(arr, fin []float64) *contention {
	c := &contention{arr: slices.Clone(arr)}
	for _, f := range fin {
		if !math.IsNaN(f) {
			c.fin = append(c.fin, f)
		}
	}
	sort.Float64s(c.arr)
	sort.Float64s(c.fin)
	c.arrSum, c.finSum = prefix(c.arr), prefix(c.fin)
	return c
}

func prefix(x []float64) []float64 {
	s := make([]float64, len(x)+1)
	for i, v := range x {
		s[i+1] = s[i] + v
	}
	return s
}

// area returns Σ_{v_i < x} (x − v_i).
func area(v, sum []float64, x float64) float64 {
	n := sort.SearchFloat64s(v, x)
	return float64(n)*x - sum[n]
}

// mean returns (1/(b−a))·∫_a^b n(t) dt, or n(a) when b = a.
func (c *contention) mean(a, b float64) float64 {
	if b <= a {
		// A job that finished the moment it arrived saw the jobs present then.
		arrived := sort.Search(len(c.arr), func(i int) bool { return c.arr[i] > a })
		gone := sort.SearchFloat64s(c.fin, a)
		return float64(arrived - gone)
	}
	in := area(c.arr, c.arrSum, b) - area(c.arr, c.arrSum, a)
	out := area(c.fin, c.finSum, b) - area(c.fin, c.finSum, a)
	return (in - out) / (b - a)
}
