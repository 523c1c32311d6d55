package baseline

import (
	"context"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// DefaultConverged is the fraction of its initial loss a job has left when
// it finishes, under SLAQ's default loss curve.
const DefaultConverged = 0.01

// SLAQSettings tune a SLAQ scheduler. A nil *SLAQSettings means the zero
// value: 6-minute rounds and the default loss curve.
type SLAQSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Loss, if not nil, returns job j's loss after done units of work,
	// normalised so that its loss before any work is 1 (SLAQ normalises
	// loss reductions across jobs the same way). It must be finite. done
	// is +Inf where a round's work at a rate near float64's limit
	// overflows, so a Loss should treat it as more work than any job has.
	// nil means the default curve (see SLAQ).
	Loss func(j *round.Job, done float64) float64
	// Converged is the fraction of its initial loss a job has left when it
	// finishes, under the default curve; 0 means DefaultConverged. It must
	// lie in (0, 1), and 1/Converged must be finite (Converged above about
	// 5.6e-309).
	Converged float64
}

// SLAQ is SLAQ's quality-driven scheduling (Zhang et al., SoCC'17), Themis'
// baseline for aggregate model quality (NSDI'20, section 6.1: "all apps
// report the decrease in loss value with allocations from the available
// resources and we allocate these resources in a greedy highest loss first
// manner"). SLAQ predicts each job's loss from its loss curve and gives
// each unit of resource to the job whose normalised loss would fall most.
//
// Each round, job m on type k would do rate_mk · Round units of work, so
// its normalised loss would fall by
//
//	Δ_mk = (ℓ_m(Done_m) − ℓ_m(Done_m + rate_mk · Round)) / Gang_m
//
// per GPU; pairs run in decreasing Δ_mk (package doc). SLAQ fits the curve
// ℓ(k) = 1/(a k² + b k + c) + d to the losses a job reports; the workloads
// here report work done, not losses, so the default curve is the O(1/k)
// member of that family,
//
//	ℓ_m(x) = 1 / (1 + β_m x),  β_m = (1/ε − 1) / Work_m,
//
// which starts at 1 and has fallen to ε (SLAQSettings.Converged) when the
// job's work is done; done work is capped at Work_m. A job of unknown
// total work (round.Job.Work 0) is assumed to need twice the work it has
// done, and at least a round's work on its fastest type. Where that
// assumed work lies beyond float64's range, or β below its normal range
// (Work_m near the largest float64 and ε not small), the loss is worked
// out as 1 / (1 + (1/ε − 1) · min(x, Work_m)/Work_m) instead, with work
// beyond the range scaled by a power of 2, so that such a job is still
// priced by its curve: one that finishes its assumed work in a round
// drops by 1 − ε. Like SLAQ, this favours new jobs, whose loss falls
// fastest, and short ones.
// SLAQSettings.Loss replaces the curve with a measured one.
//
// It keeps no state beyond the ledger. The zero value is not usable; build
// one with NewSLAQ.
type SLAQ struct {
	stateless
	loss      func(j *round.Job, done float64) float64
	converged float64
}

