package main

import (
	"fmt"
	"math"

	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// h100Type names the H100 as data's measured row and gpu.DefaultTypes do.
const h100Type topology.GPUType = "h100"

// h100Price is the on-demand price of an H100 per hour: AWS p5.48xlarge
// (eight H100s) at its launch list price, $98.32 an hour, in the same
// terms as gpuPrices.
const h100Price = 98.32 / 8

// simCluster is the cluster -cluster asks for: Gavel's K80s, P100s and
// V100s, and H100s where it names a fourth count.
type simCluster struct {
	c     topology.Cluster
	about string // "36 K80, 36 P100 and 36 V100 GPUs"
	// h100 holds each job type's rate on an H100 (nil without H100s).
	h100 map[data.JobType]float64
}

// newSimCluster builds cfg's cluster; tp is Gavel's throughputs, which the
// H100 rates are completed from.
func newSimCluster(cfg *config, tp *data.Throughputs) (*simCluster, error) {
	types, count := sim.GavelTypes(), cfg.cluster[:3]
	s := &simCluster{about: fmt.Sprintf("%d K80, %d P100 and %d V100 GPUs", count[0], count[1], count[2])}
	if len(cfg.cluster) == 4 {
		types, count = append(types, h100Type), cfg.cluster
		s.about = fmt.Sprintf("%d K80, %d P100, %d V100 and %d H100 GPUs", count[0], count[1], count[2], count[3])
		var err error
		if s.h100, err = h100Rates(tp); err != nil {
			return nil, err
		}
	}
	var err error
	s.c, err = sim.NewCluster(types, count, cfg.perServer)
	return s, err
}

// workload returns w over the cluster's types: with H100s, each job gains
// its job type's H100 rate (see h100Rates).
func (s *simCluster) workload(w *sim.Workload) (*sim.Workload, error) {
	if s.h100 == nil {
		return w, nil
	}
	var missing *sim.Job
	out, err := w.WithType(h100Type, func(j *sim.Job) float64 {
		r, ok := s.h100[data.JobType{Model: j.Kind, Scale: j.Gang}]
		if !ok && missing == nil {
			missing = j
		}
		return r
	})
	if missing != nil {
		return nil, fmt.Errorf("job %s: no H100 rate for %s on %d GPUs", missing.ID, missing.Kind, missing.Gang)
	}
	return out, err
}

// h100Rates returns every job type of tp at its rate on one H100 server:
// measured (data.Measured's h100.json) for the one-GPU job types measured
// there, and estimated by speedup.Complete from Gavel's K80, P100 and V100
// rates and those measurements for the others (the job types of several
// GPUs, which were not measured on the H100, and any the row lacks).
func h100Rates(tp *data.Throughputs) (map[data.JobType]float64, error) {
	row, err := data.LoadMeasured(data.Measured(), "h100.json")
	if err != nil {
		return nil, err
	}
	types := append(sim.GavelTypes(), h100Type)
	jts := tp.JobTypes()
	names := make([]string, len(jts))
	values := make([][]float64, len(jts))
	for i, jt := range jts {
		names[i] = jt.String()
		values[i] = make([]float64, len(types))
		for k, t := range types[:3] {
			r, ok := tp.Isolated(string(t), jt)
			if !ok {
				r = math.NaN()
			}
			values[i][k] = r
		}
		r, ok := row.Rate(jt.Model)
		if jt.Scale != 1 || !ok {
			r = math.NaN()
		}
		values[i][3] = r
	}
	c, err := speedup.Complete(names, types, values, nil)
	if err != nil {
		return nil, fmt.Errorf("estimating H100 rates: %w", err)
	}
	out := make(map[data.JobType]float64, len(jts))
	for i, jt := range jts {
		out[jt] = c.Matrix.At(i, 3)
	}
	return out, nil
}
