package speedup

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// FuzzNew feeds New arbitrary labels, shapes and float bit patterns. It
// must never panic; it must reject exactly the inputs with a bad label,
// shape or cell (NaN, ±Inf, negative), with errors wrapping gpufair.ErrShape or
// gpufair.ErrValue; and an accepted matrix must hold the input. Run with
//
//	go test ./speedup -run '^$' -fuzz FuzzNew -fuzztime 1m
//
// Fuzzed 1 minute with cgo (774k inputs) and 1 minute without (660k;
// docs/benchmarks/lp.md):
// no crasher found.
func FuzzNew(f *testing.F) {
	bits := func(xs ...float64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	f.Add("j1,j2", "K80,V100", uint8(0), bits(1, 2, 1, 5))
	f.Add("j1,j2", "K80,V100", uint8(1), bits(1, math.NaN(), math.Inf(-1), math.Copysign(0, -1)))
	f.Add("j1,j1", "K80,", uint8(0), bits(1, 2, 3, 4))
	f.Add("", "", uint8(0), []byte{})
	f.Add("a", "x,y,z", uint8(3), bits(-1, 5e-324, 1e308))
	f.Fuzz(func(t *testing.T, rowLabels, typeLabels string, ragged uint8, data []byte) {
		rows := splitLabels(rowLabels)
		var types []topology.GPUType
		for _, s := range splitLabels(typeLabels) {
			types = append(types, topology.GPUType(s))
		}
		// ragged's low bits drop a cell from one row; its high bits add a
		// row without a label.
		values := make([][]float64, len(rows)+int(ragged>>6))
		bad := ragged>>6 != 0 || len(types) == 0
		for i := range values {
			n := len(types)
			if ragged&0x3f != 0 && int(ragged&0x3f)%max(1, len(values)) == i && n > 0 {
				n--
				bad = true
			}
			values[i] = make([]float64, n)
			for k := range values[i] {
				if len(data) >= 8 {
					values[i][k] = math.Float64frombits(binary.LittleEndian.Uint64(data))
					data = data[8:]
				}
				if x := values[i][k]; math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
					bad = true
				}
			}
		}
		bad = bad || badLabels(rows) || badLabels(typeStrings(types))
		m, err := New(rows, types, values)
		if err != nil {
			if !errors.Is(err, gpufair.ErrShape) && !errors.Is(err, gpufair.ErrValue) {
				t.Fatalf("New() error %v wraps neither gpufair.ErrShape nor gpufair.ErrValue", err)
			}
			if !bad {
				t.Fatalf("New() rejected a valid input: %v", err)
			}
			return
		}
		if bad {
			t.Fatalf("New() accepted a bad input: rows %q, types %q, values %v", rows, types, values)
		}
		for i := range values {
			for k, x := range values[i] {
				if got := m.At(i, k); got != x && !(got == 0 && x == 0) {
					t.Fatalf("At(%d, %d) = %v, want %v", i, k, got, x)
				}
			}
		}
	})
}

// splitLabels splits s at commas; the empty string gives no labels.
func splitLabels(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// badLabels reports an empty or repeated label.
func badLabels(labels []string) bool {
	seen := map[string]bool{}
	for _, l := range labels {
		if l == "" || seen[l] {
			return true
		}
		seen[l] = true
	}
	return false
}

func typeStrings(types []topology.GPUType) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = string(t)
	}
	return out
}
