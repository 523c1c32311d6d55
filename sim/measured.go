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

// TypeRate is a job type's throughput on a GPU type that a table lacks, as
// MeasuredRates gives it.
type TypeRate struct {
	// One is the rate with the gang on one server: measured, or estimated.
	One float64
	// Spread is the rate with the gang spread over servers (see
	// MeasuredRates); it equals One for a one-GPU job type.
	Spread float64
	// Estimated reports that One was estimated rather than measured.
	Estimated bool
}

// TypeRates are MeasuredRates' rates, by job type.
type TypeRates map[data.JobType]TypeRate

// Of returns job j's rates by its job type (its Kind at Gang GPUs, as
// Generate and ReadTrace make them), in the form Workload.WithType takes:
// w.WithType(t, rates.Of). A job type that r lacks gives 0, 0: the job
// does not run on the new type.
func (r TypeRates) Of(j *Job) (one, spread float64) {
	tr := r[data.JobType{Model: j.Kind, Scale: j.Gang}]
	return tr.One, tr.Spread
}

// MeasuredRates returns the rate of every job type of tp on the GPU type
// that row was measured on (row.GPUType, which must not be one of types),
// to give a workload that type with Workload.WithType. A one-GPU job type
// the row measured keeps its measured rate; the others (job types of
// several GPUs, which a one-GPU host cannot measure, and those the row
// lacks) are estimated by speedup.Complete's default model from tp's rates
// on types and the row's measurements.
//
// A gang spread over servers is slowed on the new type as on the last of
// types (the fastest, in GavelTypes' order) where tp has both rates: in
// Gavel's measurements the slowdown mostly grows with the GPU's speed (the
// language model on 8 GPUs keeps 0.8 to 1.1 of its rate spread on K80s,
// 0.6 to 0.7 on P100s and 0.1 to 0.2 on V100s), so for a type faster than
// all of types this is the mildest slowdown to expect. Where no type has both rates, a spread
// gang runs at its one-server rate, as Rates has it.
//
// Errors name the input at fault; Complete's wrap speedup.ErrEstimate.
func MeasuredRates(tp *data.Throughputs, types []topology.GPUType, row *data.MeasuredRow) (TypeRates, error) {
	switch {
	case tp == nil:
		return nil, gpufair.Invalid("Throughputs", "", gpufair.ErrEmpty, "nil throughputs")
	case row == nil:
		return nil, gpufair.Invalid("MeasuredRow", "", gpufair.ErrEmpty, "nil row")
	case len(types) == 0:
		return nil, gpufair.Invalid("Types", "", gpufair.ErrEmpty, "no GPU types to estimate from")
	case slices.Contains(types, topology.GPUType(row.GPUType)):
		return nil, gpufair.Invalid("MeasuredRow.GPUType", row.GPUType, gpufair.ErrDuplicate, "the row's type is one of types")
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
		return nil, fmt.Errorf("sim: estimating rates on %s: %w", row.GPUType, err)
	}
	out := make(TypeRates, len(jts))
	for i, jt := range jts {
		one := c.Matrix.At(i, last)
		out[jt] = TypeRate{One: one, Spread: one * spreadFactor(tp, types, jt), Estimated: c.Estimated[i][last]}
	}
	return out, nil
}

// spreadFactor is jt's spread rate over its one-server rate on the last of
// types where tp has both, or 1 (see MeasuredRates).
func spreadFactor(tp *data.Throughputs, types []topology.GPUType, jt data.JobType) float64 {
	if jt.Scale == 1 {
		return 1
	}
	for _, t := range slices.Backward(types) {
		one, ok1 := tp.Isolated(string(t), jt)
		spread, ok2 := tp.Isolated(string(t)+"_unconsolidated", jt)
		if ok1 && ok2 && one > 0 {
			return spread / one
		}
	}
	return 1
}
