package alloc_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/gen"
)

// fuzzFloats decodes data as n floats. Raw: little-endian float64s, every
// bit pattern allowed (NaN, ±Inf, subnormals, -0). Otherwise one byte per
// float, b/32 in [0, 8), so that most inputs are valid and reach the LP.
// Missing values are 0.
func fuzzFloats(data []byte, n int, raw bool) []float64 {
	out := make([]float64, n)
	for i := range out {
		switch {
		case raw && len(data) >= 8:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(data))
			data = data[8:]
		case !raw && len(data) >= 1:
			out[i] = float64(data[0]) / 32
			data = data[1:]
		}
	}
	return out
}

func floatBytes(xs ...float64) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// FuzzAudit feeds arbitrary floats to Audit as capacities, allocations,
// rates and weights: it must return a report or an error (an *gpufair.InputError,
// or a wrapped lp error), never panic. Run with
//
//	go test ./alloc -run '^$' -fuzz FuzzAudit -fuzztime 1m
//
// Fuzzed 1 minute with CLP (789k inputs) and 1 minute with CGO_ENABLED=0 (499k;
// docs/benchmarks/lp.md):
// no crasher found.
func FuzzAudit(f *testing.F) {
	f.Add(uint8(3), uint8(2), true, true, floatBytes(1, 1, 1, 4.0/45, 0, 7.0/15, 0, 4.0/9, 1, 2, 1, 3, 1, 4))
	f.Add(uint8(2), uint8(2), false, true, floatBytes(1, 1, math.NaN(), 0, 0, 1, 1, 2, 1, 5, 1, 2))
	f.Add(uint8(2), uint8(1), true, true, floatBytes(0, 1, 1, 1, 1))
	f.Add(uint8(1), uint8(2), false, true, floatBytes(math.Inf(1), 1, -1, 0, 1, 1, 1))
	f.Add(uint8(4), uint8(3), true, true, floatBytes(5e-324, 1e308, 3, 1e-300, 2, 1, 0, 0, 0))
	f.Add(uint8(3), uint8(2), false, false, []byte{32, 32, 32, 3, 0, 15, 0, 14, 32, 64, 32, 96, 32, 128})
	f.Add(uint8(4), uint8(3), true, false, []byte{200, 1, 64, 0, 0, 0, 255, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22})
	f.Fuzz(func(t *testing.T, rows, types uint8, weighted, raw bool, data []byte) {
		n, m := int(rows%5), int(types%4)
		x := fuzzFloats(data, m+2*n*m+n, raw)
		c := alloc.Capacity{Count: x[:m]}
		for k := range m {
			c.Types = append(c.Types, gen.TypeName(k))
		}
		a := alloc.NewAllocation(make([]string, n), c)
		vals := make([]alloc.Valuation, n)
		for i := range n {
			a.Rows[i] = string(gen.TypeName(i))
			a.GPUs[i] = x[m+i*m : m+(i+1)*m]
			vals[i] = alloc.Linear(x[m+n*m+i*m : m+n*m+(i+1)*m])
		}
		var w []float64
		if weighted {
			w = x[m+2*n*m:]
		}
		// The worst envy with every rate up to twice as high: an input
		// error or a bound at least the envy at the rates themselves.
		lo, hi := make([]alloc.Linear, n), make([]alloc.Linear, n)
		for i, v := range vals {
			lo[i] = v.(alloc.Linear)
			hi[i] = make(alloc.Linear, len(lo[i]))
			for k, x := range lo[i] {
				hi[i][k] = 2 * x
			}
		}
		within, werr := alloc.EnvyFreenessWithin(a, lo, hi, w)
		if ie := (*gpufair.InputError)(nil); werr != nil && !errors.As(werr, &ie) {
			t.Fatalf("EnvyFreenessWithin() error %v (%T) is not an gpufair.InputError", werr, werr)
		}
		r, err := alloc.Audit(context.Background(), a, c, vals, w, nil)
		if err != nil {
			var ie *gpufair.InputError
			if !errors.As(err, &ie) && !isLPError(err) {
				t.Fatalf("Audit() error %v (%T) is neither an gpufair.InputError nor an lp error", err, err)
			}
			return
		}
		if werr == nil && n > 1 && within.MaxEnvy < r.Envy.MaxEnvy-1e-9*max(1, math.Abs(r.Envy.MaxEnvy)) {
			t.Fatalf("worst envy %v within [rates, 2·rates] below the envy %v at the rates", within.MaxEnvy, r.Envy.MaxEnvy)
		}
		if r.SharingIncentive.Holds != (r.SharingIncentive.Margin[r.SharingIncentive.Worst] >= -alloc.AxiomTol) {
			t.Fatalf("SI verdict %v disagrees with its worst margin %v", r.SharingIncentive.Holds, r.SharingIncentive.Margin)
		}
		if r.Pareto != nil && !r.Pareto.Holds {
			if err := r.Pareto.Witness.Validate(c); err != nil {
				t.Fatalf("Pareto witness invalid: %v", err)
			}
		}
	})
}
