package main

import (
	"fmt"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/topology"
)

// h100Type names the H100 as data's measured row and gpu.DefaultTypes do.
const h100Type topology.GPUType = "h100"

// h100Price is the on-demand price of an H100 per hour: AWS p5.48xlarge
// (eight H100s) at its launch list price, $98.32 an hour, in the same
// terms as gpuPrices.
const h100Price = 98.32 / 8

// simCluster is the cluster -cluster asks for: Gavel's K80s, P100s and
// V100s on servers of -per-server GPUs, and H100s on servers of
// -h100-per-server where it names a fourth count.
type simCluster struct {
	c     topology.Cluster
	about string // "36 K80, 36 P100 and 36 V100 GPUs (4 per server)"
	// h100 holds each job type's rates on an H100, measured or estimated
	// (sim.MeasuredRates); nil without H100s.
	h100 sim.TypeRates
}

// newSimCluster builds cfg's cluster; tp is Gavel's throughputs, which the
// H100 rates are completed from.
func newSimCluster(cfg *config, tp *data.Throughputs) (*simCluster, error) {
	count := cfg.cluster
	c, err := sim.NewCluster(sim.GavelTypes(), count[:3], cfg.perServer)
	if err != nil {
		return nil, err
	}
	s := &simCluster{c: c, about: fmt.Sprintf("%d K80, %d P100 and %d V100 GPUs (%d per server)", count[0], count[1], count[2], cfg.perServer)}
	if len(count) < 4 {
		return s, nil
	}
	h, err := sim.NewCluster([]topology.GPUType{h100Type}, count[3:], cfg.h100PerServer)
	if err != nil {
		return nil, err
	}
	s.c.Servers = append(s.c.Servers, h.Servers...)
	s.about = fmt.Sprintf("%d K80, %d P100, %d V100 GPUs (%d per server) and %d H100s (%d per server)",
		count[0], count[1], count[2], cfg.perServer, count[3], cfg.h100PerServer)
	row, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		return nil, err
	}
	if s.h100, err = sim.MeasuredRates(tp, sim.GavelTypes(), row); err != nil {
		return nil, err
	}
	return s, s.c.Validate()
}

// workload returns w over the cluster's types: with H100s, each job gains
// its job type's H100 rate.
func (s *simCluster) workload(w *sim.Workload) (*sim.Workload, error) {
	if s.h100 == nil {
		return w, nil
	}
	for _, j := range w.Jobs {
		if _, ok := s.h100[data.JobType{Model: j.Kind, Scale: j.Gang}]; !ok {
			return nil, fmt.Errorf("job %s: no H100 rate for %s on %d GPUs", j.ID, j.Kind, j.Gang)
		}
	}
	return w.WithType(h100Type, s.h100.Of)
}