// NewSLAQ returns a SLAQ scheduler on cluster c, with job rates given over
// types (each a type of c). s may be nil. It returns the errors of
// round.NewLedger and an *gpufair.InputError for a round length that is not
// positive and finite or Converged outside (0, 1) or so small that its
// reciprocal overflows.
func NewSLAQ(c topology.Cluster, types []topology.GPUType, s *SLAQSettings) (*SLAQ, error) {
	var set SLAQSettings
	if s != nil {
		set = *s
	}
	if set.Converged == 0 {
		set.Converged = DefaultConverged
	}
	if !(set.Converged > 0 && set.Converged < 1) {
		return nil, gpufair.Invalid("SLAQSettings.Converged", "", gpufair.ErrValue, "%v is not in (0, 1)", set.Converged)
	}
	if math.IsInf(1/set.Converged, 0) {
		// The default curve's β would be +Inf, and every loss at 0 work NaN.
		return nil, gpufair.Invalid("SLAQSettings.Converged", "", gpufair.ErrValue, "%v is so small that 1/Converged overflows", set.Converged)
	}
	b, err := newCore("slaq", "SLAQSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &SLAQ{stateless: stateless{b}, loss: set.Loss, converged: set.Converged}, nil
}

// Decide returns the decision for the round that starts at now. It returns
// an *gpufair.InputError wrapping gpufair.ErrValue, and changes nothing, if
// SLAQSettings.Loss returns a value that is not finite.
func (s *SLAQ) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return s.decide(ctx, now, func(now float64, jobs []*round.Job) (*round.Decision, error) {
		types := len(s.l.Types())
		drop := make([]float64, len(jobs)*types) // Δ_mk
		for i, j := range jobs {
			if !slices.ContainsFunc(j.Rates, func(r float64) bool { return r > 0 }) {
				// Measured at rate 0 on every type, it cannot run, so
				// its loss does not matter: unknown work assumed from
				// those rates is 0, which the curve cannot price.
				continue
			}
			before, err := s.lossOf(j, 0)
			if err != nil {
				return nil, err
			}
			for k, r := range j.Rates {
				if r > 0 {
					after, err := s.lossOf(j, r)
					if err != nil {
						return nil, err
					}
					drop[i*types+k] = (before - after) / float64(j.Gang)
				}
			}
		}
		chosen := s.greedy(jobs, func(i int, _ *round.Job, k int) (float64, float64) {
			return -drop[i*types+k], 0
		})
		return s.realise(now, jobs, chosen, placing{})
	})
}

// lossOf returns job j's normalised loss after it runs a round at rate
// (0: its loss now), that is after j.Done + rate × Round units of work.
func (s *SLAQ) lossOf(j *round.Job, rate float64) (float64, error) {
	done := j.Done + rate*s.lease
	if s.loss != nil {
		v := s.loss(j, done)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, gpufair.Invalid("SLAQSettings.Loss", string(j.ID), gpufair.ErrValue, "loss %v after %v units of work", v, done)
		}
		return v, nil
	}
	w := j.Work
	if w == 0 {
		w = max(2*j.Done, slices.Max(j.Rates)*s.lease)
	}
	c := 1/s.converged - 1
	if beta := c / w; beta >= 0x1p-1022 && !math.IsInf(beta, 1) {
		// β is normal: as written.
		return 1 / (1 + beta*min(done, w)), nil
	}
	// β overflowed (a total work below about c/MaxFloat64, done in any
	// round), underflowed (w near the largest float64 and ε not small) or
	// is 0 (the assumed work overflowed): the same curve, as
	// 1 / (1 + (1/ε − 1) × min(done, w)/w).
	return 1 / (1 + c*s.doneShare(j, rate, done, w)), nil
}

// slaqShift is the power of 2 by which doneShare scales work beyond
// float64's range: work done and assumed (below 2 × 2^1024 + 2^1024 ×
// 2^1024) then lies within range, and an assumed work that overflows (at
// least about 2^1024) within the normal range.
const slaqShift = 1100

// doneShare returns min(done, w)/w in [0, 1] for job j after a round at
// rate (see lossOf), done being its work then and w its total or assumed
// work. Only an assumed work overflows (the ledger keeps total work
// finite); it is then worked out with the work scaled by 2^-slaqShift.
func (s *SLAQ) doneShare(j *round.Job, rate, done, w float64) float64 {
	if !math.IsInf(w, 1) {
		return min(done, w) / w // done +Inf gives 1
	}
	fl, el := math.Frexp(s.lease)
	work := func(r float64) float64 { return math.Ldexp(r*fl, el-slaqShift) } // r × Round, scaled
	d := math.Ldexp(j.Done, -slaqShift)
	sw := max(2*d, work(slices.Max(j.Rates)))
	return min(d+work(rate), sw) / sw
}

var _ round.Scheduler = (*SLAQ)(nil)
