package baseline

import (
	"context"
	"math"
	"math/big"

	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// OptimusSettings tune an Optimus scheduler. A nil *OptimusSettings means
// the zero value: 6-minute rounds.
type OptimusSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
}

// Optimus is Optimus' remaining-time-driven allocation (Peng et al.,
// EuroSys'18, section 4.2), Themis' baseline for aggregate throughput
// (NSDI'20, section 6.1: apps report their "throughput scaling", the ratio
// of their throughput with and without the GPUs on offer, and resources go
// to the highest first). Optimus estimates a job's remaining time as its
// work left over its speed, and greedily gives the next resource to the job
// whose remaining time falls most per unit of resource: its marginal gain.
//
// Gangs here are rigid, so the resource a job gains is a gang of GPUs of a
// type, in place of the speed it has had so far. Job m's marginal gain on
// type k, per GPU, is
//
//	g_mk = (R_m / v_m − R_m / rate_mk) / Gang_m,
//
// R_m being its work left and v_m its average speed since it arrived
// (Σ_k Received_mk · rate_mk over the time since its arrival, from the
// ledger's accounting). Pairs run in decreasing g_mk (package doc). A job
// that has not run yet has v_m = 0 and an infinite gain: as Optimus gives
// every job its first allocation before any increment, jobs that never ran
// come first, in arrival order. A job that has run at rate_mk all along
// gains nothing from k, and yields it to jobs that would gain, so
// Optimus shares the cluster, favouring long jobs that would speed up most.
// A job of unknown total work (round.Job.Work 0) is assumed to have as
// much work left as it has done (round.Job.Done).
//
// It keeps no state beyond the ledger. The zero value is not usable; build
// one with NewOptimus.
type Optimus struct{ stateless }

// NewOptimus returns an Optimus scheduler on cluster c, with job rates given
// over types (each a type of c). s may be nil. It returns the errors of
// round.NewLedger and an *gpufair.InputError for a round length that is not
// positive and finite.
func NewOptimus(c topology.Cluster, types []topology.GPUType, s *OptimusSettings) (*Optimus, error) {
	var set OptimusSettings
	if s != nil {
		set = *s
	}
	b, err := newCore("optimus", "OptimusSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &Optimus{stateless{b}}, nil
}

// Decide returns the decision for the round that starts at now.
func (o *Optimus) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return o.decide(ctx, now, func(now float64, jobs []*round.Job) (*round.Decision, error) {
		chosen := o.greedy(jobs, func(_ int, j *round.Job, k int) (float64, float64) {
			return -MarginalGain(j, k, now), 0
		})
		return o.realise(now, jobs, chosen, placing{})
	})
}

// MarginalGain returns Optimus' marginal gain of job j on the k-th GPU
// type (an index in the ledger's types) at time now, in seconds of
// remaining time per GPU (see Optimus): +Inf for a job that has not run,
// -Inf for a nil j, on a type it has no rate on, for k out of range or for
// a gang below 1, and never NaN. Its remaining times may lie beyond float64's range
// (work near the largest float64 at a rate near the smallest): the gain is
// then worked out in extended range, and is ±Inf only where the gain
// itself is beyond that range. Received times past the job's rates count
// for nothing.
func MarginalGain(j *round.Job, k int, now float64) float64 {
	if j == nil || k < 0 || k >= len(j.Rates) || !(j.Rates[k] > 0) || j.Gang < 1 {
		return math.Inf(-1)
	}
	r := j.Remaining()
	if math.IsInf(r, 1) {
		r = j.Done
	}
	el := now - j.Arrival
	ran := false
	v := 0.0
	if el > 0 {
		for t, rec := range j.Received[:min(len(j.Received), len(j.Rates))] {
			v += rec * j.Rates[t]
			ran = ran || (rec > 0 && j.Rates[t] > 0)
		}
		v /= el
	}
	if !ran {
		return math.Inf(1)
	}
	g := (r/v - r/j.Rates[k]) / float64(j.Gang)
	if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(g) && !math.IsInf(g, 0) {
		return g
	}
	// v overflowed or underflowed, or a remaining time overflowed (Inf −
	// Inf was NaN, and an overflowing v read as 0 remaining time).
	return wideGain(j, k, r, el)
}

// wideGain is MarginalGain for a job that has run, in big.Float's range:
// r is the work left and el the time since the job's arrival. Inputs that
// are not finite (a job no round.Ledger would keep) give -Inf.
func wideGain(j *round.Job, k int, r, el float64) float64 {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !finite(r) || !finite(el) {
		return math.Inf(-1)
	}
	num := func(x float64) *big.Float { return new(big.Float).SetPrec(128).SetFloat64(x) }
	v := num(0)
	for t, rec := range j.Received[:min(len(j.Received), len(j.Rates))] {
		if !finite(rec) || !finite(j.Rates[t]) {
			return math.Inf(-1)
		}
		v.Add(v, num(rec).Mul(num(rec), num(j.Rates[t])))
	}
	v.Quo(v, num(el))
	if v.Sign() <= 0 {
		return math.Inf(1)
	}
	now := num(r).Quo(num(r), v)                // R/v
	then := num(r).Quo(num(r), num(j.Rates[k])) // R/rate_k
	g := now.Sub(now, then)
	g.Quo(g, num(float64(j.Gang)))
	f, _ := g.Float64()
	return f
}

var _ round.Scheduler = (*Optimus)(nil)
