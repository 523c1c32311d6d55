// Package fuzzdata decodes a fuzzer's bytes into the numbers that gpufair's
// fuzz targets feed its exported functions: mostly small, valid values, so
// that inputs reach the solvers, and now and then any float64 bit pattern
// (NaN, ±Inf, subnormals, 1e308), so that validation is tried too.
package fuzzdata

import (
	"encoding/binary"
	"math"
)

// Reader hands out values from fuzz bytes; once they run out, zeros.
type Reader struct{ b []byte }

// New returns a Reader over b.
func New(b []byte) *Reader { return &Reader{b: b} }

// Byte returns the next byte, or 0.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Int returns a value in [0, n) from the next byte; n must be positive.
func (r *Reader) Int(n int) int { return int(r.Byte()) % n }

// Raw returns the next 8 bytes as a float64 bit pattern, or 0.
func (r *Reader) Raw() float64 {
	if len(r.b) < 8 {
		r.b = nil
		return 0
	}
	x := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return x
}

// Number returns, one time in eight, Raw; otherwise the next byte over 16,
// a value in [0, 16).
func (r *Reader) Number() float64 {
	if r.Int(8) == 0 {
		return r.Raw()
	}
	return float64(r.Byte()) / 16
}

// Floats returns n values of Number.
func (r *Reader) Floats(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Number()
	}
	return v
}

// Bytes encodes xs as Raw reads them, for seed corpora.
func Bytes(xs ...float64) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}
