package sim

import (
	"context"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// fifo places the jobs in the system in arrival order, each on the slots
// it held in the lease before if it ran there to the end and they are
// free, or else on the first type it has a positive rate on with a gang's
// worth of free GPUs, packed with a topology.Placer: a scheduler on a
// round.Ledger the tests can follow by hand. Build it with newFIFO.
type fifo struct {
	l *round.Ledger
	L float64 // lease
}

func newFIFO(c topology.Cluster, types []topology.GPUType, lease float64) *fifo {
	l, err := round.NewLedger(c, types)
	if err != nil {
		panic(err)
	}
	return &fifo{l: l, L: lease}
}

func (*fifo) Name() string { return "fifo" }

func (f *fifo) Apply(ev ...round.Event) error { return f.l.Apply(ev...) }

func (f *fifo) Decide(_ context.Context, now float64) (*round.Decision, error) {
	if err := f.l.Begin(now); err != nil {
		return nil, err
	}
	p := f.l.Placer(nil)
	d := &round.Decision{Start: now, End: now + f.L}
	prev := map[alloc.JobID]round.Placement{}
	if old := f.l.Lease(); old != nil && old.End >= now {
		for _, q := range old.Placements {
			prev[q.Jobs[0]] = q
		}
	}
	for _, j := range f.l.Jobs() {
		if q, ok := prev[j.ID]; ok && p.Reserve(q.GPUs) == nil {
			d.Placements = append(d.Placements, round.Placement{Jobs: q.Jobs, Type: q.Type, GPUs: q.GPUs})
			continue
		}
		for k, t := range f.l.Types() {
			if j.Rates[k] <= 0 || p.Free(t) < j.Gang {
				continue
			}
			g, err := p.Place(t, j.Gang)
			if err != nil {
				f.l.Abort()
				return nil, err
			}
			d.Placements = append(d.Placements, round.Placement{Jobs: []alloc.JobID{j.ID}, Type: t, GPUs: g})
			break
		}
	}
	return d, f.l.Commit(d)
}

func (*fifo) Snapshot() ([]byte, error) { return nil, gpufair.ErrSnapshot }

func (*fifo) Restore([]byte) error { return gpufair.ErrSnapshot }

// fixed returns the same placements every round, unchecked: a scheduler
// that breaks the contract.
type fixed []round.Placement

func (fixed) Name() string { return "fixed" }

func (fixed) Apply(...round.Event) error { return nil }

func (f fixed) Decide(_ context.Context, now float64) (*round.Decision, error) {
	return &round.Decision{Start: now, End: now + 1e9, Placements: f}, nil
}

func (fixed) Snapshot() ([]byte, error) { return nil, gpufair.ErrSnapshot }

func (fixed) Restore([]byte) error { return gpufair.ErrSnapshot }

// equalShare is a test policy: every job gets count_k/n GPUs of each type,
// as time fractions x_k = count_k/(n·gang), scaled down to Σ_k x_k ≤ 1, and
// none on a type it has no rate on.
type equalShare struct{}

func (equalShare) Name() string { return "equal share" }

func (equalShare) Allocate(_ context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	a := alloc.NewAllocation(p.JobIDs(), p.Capacity)
	n := float64(len(p.Jobs))
	for i, j := range p.Jobs {
		g := float64(j.Gang)
		var sum float64
		for k, c := range p.Capacity.Count {
			if p.Throughputs.At(i, k) > 0 {
				sum += c / (n * g)
			}
		}
		scale := 1.0
		if sum > 1 {
			scale = 1 / sum
		}
		for k, c := range p.Capacity.Count {
			if p.Throughputs.At(i, k) > 0 {
				a.GPUs[i][k] = math.Min(c/n*scale, c)
			}
		}
	}
	return a, nil
}

func servers(spec ...topology.Server) topology.Cluster {
	return topology.Cluster{Servers: slices.Clone(spec)}
}

// script places what its function returns each round, unchecked, as fixed
// does: a scheduler that sets the flags of its placements itself.
type script func(now float64) []round.Placement

func (script) Name() string { return "script" }

func (script) Apply(...round.Event) error { return nil }

func (f script) Decide(_ context.Context, now float64) (*round.Decision, error) {
	return &round.Decision{Start: now, End: now + 1e9, Placements: f(now)}, nil
}

func (script) Snapshot() ([]byte, error) { return nil, gpufair.ErrSnapshot }

func (script) Restore([]byte) error { return gpufair.ErrSnapshot }
