package speedup

import (
	"errors"
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// CellError names the cell, row or GPU type of a matrix that failed
// validation or estimation. It unwraps to gpufair.ErrValue, gpufair.ErrShape
// or gpufair.ErrTooLarge, or to ErrEstimate (from Complete).
type CellError struct {
	Row   string           // row label (job or user); empty when a whole type is at fault
	Type  topology.GPUType // column label; empty when the whole row is at fault
	Value float64          // the cell's offending value (NaN for a missing cell); only set when Row and Type are
	Err   error
}

// Error names the cell (job and GPU type), the row or the type, and what is
// wrong; for a cell it ends with the cell's value in brackets.
func (e *CellError) Error() string {
	switch {
	case e.Type == "" && e.Row == "":
		return e.Err.Error()
	case e.Type == "":
		return fmt.Sprintf("row %q: %v", e.Row, e.Err)
	case e.Row == "":
		return fmt.Sprintf("type %q: %v", e.Type, e.Err)
	default:
		return fmt.Sprintf("row %q, type %q: %v (%v)", e.Row, e.Type, e.Err, e.Value)
	}
}

// Unwrap returns the reason, for errors.Is and errors.As.
func (e *CellError) Unwrap() error { return e.Err }

// Matrix holds one non-negative rate per (row, GPU type): a throughput in the
// caller's unit (for example training steps per second on one GPU) or a
// speedup relative to some reference type. Rows are jobs or users; columns are
// GPU types. A Matrix is immutable once built, so it may be shared freely.
// It has no missing (NaN) cells: a matrix with cells not measured is
// completed first (Complete).
//
// The zero Matrix, and a nil *Matrix, have no rows and no GPU types: Dims,
// Rows, Types, Values and TypeOrder return empty results, the normalisations
// an error wrapping gpufair.ErrEmpty, and MarshalJSON (of a nil *Matrix)
// null. New never returns such a matrix.
type Matrix struct {
	rows  []string
	types []topology.GPUType
	v     []float64 // row-major, len(rows)*len(types)
}

// New builds a Matrix from labelled rows. values[i][k] is the rate of row i on
// types[k]. Every problem is reported, joined with errors.Join: empty or
// duplicate labels, rows of the wrong length, NaN, infinite and negative cells.
// Zero is valid (a job that cannot run on that type). A NaN cell is reported
// as missing: Complete estimates such cells.
func New(rows []string, types []topology.GPUType, values [][]float64) (*Matrix, error) {
	var errs []error
	if len(types) == 0 {
		errs = append(errs, fmt.Errorf("%w: no GPU types", gpufair.ErrShape))
	}
	if len(rows) != len(values) {
		errs = append(errs, fmt.Errorf("%w: %d row labels for %d rows", gpufair.ErrShape, len(rows), len(values)))
	}
	errs = append(errs, checkLabels(rows, types)...)
	m := &Matrix{
		rows:  append([]string(nil), rows...),
		types: append([]topology.GPUType(nil), types...),
		v:     make([]float64, 0, len(rows)*len(types)),
	}
	for i, r := range values {
		label := ""
		if i < len(rows) {
			label = rows[i]
		}
		if len(r) != len(types) {
			errs = append(errs, &CellError{Row: label, Err: fmt.Errorf("%w: %d values for %d GPU types", gpufair.ErrShape, len(r), len(types))})
			continue
		}
		for k, x := range r {
			if math.IsNaN(x) {
				errs = append(errs, &CellError{Row: label, Type: types[k], Value: x,
					Err: fmt.Errorf("%w: missing (NaN, or null in JSON): estimate it with Complete", gpufair.ErrValue)})
			} else if err := checkValue(x); err != nil {
				errs = append(errs, &CellError{Row: label, Type: types[k], Value: x, Err: err})
			}
		}
		m.v = append(m.v, r...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

func checkLabels(rows []string, types []topology.GPUType) []error {
	var errs []error
	seen := make(map[string]bool, len(rows))
	for i, r := range rows {
		if r == "" {
			errs = append(errs, fmt.Errorf("%w: row %d has an empty label", gpufair.ErrShape, i))
		} else if seen[r] {
			errs = append(errs, fmt.Errorf("%w: duplicate row label %q", gpufair.ErrShape, r))
		}
		seen[r] = true
	}
	seenT := make(map[topology.GPUType]bool, len(types))
	for k, t := range types {
		if t == "" {
			errs = append(errs, fmt.Errorf("%w: GPU type %d has an empty name", gpufair.ErrShape, k))
		} else if seenT[t] {
			errs = append(errs, fmt.Errorf("%w: duplicate GPU type %q", gpufair.ErrShape, t))
		}
		seenT[t] = true
	}
	return errs
}

func checkValue(x float64) error {
	switch {
	case math.IsNaN(x):
		return fmt.Errorf("%w: NaN", gpufair.ErrValue)
	case math.IsInf(x, 0):
		return fmt.Errorf("%w: infinite", gpufair.ErrValue)
	case x < 0:
		return fmt.Errorf("%w: negative", gpufair.ErrValue)
	}
	return nil
}

// or returns m itself: a nil *Matrix reads as the zero Matrix.
func (m *Matrix) or() *Matrix {
	if m == nil {
		return &Matrix{}
	}
	return m
}

// empty returns an error wrapping gpufair.ErrEmpty for a matrix without GPU
// types (a nil or zero Matrix), which no normalisation can work on.
func (m *Matrix) empty() error {
	if m == nil || len(m.types) == 0 {
		return gpufair.Invalid("Matrix", "", gpufair.ErrEmpty, "no GPU types (a nil or zero Matrix; build one with New)")
	}
	return nil
}

// Dims returns the number of rows and GPU types.
func (m *Matrix) Dims() (rows, types int) { return len(m.or().rows), len(m.or().types) }

// Rows returns a copy of the row labels.
func (m *Matrix) Rows() []string { return append([]string(nil), m.or().rows...) }

// Types returns a copy of the column labels.
func (m *Matrix) Types() []topology.GPUType { return append([]topology.GPUType(nil), m.or().types...) }

// At returns the rate of row i on type k. It panics if i or k is out of range.
func (m *Matrix) At(i, k int) float64 {
	m = m.or()
	if i < 0 || i >= len(m.rows) || k < 0 || k >= len(m.types) {
		panic("speedup: index out of range")
	}
	return m.v[i*len(m.types)+k]
}

// Row returns a copy of row i's rates, in the order of Types. It panics if
// i is out of range.
func (m *Matrix) Row(i int) []float64 {
	m = m.or()
	if i < 0 || i >= len(m.rows) {
		panic("speedup: index out of range")
	}
	n := len(m.types)
	return append([]float64(nil), m.v[i*n:(i+1)*n]...)
}

// RowIndex returns the index of the row labelled r.
func (m *Matrix) RowIndex(r string) (int, bool) {
	for i, x := range m.or().rows {
		if x == r {
			return i, true
		}
	}
	return -1, false
}

// TypeIndex returns the index of GPU type t.
func (m *Matrix) TypeIndex(t topology.GPUType) (int, bool) {
	for k, x := range m.or().types {
		if x == t {
			return k, true
		}
	}
	return -1, false
}

// Values returns a copy of the rates as one slice per row.
func (m *Matrix) Values() [][]float64 {
	m = m.or()
	out := make([][]float64, len(m.rows))
	for i := range out {
		out[i] = m.Row(i)
	}
	return out
}
