//go:build cgo && !purego

package lp

import (
	"context"
	"fmt"
	"runtime"

	"github.com/lanl/clp"
)

// solveLANL solves m once with COIN-OR CLP through github.com/lanl/clp,
// the default path for one-shot solves. lanl/clp reports no iteration
// count, so Solution.Iterations is 0 on this path; its memory is freed by
// finalisers when the garbage collector runs.
func solveLANL(ctx context.Context, m *Model, set Settings) (*Solution, error) {
	var rm rowMapping
	rm.mapRows(m, 0)
	if rm.emptyBad != "" {
		return &Solution{Status: Infeasible, Backend: CLP}, fmt.Errorf("%w: %s", ErrInfeasible, rm.emptyBad)
	}
	lim, err := clpLimitsOf(ctx, set)
	if err != nil {
		return nil, err
	}
	n := len(m.obj)
	start, index, value := rm.columnMajor(m)
	pm := clp.NewPackedMatrix()
	pm.Reserve(n, len(index), false)
	col := make([]clp.Nonzero, 0, 16)
	for j := range n {
		col = col[:0]
		for p := start[j]; p < start[j+1]; p++ {
			col = append(col, clp.Nonzero{Index: index[p], Value: value[p]})
		}
		pm.AppendColumn(col)
	}
	// A trailing row, or a column with no nonzero, sets no dimension.
	pm.SetDimensions(rm.nclp, n)
	colBounds := make([]clp.Bounds, n)
	for j := range colBounds {
		colBounds[j] = clp.Bounds{Lower: clpBound(m.lower[j]), Upper: clpBound(m.upper[j])}
	}
	rowBounds := make([]clp.Bounds, rm.nclp)
	for i, k := range rm.rowMap {
		if k >= 0 {
			rowBounds[k] = clp.Bounds{Lower: clpBound(m.rowLo[i]), Upper: clpBound(m.rowHi[i])}
		}
	}
	s := clp.NewSimplex()
	s.LoadProblem(pm, colBounds, m.obj, rowBounds, nil)
	dir := clp.OptDirection(clp.Minimize)
	if m.sense == Maximize {
		dir = clp.Maximize
	}
	s.SetOptimizationDirection(dir)
	s.SetPrimalTolerance(clpPrimalTol)
	s.SetMaxSeconds(lim.seconds)
	s.SetMaxIterations(lim.iterations)

	var status clp.SimplexStatus
	switch set.Method {
	case PrimalSimplex:
		status = s.Primal(clp.NoValuesPass, clp.NoStartFinishOptions)
	case Barrier:
		status = s.Barrier(true)
		if status == clp.Optimal {
			// As in clpModel.run: barrier calls an unbounded problem
			// optimal; primal simplex from the crossover basis settles it.
			status = s.Primal(clp.NoValuesPass, clp.NoStartFinishOptions)
		}
	default:
		status = s.Dual(clp.NoValuesPass, clp.NoStartFinishOptions)
	}
	copySolution := func(sol *Solution) {
		sol.X = s.PrimalColumnSolution()
		sol.RowDuals = make([]float64, len(rm.rowMap))
		if rm.nclp > 0 {
			y := s.DualRowSolution()
			for i, k := range rm.rowMap {
				if k >= 0 {
					sol.RowDuals[i] = y[k]
				}
			}
		}
	}
	sol, err := lim.outcome(&Solution{Backend: CLP}, int(status), int(s.SecondaryStatus()), copySolution)
	runtime.KeepAlive(s)
	return sol, err
}
