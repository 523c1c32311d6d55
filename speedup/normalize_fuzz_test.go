package speedup

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpufair/gpufair/internal/fuzzdata"
	"github.com/gpufair/gpufair/topology"
)

// FuzzNormalise normalises matrices of arbitrary rates every way the
// package offers. None may panic, and a matrix it returns holds no NaN or
// infinite entry (RelativeToSlowest once returned +Inf for a rate of 1e300
// over one of 1e-10).
func FuzzNormalise(f *testing.F) {
	f.Add([]byte{2, 2, 16, 32, 48, 64})
	f.Add(append([]byte{1, 2, 0}, fuzzdata.Bytes(1e300, 0, 1e-10)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		nr, nt := 1+r.Int(3), 1+r.Int(3)
		rows := make([]string, nr)
		values := make([][]float64, nr)
		for i := range rows {
			rows[i] = fmt.Sprint("r", i)
			values[i] = r.Floats(nt)
		}
		types := make([]topology.GPUType, nt)
		for k := range types {
			types[k] = topology.GPUType(fmt.Sprint("t", k))
		}
		m, err := New(rows, types, values)
		if err != nil {
			return
		}
		for name, norm := range map[string]func() (*Matrix, error){
			"RelativeToSlowest":         m.RelativeToSlowest,
			"RelativeToSlowestRunnable": m.RelativeToSlowestRunnable,
			"RelativeToFastest":         m.RelativeToFastest,
		} {
			out, err := norm()
			if err != nil {
				continue
			}
			for _, row := range out.Values() {
				for _, x := range row {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("%s: entry %v", name, x)
					}
				}
			}
		}
	})
}
