package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// MeasuredRates returns the rate of every job type of tp on the GPU type
// that row was measured on (row.GPUType, which must not be one of types),
// to give a workload that type with Workload.WithType. A one-GPU job type
// the row measured keeps its measured rate; the others (job types of
// several GPUs, which a one-GPU host cannot measure, and those the row
// lacks) are estimated by speedup.Complete's default model from tp's rates
// on types and the row's measurements, and estimated marks them. Errors
// name the input at fault; Complete's wrap speedup.ErrEstimate.
func MeasuredRates(tp *data.Throughputs, types []topology.GPUType, row *data.MeasuredRow) (rates map[data.JobType]float64, estimated map[data.JobType]bool, err error) {
	switch {
	case tp == nil:
		return nil, nil, gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "nil throughputs")
	case row == nil:
		return nil, nil, gpufair.Invalid("MeasuredRow", "", gpufair.ErrEmpty, "nil row")
	case len(types) == 0:
		return nil, nil, gpufair.Invalid("Types", "", gpufair.ErrEmpty, "no GPU types to estimate from")
	case slices.Contains(types, topology.GPUType(row.GPUType)):
		return nil, nil, gpufair.Invalid("MeasuredRow.GPUType", row.GPUType, gpufair.ErrDuplicate, "the row's type is one of types")
	}
	jts := tp.JobTypes()
	names := make([]string, len(jts))
	values := make([][]float64, len(jts))
	last := len(types)
	for i, jt := range jts {
		names[i] = jt.String()
		values[i] = make([]float64, last+1)
		for k, t := range types {
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
		values[i][last] = r
	}
	c, err := speedup.Complete(names, append(slices.Clone(types), topology.GPUType(row.GPUType)), values, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sim: estimating rates on %s: %w", row.GPUType, err)
	}
	rates = make(map[data.JobType]float64, len(jts))
	estimated = make(map[data.JobType]bool)
	for i, jt := range jts {
		rates[jt] = c.Matrix.At(i, last)
		if c.Estimated[i][last] {
			estimated[jt] = true
		}
	}
	return rates, estimated, nil
}
