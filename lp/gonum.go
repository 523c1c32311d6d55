package lp

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	gonumlp "gonum.org/v1/gonum/optimize/convex/lp"
)

// gonumReducedCostTol is the tol argument of gonum's lp.Simplex: it stops
// when no reduced cost of the standard-form problem is below -tol.
const gonumReducedCostTol = 1e-10

// stdVar says how a model variable is expressed in standard-form columns
// (all ≥ 0): x = off + sign·col, minus neg when the variable is free.
type stdVar struct {
	off  float64
	sign float64
	col  int
	neg  int // second column of a free variable, or -1
}

// stdForm is min cᵀy s.t. A y = b, y ≥ 0, built from a Model.
type stdForm struct {
	vars []stdVar
	c    []float64
	rows [][]Term // over standard-form columns
	b    []float64
}

func (f *stdForm) newCol(cost float64) int {
	f.c = append(f.c, cost)
	return len(f.c) - 1
}

// toStdForm rewrites m for gonum: a finite lower bound is shifted to zero,
// a variable with only an upper bound is mirrored, a free variable is split
// in two, a finite upper bound of a shifted variable becomes a row with a
// slack, and each inequality row gets a slack (a ranged row two). Rows
// without variables were checked by the caller and are dropped, as are free
// rows.
func toStdForm(m *Model) *stdForm {
	f := &stdForm{vars: make([]stdVar, len(m.obj))}
	dir := 1.0
	if m.sense == Maximize {
		dir = -1
	}
	for j, c := range m.obj {
		c *= dir
		lo, hi := m.lower[j], m.upper[j]
		switch {
		case !math.IsInf(lo, -1):
			col := f.newCol(c)
			f.vars[j] = stdVar{off: lo, sign: 1, col: col, neg: -1}
			if !math.IsInf(hi, 1) {
				s := f.newCol(0)
				f.rows = append(f.rows, []Term{{Var(col), 1}, {Var(s), 1}})
				f.b = append(f.b, hi-lo)
			}
		case !math.IsInf(hi, 1):
			f.vars[j] = stdVar{off: hi, sign: -1, col: f.newCol(-c), neg: -1}
		default:
			pos := f.newCol(c)
			f.vars[j] = stdVar{sign: 1, col: pos, neg: f.newCol(-c)}
		}
	}
	for i, row := range m.rows {
		lo, hi := m.rowLo[i], m.rowHi[i]
		if len(row) == 0 || (math.IsInf(lo, -1) && math.IsInf(hi, 1)) {
			continue
		}
		var konst float64
		terms := make([]Term, 0, len(row)+1)
		for _, t := range row {
			if t.Coef == 0 {
				continue
			}
			v := f.vars[t.Var]
			konst += t.Coef * v.off
			terms = append(terms, Term{Var(v.col), t.Coef * v.sign})
			if v.neg >= 0 {
				terms = append(terms, Term{Var(v.neg), -t.Coef})
			}
		}
		switch {
		case lo == hi:
			f.rows = append(f.rows, terms)
			f.b = append(f.b, lo-konst)
		case math.IsInf(lo, -1):
			f.rows = append(f.rows, append(terms, Term{Var(f.newCol(0)), 1}))
			f.b = append(f.b, hi-konst)
		case math.IsInf(hi, 1):
			f.rows = append(f.rows, append(terms, Term{Var(f.newCol(0)), -1}))
			f.b = append(f.b, lo-konst)
		default:
			s := f.newCol(0)
			f.rows = append(f.rows, append(terms, Term{Var(s), 1}))
			f.b = append(f.b, hi-konst)
			f.rows = append(f.rows, []Term{{Var(s), 1}, {Var(f.newCol(0)), 1}})
			f.b = append(f.b, hi-lo)
		}
	}
	return f
}

// solveGonum solves m with gonum's dense simplex. It cannot be interrupted
// and ignores MaxIterations; ctx was checked before the call.
func solveGonum(_ context.Context, m *Model, set Settings) (*Solution, error) {
	sol := &Solution{Backend: Gonum}
	for i, row := range m.rows {
		if allZero(row) && (m.rowLo[i] > 0 || m.rowHi[i] < 0) {
			sol.Status = Infeasible
			return sol, fmt.Errorf("%w: row %q has no nonzero coefficient and range [%v, %v]", ErrInfeasible, m.rnames[i], m.rowLo[i], m.rowHi[i])
		}
	}
	f := toStdForm(m)
	// gonum rejects all-zero columns: such a column sits at 0 when its cost
	// is nonnegative and makes a feasible problem unbounded otherwise.
	used := make([]bool, len(f.c))
	for _, row := range f.rows {
		for _, t := range row {
			if t.Coef != 0 {
				used[t.Var] = true
			}
		}
	}
	keep := make([]int, len(f.c)) // standard column -> gonum column, or -1
	var cols int
	unboundedRay := false
	for j := range f.c {
		keep[j] = -1
		if used[j] {
			keep[j] = cols
			cols++
		} else if f.c[j] < 0 {
			unboundedRay = true
		}
	}
	y := make([]float64, len(f.c))
	if len(f.rows) > 0 {
		if len(f.rows) > cols {
			sol.Status = NumericalFailure
			return sol, fmt.Errorf("%w: gonum backend: %d standard-form rows but only %d columns (redundant equality rows)", ErrNumerical, len(f.rows), cols)
		}
		a := mat.NewDense(len(f.rows), cols, nil)
		for i, row := range f.rows {
			for _, t := range row {
				if k := keep[t.Var]; k >= 0 {
					a.Set(i, k, a.At(i, k)+t.Coef)
				}
			}
		}
		c := make([]float64, cols)
		for j, k := range keep {
			if k >= 0 {
				c[k] = f.c[j]
			}
		}
		_, opt, err := gonumlp.Simplex(c, a, f.b, gonumReducedCostTol, nil)
		switch {
		case errors.Is(err, gonumlp.ErrInfeasible):
			sol.Status = Infeasible
			return sol, fmt.Errorf("%w (gonum: %w)", ErrInfeasible, err)
		case errors.Is(err, gonumlp.ErrUnbounded):
			sol.Status = Unbounded
			return sol, fmt.Errorf("%w (gonum: %w)", ErrUnbounded, err)
		case err != nil:
			sol.Status = NumericalFailure
			if opt != nil {
				sol.X = fromStd(f, keep, opt, y)
			}
			return sol, fmt.Errorf("%w (gonum: %w)", ErrNumerical, err)
		}
		for j, k := range keep {
			if k >= 0 {
				y[j] = opt[k]
			}
		}
	}
	if unboundedRay {
		sol.Status = Unbounded
		return sol, fmt.Errorf("%w: a variable in no row improves the objective without limit", ErrUnbounded)
	}
	sol.Status = Optimal
	sol.X = fromStd(f, nil, nil, y)
	return sol, nil
}

// fromStd maps standard-form values back to model variables. When keep is
// not nil, opt holds gonum's columns and is first spread into y.
func fromStd(f *stdForm, keep []int, opt, y []float64) []float64 {
	if keep != nil {
		for j, k := range keep {
			if k >= 0 {
				y[j] = opt[k]
			}
		}
	}
	x := make([]float64, len(f.vars))
	for j, v := range f.vars {
		x[j] = v.off + v.sign*y[v.col]
		if v.neg >= 0 {
			x[j] -= y[v.neg]
		}
	}
	return x
}

func allZero(row []Term) bool {
	for _, t := range row {
		if t.Coef != 0 {
			return false
		}
	}
	return true
}
