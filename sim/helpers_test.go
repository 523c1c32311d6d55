package sim

import (
	"context"
	"math"
	"slices"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// fifo places active jobs in arrival order, each on the first type it has a
// positive rate on with a gang's worth of free GPUs, packed with a
// topology.Placer. It is a baseline the tests can follow by hand.
type fifo struct{}

func (fifo) Name() string { return "fifo" }

func (fifo) Schedule(_ context.Context, st *State) ([]Placement, error) {
	p, err := topology.NewPlacer(st.Cluster)
	if err != nil {
		return nil, err
	}
	var out []Placement
	for _, a := range st.Active {
		for k, t := range st.Types {
			if a.Job.Rates[k] <= 0 || p.Free(t) < a.Job.Gang {
				continue
			}
			g, err := p.Place(t, a.Job.Gang)
			if err != nil {
				return nil, err
			}
			out = append(out, Placement{Job: a.Job.ID, GPUs: g})
			break
		}
	}
	return out, nil
}

// fixed returns the same placements every round.
type fixed []Placement

func (fixed) Name() string { return "fixed" }

func (f fixed) Schedule(context.Context, *State) ([]Placement, error) { return f, nil }

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
