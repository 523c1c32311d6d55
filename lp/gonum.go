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

// fixedRowTol is the scaled slack allowed to a row whose variables are all
// fixed, matching the check that every solution passes.
const fixedRowTol = 1e-9

// rankTol is the size, relative to the row's largest coefficient, below
// which an equality row reduced against the earlier ones counts as zero:
// gonum's simplex needs full row rank, so such rows are dropped, or prove
// infeasibility when their right-hand side does not reduce to zero too.
const rankTol = 1e-9

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
	// infeasible, when not empty, names a row on fixed variables only that
	// its range excludes.
	infeasible string
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
		case lo == hi:
			f.vars[j] = stdVar{off: lo, col: -1, neg: -1}
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
		if allZero(row) || (math.IsInf(lo, -1) && math.IsInf(hi, 1)) {
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
			if v.col >= 0 {
				terms = append(terms, Term{Var(v.col), t.Coef * v.sign})
			}
			if v.neg >= 0 {
				terms = append(terms, Term{Var(v.neg), -t.Coef})
			}
		}
		if len(terms) == 0 {
			// Only fixed variables: the row is the constant konst.
			if konst < lo-fixedRowTol*math.Max(1, math.Abs(lo)) || konst > hi+fixedRowTol*math.Max(1, math.Abs(hi)) {
				f.infeasible = fmt.Sprintf("row %q is %v on fixed variables, outside [%v, %v]", m.rnames[i], konst, lo, hi)
			}
			continue
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
	if f.infeasible != "" {
		sol.Status = Infeasible
		return sol, fmt.Errorf("%w: %s", ErrInfeasible, f.infeasible)
	}
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
		a := mat.NewDense(len(f.rows), cols, nil)
		for i, row := range f.rows {
			for _, t := range row {
				if k := keep[t.Var]; k >= 0 {
					a.Set(i, k, a.At(i, k)+t.Coef)
				}
			}
		}
		a, b, ok := independentRows(a, f.b)
		if !ok {
			sol.Status = Infeasible
			return sol, fmt.Errorf("%w: linearly dependent equality rows with inconsistent right-hand sides", ErrInfeasible)
		}
		c := make([]float64, cols)
		for j, k := range keep {
			if k >= 0 {
				c[k] = f.c[j]
			}
		}
		opt, err := gonumSimplex(c, a, b, nil)
		if errors.Is(err, gonumlp.ErrInfeasible) || errors.Is(err, gonumlp.ErrSingular) {
			// gonum's phase 1 reports infeasible when its artificial
			// variable stays basic at zero on a degenerate problem, and
			// can hand its phase 2 a singular basis; ours settles both.
			opt, err = simplexPhase1(c, a, b)
		}
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
	for j, k := range keep {
		if k >= 0 {
			y[j] = opt[k]
		}
	}
	x := make([]float64, len(f.vars))
	for j, v := range f.vars {
		x[j] = v.off
		if v.col >= 0 {
			x[j] += v.sign * y[v.col]
		}
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

// independentRows returns the rows of [a | b] that are linearly
// independent, in order, by Gaussian elimination against the rows kept so
// far. ok is false if a dependent row's right-hand side does not reduce to
// zero, which proves the system a·y = b has no solution.
func independentRows(a *mat.Dense, b []float64) (*mat.Dense, []float64, bool) {
	r, c := a.Dims()
	type pivotRow struct {
		p   int
		u   []float64 // normalised so that u[p] = 1
		rhs float64
	}
	var basis []pivotRow
	var keep []int
	v := make([]float64, c)
	for i := range r {
		mat.Row(v, i, a)
		beta := b[i]
		scale := 0.0
		for _, x := range v {
			scale = math.Max(scale, math.Abs(x))
		}
		for _, br := range basis {
			if f := v[br.p]; f != 0 {
				for k, x := range br.u {
					v[k] -= f * x
				}
				beta -= f * br.rhs
			}
		}
		p, big := -1, 0.0
		for k, x := range v {
			if math.Abs(x) > big {
				p, big = k, math.Abs(x)
			}
		}
		if big <= rankTol*scale {
			if math.Abs(beta) > rankTol*math.Max(1, math.Abs(b[i])) {
				return nil, nil, false
			}
			continue
		}
		u := make([]float64, c)
		for k, x := range v {
			u[k] = x / v[p]
		}
		basis = append(basis, pivotRow{p: p, u: u, rhs: beta / v[p]})
		keep = append(keep, i)
	}
	if len(keep) == r {
		return a, b, true
	}
	out := mat.NewDense(len(keep), c, nil)
	rhs := make([]float64, len(keep))
	for n, i := range keep {
		out.SetRow(n, a.RawRowView(i))
		rhs[n] = b[i]
	}
	return out, rhs, true
}

// phase1Tol is the sum of artificial variables, relative to max(1, ‖b‖∞),
// above which the phase-1 problem proves a standard-form LP infeasible.
const phase1Tol = 1e-9

// simplexPhase1 solves min cᵀy s.t. a·y = b, y ≥ 0 (a of full row rank) by
// an explicit phase 1, min Σ art s.t. a·y ± art = b, started from the
// artificial basis, then a phase 2 started from a basis that contains the
// support of the phase-1 vertex. It returns gonum's ErrInfeasible when the
// artificial variables cannot reach zero.
func simplexPhase1(c []float64, a *mat.Dense, b []float64) ([]float64, error) {
	r, n := a.Dims()
	a1 := mat.NewDense(r, n+r, nil)
	a1.Slice(0, r, 0, n).(*mat.Dense).Copy(a)
	b1 := make([]float64, r)
	c1 := make([]float64, n+r)
	basis := make([]int, r)
	var bmax float64
	for i := range r {
		sign := 1.0
		if b[i] < 0 {
			sign = -1
		}
		a1.Set(i, n+i, sign)
		b1[i] = b[i]
		c1[n+i] = 1
		basis[i] = n + i
		bmax = math.Max(bmax, math.Abs(b[i]))
	}
	y1, err := gonumSimplex(c1, a1, b1, basis)
	if err != nil {
		return nil, err
	}
	var art float64
	for i := range r {
		art += y1[n+i]
	}
	if art > phase1Tol*math.Max(1, bmax) {
		return nil, gonumlp.ErrInfeasible
	}
	// The phase-1 vertex's positive columns are independent; complete
	// them to a basis of a with other columns, which stay at zero.
	var start []int
	for j := range n {
		if y1[j] > 0 {
			start = append(start, j)
		}
	}
	basis = completeBasis(a, start)
	if basis == nil {
		return nil, gonumlp.ErrSingular
	}
	return simplexFrom(c, a, b, basis)
}

// completeBasis extends the independent columns start of a to r
// independent columns, by Gaussian elimination, or returns nil when the
// columns of a do not have rank r.
func completeBasis(a *mat.Dense, start []int) []int {
	r, n := a.Dims()
	var reduced [][]float64 // orthogonalised columns kept so far
	col := make([]float64, r)
	try := func(j int) bool {
		mat.Col(col, j, a)
		v := append([]float64(nil), col...)
		scale := 0.0
		for _, x := range v {
			scale = math.Max(scale, math.Abs(x))
		}
		for _, u := range reduced {
			var dot float64
			for i := range v {
				dot += u[i] * v[i]
			}
			for i := range v {
				v[i] -= dot * u[i]
			}
		}
		var norm float64
		for _, x := range v {
			norm += x * x
		}
		norm = math.Sqrt(norm)
		if norm <= rankTol*scale || norm == 0 {
			return false
		}
		for i := range v {
			v[i] /= norm
		}
		reduced = append(reduced, v)
		return true
	}
	basis := make([]int, 0, r)
	in := make([]bool, n)
	for _, j := range start {
		if try(j) {
			basis = append(basis, j)
			in[j] = true
		}
	}
	for j := n - 1; j >= 0 && len(basis) < r; j-- {
		if !in[j] && try(j) {
			basis = append(basis, j)
		}
	}
	if len(basis) < r {
		return nil
	}
	return basis
}

// simplexFrom runs gonum's simplex from the given feasible basis. gonum
// panics when the basis is infeasible by more than 1e-13, which roundoff
// in the phase-1 solution can cause; that is reported as ErrSingular.
func simplexFrom(c []float64, a *mat.Dense, b []float64, basis []int) (y []float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			y, err = nil, fmt.Errorf("%w: initial basis rejected: %v", gonumlp.ErrSingular, p)
		}
	}()
	return gonumSimplex(c, a, b, basis)
}

