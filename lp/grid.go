package lp

import (
	"fmt"
	"slices"
	"sort"
)

// Grid is a rows×cols block of variables x[i][k], the shape of every
// allocation LP in gpufair: one row per job or user, one column per GPU type.
type Grid struct {
	first      Var
	rows, cols int
}

// AddGrid adds rows·cols variables with bounds [lower, upper] and zero
// objective, named name[i,k] in errors, and returns them as a Grid. The
// names are formatted only when an error needs one: at 100,000 jobs × 4
// types, formatting them all took a third of building a policy's model.
func (m *Model) AddGrid(name string, rows, cols int, lower, upper float64) Grid {
	g := Grid{first: Var(len(m.obj)), rows: rows, cols: cols}
	n := rows * cols
	if n > 0 {
		m.grids = append(m.grids, gridNames{first: g.first, rows: rows, cols: cols, name: name})
	}
	m.obj = slices.Grow(m.obj, n)
	m.lower = slices.Grow(m.lower, n)
	m.upper = slices.Grow(m.upper, n)
	m.names = slices.Grow(m.names, n)
	for range n {
		m.AddVar("", lower, upper, 0)
	}
	return g
}

// gridNames names the variables of a Grid: first + i·cols + k is
// name[i,k].
type gridNames struct {
	first      Var
	rows, cols int
	name       string
}

// varName returns variable j's name: its own, or its grid's name[i,k].
func (m *Model) varName(j Var) string {
	if m.names[j] != "" {
		return m.names[j]
	}
	g := sort.Search(len(m.grids), func(x int) bool { return m.grids[x].first > j }) - 1
	if g < 0 {
		return ""
	}
	off := int(j - m.grids[g].first)
	if off >= m.grids[g].rows*m.grids[g].cols {
		return "" // a variable added by AddVar with no name
	}
	return fmt.Sprintf("%s[%d,%d]", m.grids[g].name, off/m.grids[g].cols, off%m.grids[g].cols)
}

// Dims returns the number of rows and columns.
func (g Grid) Dims() (rows, cols int) { return g.rows, g.cols }

// At returns x[i][k]. It panics if i or k is out of range.
func (g Grid) At(i, k int) Var {
	if i < 0 || i >= g.rows || k < 0 || k >= g.cols {
		panic("lp: grid index out of range")
	}
	return g.first + Var(i*g.cols+k)
}

// Cell returns the row and column of v in g, the inverse of At, and
// whether v is one of g's variables.
func (g Grid) Cell(v Var) (i, k int, ok bool) {
	off := int(v - g.first)
	if v < g.first || off >= g.rows*g.cols {
		return 0, 0, false
	}
	return off / g.cols, off % g.cols, true
}

// RowTerms returns Σ_k coef[k]·x[i][k] as terms, skipping zero
// coefficients: the effective throughput of row i when coef holds its rates.
// It panics if len(coef) differs from the number of columns.
func (g Grid) RowTerms(i int, coef []float64) []Term {
	if len(coef) != g.cols {
		panic("lp: grid row coefficients of the wrong length")
	}
	t := make([]Term, 0, g.cols)
	for k, c := range coef {
		if c != 0 {
			t = append(t, Term{g.At(i, k), c})
		}
	}
	return t
}

// ColTerms returns Σ_i coef[i]·x[i][k] as terms, skipping zero coefficients;
// a nil coef means all ones (the GPUs of type k used by every row).
// It panics if coef is not nil and its length differs from the number of rows.
func (g Grid) ColTerms(k int, coef []float64) []Term {
	if coef != nil && len(coef) != g.rows {
		panic("lp: grid column coefficients of the wrong length")
	}
	t := make([]Term, 0, g.rows)
	for i := 0; i < g.rows; i++ {
		c := 1.0
		if coef != nil {
			c = coef[i]
		}
		if c != 0 {
			t = append(t, Term{g.At(i, k), c})
		}
	}
	return t
}

// Values returns the solved grid as a rows×cols matrix.
func (g Grid) Values(s *Solution) [][]float64 {
	out := make([][]float64, g.rows)
	for i := range out {
		out[i] = make([]float64, g.cols)
		for k := range out[i] {
			out[i][k] = s.X[g.At(i, k)]
		}
	}
	return out
}
