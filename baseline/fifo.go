package baseline

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// FIFOSettings tune a FIFO scheduler. A nil *FIFOSettings means the zero
// value: 6-minute rounds, seed 0.
type FIFOSettings struct {
	// Round is the lease of each decision, in seconds; 0 means
	// DefaultRound.
	Round float64
	// Seed picks the random GPU type of each job: the same seed gives the
	// same choices.
	Seed uint64
}

// FIFO is Gavel's heterogeneity-agnostic FIFO baseline (OSDI'20, section
// 7.3, the baseline of its makespan and FIFO results; its code's FIFO
// policy in "base" mode): first in, first out, without preemption and
// blind to GPU types. Each round, a job that holds GPUs keeps them until it
// finishes (or a Measured event gives it no rate on their type); then the
// waiting jobs, in arrival order, each take a GPU type drawn uniformly
// among those with room for their gang, until the first
// job that fits none waits, and every job behind it with it (no job
// jumps the queue). A job whose GPU failed is placed again on its type,
// before the queue moves.
//
// The draw is a hash of Seed and the job's ID, so that FIFO keeps no state
// beyond its ledger and a restored scheduler decides the same.
//
// The zero value is not usable; build one with NewFIFO.
type FIFO struct {
	stateless
	seed uint64
}

// NewFIFO returns Gavel's FIFO baseline on cluster c, with job rates given
// over types (each a type of c). s may be nil. It returns the errors of
// round.NewLedger and an *gpufair.InputError for a round length that is not
// positive and finite.
func NewFIFO(c topology.Cluster, types []topology.GPUType, s *FIFOSettings) (*FIFO, error) {
	var set FIFOSettings
	if s != nil {
		set = *s
	}
	b, err := newCore("fifo-gavel", "FIFOSettings.Round", set.Round, c, types)
	if err != nil {
		return nil, err
	}
	return &FIFO{stateless{b}, set.Seed}, nil
}

// Decide returns the decision for the round that starts at now.
func (f *FIFO) Decide(ctx context.Context, now float64) (*round.Decision, error) {
	return f.decide(ctx, now, func(now float64, jobs []*round.Job) (*round.Decision, error) {
		types := f.l.Types()
		left := f.l.Healthy()
		chosen := make([]int, len(jobs))
		for i, j := range jobs {
			// A job keeps its GPUs unless a measurement has since
			// found that it cannot run on their type.
			p, ok := f.l.Holding(j.ID)
			if !ok {
				continue
			}
			if k := slices.Index(types, p.Type); j.Rates[k] > 0 {
				chosen[i] = k + 1
				left[k] -= j.Gang
			}
		}
		for i, j := range jobs {
			if chosen[i] != 0 {
				continue
			}
			var room []int
			for k, r := range j.Rates {
				if r > 0 && j.Gang <= left[k] {
					room = append(room, k)
				}
			}
			if len(room) == 0 {
				break
			}
			k := room[f.draw(j, len(room))]
			chosen[i] = k + 1
			left[k] -= j.Gang
		}
		return f.realise(now, jobs, chosen, placing{})
	})
}

// draw returns job j's random choice among n types.
func (f *FIFO) draw(j *round.Job, n int) int {
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatUint(f.seed, 10) + "/" + string(j.ID)))
	return int(h.Sum64() % uint64(n))
}

var _ round.Scheduler = (*FIFO)(nil)