// gonumSimplex calls gonum's simplex, except on a square system, which gonum
// solves as a linear system and rejects as infeasible on any negative
// value, -1e-17 included: here values down to -phase1Tol·max(1, ‖y‖∞)
// count as zero. gonum panics, rather than returning an error, when its own
// phase 1 hands its phase 2 a singular basis; that is reported as
// ErrSingular too.
func gonumSimplex(c []float64, a *mat.Dense, b []float64, basis []int) (y []float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			y, err = nil, fmt.Errorf("%w: %v", gonumlp.ErrSingular, p)
		}
	}()
	r, n := a.Dims()
	if r != n {
		_, y, err = gonumlp.Simplex(c, a, b, gonumReducedCostTol, basis)
		return y, err
	}
	var v mat.VecDense
	if err := v.SolveVec(a, mat.NewVecDense(r, append([]float64(nil), b...))); err != nil {
		return nil, gonumlp.ErrSingular
	}
	y = v.RawVector().Data
	var ymax float64
	for _, x := range y {
		ymax = math.Max(ymax, math.Abs(x))
	}
	for i, x := range y {
		if x < -phase1Tol*math.Max(1, ymax) {
			return nil, gonumlp.ErrInfeasible
		}
		y[i] = math.Max(x, 0)
	}
	return y, nil
}
