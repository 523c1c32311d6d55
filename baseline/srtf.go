package baseline

import (
	"context"
	"math"

	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// SRTFSettings tune an SRTF scheduler. A nil *SRTFSettings means the zero
// value: 6-minute rounds.
type SRTFSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Service ranks jobs by their remaining service, Gang × remaining
	// time, instead: shortest remaining service first (SRSF), Themis'
	// other baseline for completion time, which approximates Tiresias'
	// Gittins-index policy (NSDI'20, section 6.1). The scheduler is then
	// named "srsf".
	Service bool
}

// SRTF is shortest remaining time first, Themis' baseline for average
// completion time (NSDI'20, section 6.1: "all apps report their remaining
// time with allocations from the available resource and we allocate these
// resources using SRTF policy"). Each round, every (job m, type k) pair
// on which m has a positive rate is ranked by m's remaining time there,
// (Work − Done) / rate_mk, shortest first; pairs run greedily (package
// doc). A job reports its remaining time on each type, so a job short on
// its fast type competes for that type before it competes for a slower one:
// efficiency comes second, as Themis says. Jobs of unknown total work
// (round.Job.Work 0) have an infinite remaining time and run, in arrival
// order, only on GPUs no job of known work can use. A job of known work
// ranks before them even where its remaining time lies beyond float64's
// range (work near the largest float64, a rate near the smallest): such
// times are compared in a scaled range.
//
// SRTF is preemptive: a running job yields its GPUs to a job that arrives
// with less time left. SRTFSettings.Service gives SRSF, which ranks by
// remaining service (GPUs × time) and so puts small gangs first. It keeps
// no state beyond the ledger.
//
// The zero value is not usable; build one with NewSRTF.
type SRTF struct {
	stateless
	service bool
}

// NewSRTF returns an SRTF scheduler on cluster c, with job rates given over
// types (each a type of c). s may be nil. It returns the errors of
// round.NewLedger and an *gpufair.InputError for a round length that is not
// positive and finite.
func NewSRTF(c topology.Cluster, types []topology.GPUType, s *SRTFSettings) (*SRTF, error) {
	var set SRTFSettings
	if s != nil {
		set = *s
	}
	name := "srtf"
	if set.Service {
		name = "srsf"
	}
	b, err := newCore(name, "SRTFSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &SRTF{stateless: stateless{b}, service: set.Service}, nil
}

// Decide returns the decision for the round that starts at now.
func (s *SRTF) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return s.decide(ctx, now, func(now float64, jobs []*round.Job) (*round.Decision, error) {
		chosen := s.greedy(jobs, func(_ int, j *round.Job, k int) (float64, float64) {
			if s.service {
				return remainingKey(float64(j.Gang), j.Remaining(), j.Rates[k])
			}
			return remainingKey(1, j.Remaining(), j.Rates[k])
		})
		return s.realise(now, jobs, chosen, placing{})
	})
}

// wideShift is the power of 2 by which remainingKey scales a remaining
// time beyond float64's range: it brings every gang × work / rate the
// ledger admits (below 2^63 × 2^1024 / 2^-1074) within range, and every
// one beyond it (at least 2^1024) within the normal range, so that the
// scaling is exact.
const wideShift = 1140

// remainingKey returns the greedy keys of a pair whose job has rem units of
// work left (+Inf if unknown) at rate r > 0: (mul × rem / r, 0), mul being
// 1 or the gang. Where that overflows for a known rem, the key is
// math.MaxFloat64, and then the same quotient scaled by 2^-wideShift, so
// that such pairs rank after every pair within range, before every job of
// unknown work, and among themselves by their remaining time. Keys that
// mul × rem / r gives within range are unchanged; one that overflowed only
// in mul × rem is worked out in the scaled range too.
func remainingKey(mul, rem, r float64) (float64, float64) {
	q := mul * rem / r
	if !math.IsInf(q, 1) || math.IsInf(rem, 1) {
		return q, 0
	}
	fr, er := math.Frexp(rem)
	fd, ed := math.Frexp(r)
	wide := math.Ldexp(mul*fr/fd, er-ed-wideShift)
	if v := math.Ldexp(wide, wideShift); !math.IsInf(v, 1) {
		return v, 0 // only mul × rem overflowed
	}
	return math.MaxFloat64, wide
}

var _ round.Scheduler = (*SRTF)(nil)
