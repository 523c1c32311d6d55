//go:build cgo && !purego

package lp

/*
#cgo pkg-config: clp
#include <coin/Clp_C_Interface.h>
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"
)

// clpAvailable reports whether the CLP backend is compiled in.
const clpAvailable = true

// defaultBackend is the backend that Settings.Backend Default selects.
const defaultBackend = CLP

// CLP's tolerances, set on every model. They are CLP's own defaults, named
// here so that Settings.FeasibilityTol can be compared with them: the
// solution check must not be tighter than what CLP solves to, scaled.
const (
	// clpPrimalTol is the bound and row violation CLP accepts as feasible
	// in its internally scaled model.
	clpPrimalTol = 1e-7
	// clpDualTol is the reduced-cost violation CLP accepts as optimal.
	clpDualTol = 1e-7
)

// clpInf is CLP's infinity (COIN_DBL_MAX); ±Inf bounds are passed as ±clpInf.
const clpInf = math.MaxFloat64

// CLP status codes (ClpModel::status and secondaryStatus).
const (
	clpOptimal          = 0
	clpPrimalInfeasible = 1
	clpDualInfeasible   = 2
	clpStopped          = 3 // on iterations or time
	clpErrors           = 4
	clpSecondaryTime    = 9 // with clpStopped: stopped on time
)

// clpModel owns a ClpSimplex. Close frees it; it is not safe for
// concurrent use.
//
// Rows without a nonzero coefficient are not given to CLP: its barrier
// aborts the process on them (even on a free one). Their feasibility is
// checked in Go, and their dual is zero.
type clpModel struct {
	p      unsafe.Pointer // Clp_Simplex*
	ncols  int
	rowMap []int // model row -> CLP row, or -1 for an empty row
	nclp   int   // rows loaded into CLP
	// emptyBad names the first empty row whose range excludes 0.
	emptyBad string
}

func clpBound(v float64) C.double {
	switch {
	case v > clpInf:
		return clpInf
	case v < -clpInf:
		return -clpInf
	}
	return C.double(v)
}

// cdoubles returns a pointer CLP may read len(s) values from; it is never
// nil, since CLP does not check for nil on empty arrays.
func cdoubles(s []C.double) *C.double {
	if cap(s) == 0 {
		s = make([]C.double, 1)
	}
	return unsafe.SliceData(s)
}

func cints(s []C.int) *C.int {
	if cap(s) == 0 {
		s = make([]C.int, 1)
	}
	return unsafe.SliceData(s)
}

func cbigs(s []C.CoinBigIndex) *C.CoinBigIndex {
	if cap(s) == 0 {
		s = make([]C.CoinBigIndex, 1)
	}
	return unsafe.SliceData(s)
}

// newCLPModel loads m into a new ClpSimplex, column-major, in one call.
func newCLPModel(m *Model) *clpModel {
	c := &clpModel{ncols: len(m.obj)}
	c.mapRows(m, 0)
	n, r := len(m.obj), c.nclp
	start := make([]C.CoinBigIndex, n+1)
	for _, row := range m.rows {
		for _, t := range row {
			if t.Coef != 0 {
				start[t.Var+1]++
			}
		}
	}
	for j := 0; j < n; j++ {
		start[j+1] += start[j]
	}
	nnz := int(start[n])
	index := make([]C.int, nnz)
	value := make([]C.double, nnz)
	next := make([]C.CoinBigIndex, n)
	copy(next, start[:n])
	for i, row := range m.rows {
		for _, t := range row {
			if t.Coef != 0 {
				p := next[t.Var]
				index[p], value[p] = C.int(c.rowMap[i]), C.double(t.Coef)
				next[t.Var]++
			}
		}
	}
	collb := make([]C.double, n)
	colub := make([]C.double, n)
	obj := make([]C.double, n)
	for j := range n {
		collb[j], colub[j], obj[j] = clpBound(m.lower[j]), clpBound(m.upper[j]), C.double(m.obj[j])
	}
	rowlb := make([]C.double, r)
	rowub := make([]C.double, r)
	for i, k := range c.rowMap {
		if k >= 0 {
			rowlb[k], rowub[k] = clpBound(m.rowLo[i]), clpBound(m.rowHi[i])
		}
	}
	p := C.Clp_newModel()
	C.Clp_setLogLevel(p, 0)
	C.Clp_loadProblem(p, C.int(n), C.int(r), cbigs(start), cints(index), cdoubles(value),
		cdoubles(collb), cdoubles(colub), cdoubles(obj), cdoubles(rowlb), cdoubles(rowub))
	dir := 1.0
	if m.sense == Maximize {
		dir = -1
	}
	C.Clp_setOptimizationDirection(p, C.double(dir))
	C.Clp_setPrimalTolerance(p, clpPrimalTol)
	C.Clp_setDualTolerance(p, clpDualTol)
	c.p = p
	return c
}

// mapRows extends rowMap to the rows first.. of m, numbering the nonempty
// ones after those already in CLP.
func (c *clpModel) mapRows(m *Model, first int) {
	for i := first; i < len(m.rows); i++ {
		if allZero(m.rows[i]) {
			c.rowMap = append(c.rowMap, -1)
			if c.emptyBad == "" && (m.rowLo[i] > 0 || m.rowHi[i] < 0) {
				c.emptyBad = fmt.Sprintf("row %q has no nonzero coefficient and range [%v, %v]", m.rnames[i], m.rowLo[i], m.rowHi[i])
			}
			continue
		}
		c.rowMap = append(c.rowMap, c.nclp)
		c.nclp++
	}
}

// addRows appends rows first.. of m to the loaded model.
func (c *clpModel) addRows(m *Model, first int) {
	before := c.nclp
	c.mapRows(m, first)
	add := c.nclp - before
	if add == 0 {
		return
	}
	start := make([]C.CoinBigIndex, 1, add+1)
	var cols []C.int
	var vals []C.double
	lo := make([]C.double, 0, add)
	hi := make([]C.double, 0, add)
	for i := first; i < len(m.rows); i++ {
		if c.rowMap[i] < 0 {
			continue
		}
		for _, t := range m.rows[i] {
			if t.Coef != 0 {
				cols = append(cols, C.int(t.Var))
				vals = append(vals, C.double(t.Coef))
			}
		}
		start = append(start, C.CoinBigIndex(len(cols)))
		lo = append(lo, clpBound(m.rowLo[i]))
		hi = append(hi, clpBound(m.rowHi[i]))
	}
	C.Clp_addRows(c.p, C.int(add), cdoubles(lo), cdoubles(hi), cbigs(start), cints(cols), cdoubles(vals))
}

// close frees the ClpSimplex.
func (c *clpModel) close() {
	if c.p != nil {
		C.Clp_deleteModel(c.p)
		c.p = nil
	}
}

// run solves the loaded model: from scratch with set's method and presolve,
// or, when warm, by dual simplex from the current basis (rows added since
// the last solve make it primal infeasible but keep it dual feasible).
func (c *clpModel) run(ctx context.Context, set Settings, warm bool) (*Solution, error) {
	if c.emptyBad != "" {
		return &Solution{Status: Infeasible, Backend: CLP}, fmt.Errorf("%w: %s", ErrInfeasible, c.emptyBad)
	}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		left := time.Until(deadline).Seconds()
		if left <= 0 {
			return nil, fmt.Errorf("%w before the solve started: %w", ErrTimeLimit, context.DeadlineExceeded)
		}
		C.Clp_setMaximumSeconds(c.p, C.double(left))
	} else {
		C.Clp_setMaximumSeconds(c.p, -1)
	}
	maxIter := math.MaxInt32
	if set.MaxIterations > 0 && set.MaxIterations < maxIter {
		maxIter = set.MaxIterations
	}
	C.Clp_setMaximumIterations(c.p, C.int(maxIter))
	C.Clp_setNumberIterations(c.p, 0)
	if warm {
		C.Clp_dual(c.p, 0)
	} else {
		opts := C.ClpSolve_new()
		C.ClpSolve_setSolveType(opts, C.int(clpSolveType(set.Method)), -1)
		presolve := 1 // off
		if set.Presolve {
			presolve = 0
		}
		C.ClpSolve_setPresolveType(opts, C.int(presolve), -1)
		C.Clp_initialSolveWithOptions(c.p, opts)
		C.ClpSolve_delete(opts)
		if set.Method == Barrier && C.Clp_status(c.p) == clpOptimal {
			// CLP's barrier calls an unbounded problem optimal, at a point
			// around 1e20 that satisfies every row. Primal simplex from the
			// crossover basis costs nothing when that basis is optimal and
			// proves unboundedness when it is not.
			iters := C.Clp_numberIterations(c.p)
			C.Clp_primal(c.p, 0)
			C.Clp_setNumberIterations(c.p, iters+C.Clp_numberIterations(c.p))
		}
	}
	sol := &Solution{Backend: CLP, Iterations: int(C.Clp_numberIterations(c.p))}
	status, secondary := int(C.Clp_status(c.p)), int(C.Clp_secondaryStatus(c.p))
	switch status {
	case clpOptimal:
		sol.Status = Optimal
		c.copySolution(sol)
		return sol, nil
	case clpPrimalInfeasible:
		sol.Status = Infeasible
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrInfeasible, status, secondary)
	case clpDualInfeasible:
		sol.Status = Unbounded
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrUnbounded, status, secondary)
	case clpStopped:
		c.copySolution(sol)
		if secondary == clpSecondaryTime || (hasDeadline && !time.Now().Before(deadline)) {
			sol.Status = TimeLimit
			err := fmt.Errorf("%w after %d iterations", ErrTimeLimit, sol.Iterations)
			if hasDeadline {
				err = fmt.Errorf("%w after %d iterations: %w", ErrTimeLimit, sol.Iterations, context.DeadlineExceeded)
			}
			return sol, err
		}
		sol.Status = IterationLimit
		return sol, fmt.Errorf("%w (%d iterations)", ErrIterationLimit, sol.Iterations)
	default:
		sol.Status = NumericalFailure
		c.copySolution(sol)
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrNumerical, status, secondary)
	}
}

// copySolution copies the primal values and row duals out of CLP. Duals
// are reported as ∂objective/∂rhs in the model's own sense.
func (c *clpModel) copySolution(sol *Solution) {
	sol.X = make([]float64, c.ncols)
	if c.ncols > 0 {
		for j, v := range unsafe.Slice(C.Clp_getColSolution(c.p), c.ncols) {
			sol.X[j] = float64(v)
		}
	}
	sol.RowDuals = make([]float64, len(c.rowMap))
	if c.nclp > 0 {
		y := unsafe.Slice(C.Clp_getRowPrice(c.p), c.nclp)
		for i, k := range c.rowMap {
			if k >= 0 {
				sol.RowDuals[i] = float64(y[k])
			}
		}
	}
}

// clpSolveType maps a Method to ClpSolve::SolveType.
func clpSolveType(m Method) int {
	switch m {
	case PrimalSimplex:
		return 1
	case Barrier:
		return 3 // with crossover
	default:
		return 0
	}
}

// solveCLP loads m, solves it once and frees CLP's memory.
func solveCLP(ctx context.Context, m *Model, set Settings) (*Solution, error) {
	if rays := freeRays(m); len(rays) > 0 {
		return solveCLPWithRays(ctx, m, set, rays)
	}
	c := newCLPModel(m)
	defer c.close()
	return c.run(ctx, set, false)
}

// freeRays returns the columns that have no nonzero coefficient in any row
// and improve the objective towards an infinite bound.
func freeRays(m *Model) []Var {
	used := make([]bool, len(m.obj))
	for _, row := range m.rows {
		for _, t := range row {
			if t.Coef != 0 {
				used[t.Var] = true
			}
		}
	}
	var rays []Var
	for j, c := range m.obj {
		if m.sense == Maximize {
			c = -c
		}
		if !used[j] && (c < 0 && math.IsInf(m.upper[j], 1) || c > 0 && math.IsInf(m.lower[j], -1)) {
			rays = append(rays, Var(j))
		}
	}
	return rays
}

// solveCLPWithRays settles a model with free rays: it is unbounded exactly
// when the rest is feasible. CLP's dual simplex calls some such models
// primal infeasible (TestPropertyUnboundedDetected), so the rays are
// taken out of the objective and the rest solved alone.
func solveCLPWithRays(ctx context.Context, m *Model, set Settings, rays []Var) (*Solution, error) {
	rest := m.Clone()
	for _, v := range rays {
		rest.obj[v] = 0
	}
	c := newCLPModel(rest)
	defer c.close()
	sol, err := c.run(ctx, set, false)
	if err != nil && !errors.Is(err, ErrUnbounded) {
		return sol, err
	}
	return &Solution{Status: Unbounded, Backend: CLP}, fmt.Errorf("%w: variable %q in no row improves the objective without limit", ErrUnbounded, m.names[rays[0]])
}
