package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/topology"
)

// GavelTypes returns Gavel's GPU types, named as in its data: k80, p100 and
// v100, slowest first.
func GavelTypes() []topology.GPUType { return []topology.GPUType{"k80", "p100", "v100"} }

// Rates returns job type jt's measured throughputs on each of types (named
// as Gavel's data names them): on one server, and spread over servers
// (Gavel's "_unconsolidated" measurements; nil for a single-GPU job, and a
// type without that measurement keeps its one-server rate). ok is false if
// a type has no measurement for jt.
func Rates(tp *data.Throughputs, types []topology.GPUType, jt data.JobType) (rates, spread []float64, ok bool) {
	rates = make([]float64, len(types))
	for k, t := range types {
		if rates[k], ok = tp.Isolated(string(t), jt); !ok {
			return nil, nil, false
		}
	}
	if jt.Scale == 1 {
		return rates, nil, true
	}
	spread = slices.Clone(rates)
	for k, t := range types {
		if r, ok := tp.Isolated(string(t)+"_unconsolidated", jt); ok {
			spread[k] = r
		}
	}
	return rates, spread, true
}

// GavelColocation returns Settings.Colocated from Gavel's measured
// co-located throughputs (tp.Pair), for jobs whose Kind names a model of
// tp and whose gang is its scale factor, as Generate and ReadTrace make
// them; types are named as in tp.
func GavelColocation(tp *data.Throughputs) func(t topology.GPUType, a, b *Job) (float64, float64, bool) {
	return func(t topology.GPUType, a, b *Job) (float64, float64, bool) {
		return tp.Pair(string(t), data.JobType{Model: a.Kind, Scale: a.Gang}, data.JobType{Model: b.Kind, Scale: b.Gang})
	}
}

// GenerateSettings describe a synthetic workload drawn the way Gavel's
// simulator draws one (OSDI'20, section 7.1, and its code).
type GenerateSettings struct {
	// Jobs is the number of jobs, at least 1.
	Jobs int
	// Rate is the mean arrival rate in jobs per hour (a Poisson process,
	// the first job arriving at time 0); 0 means every job arrives at time 0
	// (Gavel's "static" trace).
	Rate float64
	// Multi draws gangs as in Gavel's continuous-multiple trace: 1, 2, 4 or
	// 8 GPUs with probabilities 0.7, 0.1, 0.15 and 0.05, for job types
	// measured at that scale (the others keep 1 GPU, as in Gavel's code).
	// Otherwise every job has one GPU (continuous-single).
	Multi bool
	// Types are the GPU types, named as in Gavel's data; nil means
	// GavelTypes().
	Types []topology.GPUType
}

// MaxJobs is the most jobs Generate draws: a workload is held in memory.
const MaxJobs = 1 << 24

// Generate draws a workload as Gavel's simulator does: a model uniformly
// among the measured ones (26 in Gavel's data) that run on the last of
// s.Types (the reference, V100 by default); a gang (see Multi); a duration
// of 60·10^u seconds on the reference type, u uniform on [1.5, 3] with
// probability 0.8 and on [3, 4] otherwise; steps = duration × the job's
// throughput on the reference type; Poisson arrivals at s.Rate. Job IDs are
// the arrival order, zero-padded. All randomness comes from src, so a seed
// gives the same workload. It returns an *gpufair.InputError for settings out
// of range, among them a Rate so small that arrival times overflow.
func Generate(tp *data.Throughputs, s GenerateSettings, src rand.Source) (*Workload, error) {
	types := s.Types
	if types == nil {
		types = GavelTypes()
	}
	switch {
	case tp == nil:
		return nil, gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "nil throughputs")
	case src == nil:
		return nil, gpufair.Invalid("Source", "", gpufair.ErrEmpty, "nil random source")
	case s.Jobs < 1:
		return nil, gpufair.Invalid("GenerateSettings.Jobs", "", gpufair.ErrValue, "%d jobs", s.Jobs)
	case s.Jobs > MaxJobs:
		return nil, gpufair.Invalid("GenerateSettings.Jobs", "", gpufair.ErrTooLarge, "%d jobs, more than %d", s.Jobs, MaxJobs)
	case !finiteNonNeg(s.Rate):
		return nil, gpufair.Invalid("GenerateSettings.Rate", "", gpufair.ErrValue, "rate %v", s.Rate)
	case len(types) == 0:
		return nil, gpufair.Invalid("GenerateSettings.Types", "", gpufair.ErrEmpty, "no GPU types")
	}
	ref := string(types[len(types)-1])
	models := gavelModels(tp, types, ref)
	if len(models) == 0 {
		return nil, gpufair.Invalid("GenerateSettings.Types", ref, gpufair.ErrEmpty, "no job type runs on the reference type")
	}
	rng := rand.New(src)
	w := &Workload{Types: slices.Clone(types), Jobs: make([]Job, s.Jobs)}
	width := len(fmt.Sprint(s.Jobs - 1))
	var now float64
	for i := range w.Jobs {
		if i > 0 && s.Rate > 0 {
			now += rng.ExpFloat64() * 3600 / s.Rate
			if math.IsInf(now, 0) {
				// A rate of 1e-320 an hour gave arrivals at +Inf.
				return nil, gpufair.Invalid("GenerateSettings.Rate", "", gpufair.ErrValue, "rate %v: job %d's arrival overflows", s.Rate, i)
			}
		}
		jt := data.JobType{Model: models[rng.IntN(len(models))], Scale: 1}
		if s.Multi {
			if g := gavelScale(rng); g > 1 {
				big := data.JobType{Model: jt.Model, Scale: g}
				if r, _, ok := Rates(tp, types, big); ok && r[len(r)-1] > 0 {
					jt = big
				}
			}
		}
		dur := gavelDuration(rng)
		rates, spread, _ := Rates(tp, types, jt)
		w.Jobs[i] = Job{
			Job:  alloc.Job{ID: alloc.JobID(fmt.Sprintf("%0*d", width, i)), Gang: jt.Scale, Rates: rates},
			Kind: jt.Model, Arrival: now, Steps: dur * rates[len(rates)-1], Spread: spread,
		}
	}
	return w, nil
}

// gavelModels returns the models measured at one GPU on every type and
// running on the reference type, sorted.
func gavelModels(tp *data.Throughputs, types []topology.GPUType, ref string) []string {
	var models []string
	for _, jt := range tp.JobTypes() {
		if jt.Scale != 1 || slices.Contains(models, jt.Model) {
			continue
		}
		if _, _, ok := Rates(tp, types, jt); !ok {
			continue
		}
		if r, _ := tp.Isolated(ref, jt); r > 0 {
			models = append(models, jt.Model)
		}
	}
	return models
}

// gavelScale draws a gang: 1, 2, 4 or 8 with probabilities 0.7, 0.1, 0.15,
// 0.05.
func gavelScale(rng *rand.Rand) int {
	switch u := rng.Float64(); {
	case u < 0.7:
		return 1
	case u < 0.8:
		return 2
	case u < 0.95:
		return 4
	default:
		return 8
	}
}

// gavelDuration draws a duration in seconds: 60·10^U(1.5, 3) with
// probability 0.8, 60·10^U(3, 4) otherwise.
func gavelDuration(rng *rand.Rand) float64 {
	lo, hi := 1.5, 3.0
	if rng.Float64() >= 0.8 {
		lo, hi = 3, 4
	}
	return 60 * math.Pow(10, lo+(hi-lo)*rng.Float64())
}
