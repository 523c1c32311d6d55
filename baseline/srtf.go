package baseline

import (
	"context"

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
// order, only on GPUs no job of known work can use.
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
				return float64(j.Gang) * j.Remaining() / j.Rates[k], 0
			}
			return j.Remaining() / j.Rates[k], 0
		})
		return s.realise(now, jobs, chosen, placing{})
	})
}

var _ round.Scheduler = (*SRTF)(nil)
