//go:build cgo && clp

package lp

/*
#cgo pkg-config: clp
#include <stdlib.h>
#include <coin/Clp_C_Interface.h>
#include "clp_stop.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
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
	clpStoppedByEvent   = 5 // by the handler of clp_stop.cpp
	clpSecondaryTime    = 9 // with clpStopped: stopped on time
)

// clpModel owns a ClpSimplex created through CLP's C interface, which
// offers what github.com/lanl/clp lacks: presolve, rows added to a loaded
// model (warm row generation), the dual tolerance and the iteration count;
// and, through clp_stop.cpp, a solve that stops when its context is done.
// Close frees it; it is not safe for concurrent use.
type clpModel struct {
	p     unsafe.Pointer // Clp_Simplex*
	stop  *C.int         // in C memory: nonzero asks the running solve to stop
	ncols int
	sc    *scaling
	rowMapping
}

// rowMapping numbers the model's rows as CLP sees them. Rows without a
// nonzero coefficient are not given to CLP: its barrier aborts the process
// on them (even on a free one). Their feasibility is checked in Go, and
// their dual is zero.
type rowMapping struct {
	rowMap []int // model row -> CLP row, or -1 for an empty row
	nclp   int   // rows loaded into CLP
	// emptyBad names the first empty row whose range excludes 0.
	emptyBad string
}

// clpBound maps ±Inf to CLP's infinity.
func clpBound(v float64) float64 {
	switch {
	case v > clpInf:
		return clpInf
	case v < -clpInf:
		return -clpInf
	}
	return v
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

// columnMajor returns m's nonzeros by column, scaled by sc, as CLP loads
// them: column j holds index[start[j]:start[j+1]] (CLP rows) and the
// matching values.
func (rm *rowMapping) columnMajor(m *Model, sc *scaling) (start, index []int, value []float64) {
	n := len(m.obj)
	start = make([]int, n+1)
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
	index = make([]int, start[n])
	value = make([]float64, start[n])
	next := append([]int(nil), start[:n]...)
	for i, row := range m.rows {
		for _, t := range row {
			if t.Coef != 0 {
				p := next[t.Var]
				index[p], value[p] = rm.rowMap[i], sc.coef(i, t)
				next[t.Var]++
			}
		}
	}
	return start, index, value
}

// newCLPModel loads m, scaled, into a new ClpSimplex, column-major, in one
// call. It refuses a model whose scaled range CLP cannot take.
func newCLPModel(m *Model) (*clpModel, error) {
	sc, err := newScaling(context.Background(), m)
	if err != nil {
		return nil, err
	}
	c := &clpModel{ncols: len(m.obj), sc: sc}
	c.mapRows(m, 0)
	n, r := len(m.obj), c.nclp
	gstart, gindex, gvalue := c.columnMajor(m, sc)
	start := make([]C.CoinBigIndex, n+1)
	for j, x := range gstart {
		start[j] = C.CoinBigIndex(x)
	}
	index := make([]C.int, len(gindex))
	value := make([]C.double, len(gvalue))
	for p := range gindex {
		index[p], value[p] = C.int(gindex[p]), C.double(gvalue[p])
	}
	collb := make([]C.double, n)
	colub := make([]C.double, n)
	obj := make([]C.double, n)
	for j := range n {
		lo, hi := sc.colBounds(m, j)
		collb[j], colub[j], obj[j] = C.double(clpBound(lo)), C.double(clpBound(hi)), C.double(sc.objective(m, j))
	}
	rowlb := make([]C.double, r)
	rowub := make([]C.double, r)
	for i, k := range c.rowMap {
		if k >= 0 {
			lo, hi := sc.rowBounds(m, i)
			rowlb[k], rowub[k] = C.double(clpBound(lo)), C.double(clpBound(hi))
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
	c.stop = (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	if C.lp_stop_attach(p, c.stop) != 0 {
		c.close()
		return nil, fmt.Errorf("%w: CLP model without a ClpSimplex", ErrNumerical)
	}
	return c, nil
}

// mapRows extends rowMap to the rows first.. of m, numbering the nonempty
// ones after those already in CLP.
func (c *rowMapping) mapRows(m *Model, first int) {
	for i := first; i < len(m.rows); i++ {
		if allZero(m.rows[i]) {
			c.rowMap = append(c.rowMap, -1)
			c.checkEmpty(m, i)
			continue
		}
		c.rowMap = append(c.rowMap, c.nclp)
		c.nclp++
	}
}

// checkEmpty records row i of m, which has no nonzero coefficient, as the
// reason the model is infeasible if its range excludes 0 and no earlier
// row was.
func (c *rowMapping) checkEmpty(m *Model, i int) {
	if c.emptyBad == "" && (m.rowLo[i] > 0 || m.rowHi[i] < 0) {
		c.emptyBad = fmt.Sprintf("row %q has no nonzero coefficient and range [%v, %v]", m.rnames[i], m.rowLo[i], m.rowHi[i])
	}
}

// addRows appends rows first.. of m, scaled, to the loaded model.
func (c *clpModel) addRows(m *Model, first int) error {
	if err := c.sc.addRows(m, first); err != nil {
		return err
	}
	before := c.nclp
	c.mapRows(m, first)
	add := c.nclp - before
	if add == 0 {
		return nil
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
				vals = append(vals, C.double(c.sc.coef(i, t)))
			}
		}
		start = append(start, C.CoinBigIndex(len(cols)))
		l, h := c.sc.rowBounds(m, i)
		lo = append(lo, C.double(clpBound(l)))
		hi = append(hi, C.double(clpBound(h)))
	}
	C.Clp_addRows(c.p, C.int(add), cdoubles(lo), cdoubles(hi), cbigs(start), cints(cols), cdoubles(vals))
	return nil
}

// setBounds copies the bounds of m's columns and of its first rows (those
// already loaded) into CLP, and checks its empty rows again. The basis is
// kept for the next warm solve. The scaling is the one the model was
// loaded with; a bound that it leaves beyond maxCLPBound is refused.
func (c *clpModel) setBounds(m *Model, rows int) error {
	if err := c.sc.checkBounds(m, rows); err != nil {
		return err
	}
	collb := make([]C.double, c.ncols)
	colub := make([]C.double, c.ncols)
	for j := range c.ncols {
		lo, hi := c.sc.colBounds(m, j)
		collb[j], colub[j] = C.double(clpBound(lo)), C.double(clpBound(hi))
	}
	C.Clp_chgColumnLower(c.p, cdoubles(collb))
	C.Clp_chgColumnUpper(c.p, cdoubles(colub))
	rowlb := make([]C.double, c.nclp)
	rowub := make([]C.double, c.nclp)
	c.emptyBad = ""
	for i, k := range c.rowMap[:rows] {
		if k >= 0 {
			lo, hi := c.sc.rowBounds(m, i)
			rowlb[k], rowub[k] = C.double(clpBound(lo)), C.double(clpBound(hi))
		} else {
			c.checkEmpty(m, i)
		}
	}
	C.Clp_chgRowLower(c.p, cdoubles(rowlb))
	C.Clp_chgRowUpper(c.p, cdoubles(rowub))
	// A nonbasic variable (or row) left at a side that is now infinite,
	// or fixed between bounds that now differ, makes CLP's dual simplex
	// report a feasible model infeasible: move it to a side that exists.
	for j := range c.ncols {
		if st := C.Clp_getColumnStatus(c.p, C.int(j)); st != clpBasic {
			if want := nonbasicStatus(int(st), m.lower[j], m.upper[j]); want != int(st) {
				C.Clp_setColumnStatus(c.p, C.int(j), C.int(want))
			}
		}
	}
	for i, k := range c.rowMap[:rows] {
		if k < 0 {
			continue
		}
		if st := C.Clp_getRowStatus(c.p, C.int(k)); st != clpBasic {
			if want := nonbasicStatus(int(st), m.rowLo[i], m.rowHi[i]); want != int(st) {
				C.Clp_setRowStatus(c.p, C.int(k), C.int(want))
			}
		}
	}
	return nil
}

// setObjective loads m's objective, scaled anew, in place of the one
// loaded; the basis is kept for the next warm solve.
func (c *clpModel) setObjective(m *Model) error {
	if err := c.sc.scaleObjective(m); err != nil {
		return err
	}
	obj := make([]C.double, c.ncols)
	for j := range c.ncols {
		obj[j] = C.double(c.sc.objective(m, j))
	}
	C.Clp_chgObjCoefficients(c.p, cdoubles(obj))
	return nil
}

// emptyRowInfeasible reports whether an empty row's range excludes 0, so
// that the model is infeasible whatever CLP says (run reports it).
func (c *clpModel) emptyRowInfeasible() bool { return c.emptyBad != "" }

// dropRows deletes from CLP those of model rows rows whose slack is basic
// in the current basis, unmaps them (as empty rows: zero dual, checked in
// Go) and renumbers the rest. Deleting a row with its basic slack leaves a
// valid basis, so the next solve stays warm. It returns the rows deleted.
func (c *clpModel) dropRows(rows []Row) []Row {
	var del []C.int
	var out []Row
	for _, r := range rows {
		if k := c.rowMap[r]; k >= 0 && C.Clp_getRowStatus(c.p, C.int(k)) == clpBasic {
			del = append(del, C.int(k))
			out = append(out, r)
		}
	}
	if len(del) == 0 {
		return nil
	}
	C.Clp_deleteRows(c.p, C.int(len(del)), cints(del))
	gone := make([]bool, c.nclp)
	for _, k := range del {
		gone[k] = true
	}
	next := make([]int, c.nclp) // old CLP row -> new
	n := 0
	for k := range next {
		next[k] = n
		if !gone[k] {
			n++
		}
	}
	for i, k := range c.rowMap {
		switch {
		case k < 0:
		case gone[k]:
			c.rowMap[i] = -1
		default:
			c.rowMap[i] = next[k]
		}
	}
	c.nclp = n
	return out
}

// CLP's basis statuses (ClpSimplex::Status).
const (
	clpFree       = 0
	clpBasic      = 1
	clpAtUpper    = 2
	clpAtLower    = 3
	clpSuperBasic = 4
	clpFixed      = 5
)

// nonbasicStatus returns the status a nonbasic variable with status st
// should have within bounds [lo, hi]: st when its side still exists, else
// the side that does, or free.
func nonbasicStatus(st int, lo, hi float64) int {
	loInf, hiInf := math.IsInf(lo, -1), math.IsInf(hi, 1)
	switch {
	case st == clpFixed && lo == hi, st == clpAtUpper && !hiInf, st == clpAtLower && !loInf:
		return st
	case st == clpFree && loInf && hiInf, st == clpSuperBasic:
		return st
	case !loInf:
		return clpAtLower
	case !hiInf:
		return clpAtUpper
	}
	return clpFree
}

// close frees the ClpSimplex.
func (c *clpModel) close() {
	if c.p != nil {
		C.Clp_deleteModel(c.p)
		c.p = nil
	}
	if c.stop != nil {
		C.free(unsafe.Pointer(c.stop))
		c.stop = nil
	}
}

// watch sets c's stop flag when ctx is done, until the returned function
// is called; that function waits for the watcher to leave, so that the
// flag is never written after the solve.
func (c *clpModel) watch(ctx context.Context) (release func()) {
	flag := (*int32)(unsafe.Pointer(c.stop))
	atomic.StoreInt32(flag, 0)
	if ctx.Done() == nil {
		return func() {}
	}
	done, left := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(left)
		select {
		case <-ctx.Done():
			atomic.StoreInt32(flag, 1)
		case <-done:
		}
	}()
	return func() {
		close(done)
		<-left
	}
}

// run solves the loaded model: from scratch with set's method and presolve,
// or, when warm, from the current basis: by dual simplex (rows added since
// the last solve make it primal infeasible but keep it dual feasible), or
// by primal simplex when set asks for it (for changes that keep the basis
// primal feasible). A solve stops within one simplex iteration of ctx
// being done.
func (c *clpModel) run(ctx context.Context, set Settings, warm bool) (*Solution, error) {
	if c.emptyBad != "" {
		return &Solution{Status: Infeasible, Backend: CLP}, fmt.Errorf("%w: %s", ErrInfeasible, c.emptyBad)
	}
	lim, err := clpLimitsOf(ctx, set)
	if err != nil {
		return nil, err
	}
	C.Clp_setMaximumSeconds(c.p, C.double(lim.seconds))
	C.Clp_setMaximumIterations(c.p, C.int(lim.iterations))
	C.Clp_setNumberIterations(c.p, 0)
	method := set.Method
	if method == Barrier && !c.sc.barrierSafe() {
		method = DualSimplex // barrierCoefRange
	}
	release := c.watch(ctx)
	switch {
	case method == PrimalSimplex && (warm || !set.Presolve):
		C.Clp_primal(c.p, 0)
	case warm, method != Barrier && !set.Presolve:
		// Cold, this is what github.com/lanl/clp's Dual does.
		C.Clp_dual(c.p, 0)
	default:
		opts := C.ClpSolve_new()
		C.ClpSolve_setSolveType(opts, C.int(clpSolveType(method)), -1)
		presolve := 1 // off
		if set.Presolve {
			presolve = 0
		}
		C.ClpSolve_setPresolveType(opts, C.int(presolve), -1)
		C.Clp_initialSolveWithOptions(c.p, opts)
		C.ClpSolve_delete(opts)
		if method == Barrier && C.Clp_status(c.p) == clpOptimal {
			// CLP's barrier calls an unbounded problem optimal, at a point
			// around 1e20 that satisfies every row. Primal simplex from the
			// crossover basis costs nothing when that basis is optimal and
			// proves unboundedness when it is not.
			iters := C.Clp_numberIterations(c.p)
			C.Clp_primal(c.p, 0)
			C.Clp_setNumberIterations(c.p, iters+C.Clp_numberIterations(c.p))
		}
	}
	release()
	sol := &Solution{Backend: CLP, Iterations: int(C.Clp_numberIterations(c.p))}
	status := int(C.Clp_status(c.p))
	if status == clpStoppedByEvent || ctx.Err() != nil && status != clpOptimal {
		sol.Status = TimeLimit
		return sol, stopError(ctx, sol.Iterations)
	}
	return lim.outcome(sol, status, int(C.Clp_secondaryStatus(c.p)), c.copySolution)
}

// hint sets CLP's status arrays to m's basis hint (Model.SetBasisHint)
// and reports whether it had one, so that the first solve runs warm from
// it. CLP needs as many basic variables as rows, so the hinted columns
// and rows are paired in order, as far as both last; the hinted columns
// are basic and the others at a finite bound, the hinted rows at a finite
// bound and the others basic. CLP's factorisation replaces the columns of
// a singular basis by slacks.
func (c *clpModel) hint(m *Model) bool {
	b := m.basis
	basic := make([]bool, c.ncols)
	tight := make([]bool, c.nclp)
	var k int
	for _, r := range b.Tight {
		i := c.rowMap[r]
		if i < 0 || tight[i] || math.IsInf(m.rowLo[r], -1) && math.IsInf(m.rowHi[r], 1) {
			continue // empty, named twice, or free
		}
		for k < len(b.Vars) && basic[b.Vars[k]] {
			k++
		}
		if k == len(b.Vars) {
			break
		}
		basic[b.Vars[k]], tight[i] = true, true
		k++
	}
	if k == 0 {
		return false
	}
	for j := range c.ncols {
		st := clpBasic
		if !basic[j] {
			st = nonbasicStatus(clpAtLower, m.lower[j], m.upper[j])
		}
		C.Clp_setColumnStatus(c.p, C.int(j), C.int(st))
	}
	for r, i := range c.rowMap {
		if i >= 0 {
			st := clpBasic
			if tight[i] {
				st = nonbasicStatus(clpAtLower, m.rowLo[r], m.rowHi[r])
			}
			C.Clp_setRowStatus(c.p, C.int(i), C.int(st))
		}
	}
	return true
}

// basis returns CLP's basis by the model's indices, read from its status
// array (columns, then rows) in one call rather than one a variable.
func (c *clpModel) basis() *Basis {
	b := &Basis{}
	p := C.Clp_statusArray(c.p)
	if p == nil {
		return b
	}
	st := unsafe.Slice(p, c.ncols+c.nclp)
	for j := range c.ncols {
		if st[j]&7 == clpBasic {
			b.Vars = append(b.Vars, Var(j))
		}
	}
	for r, i := range c.rowMap {
		if i >= 0 && st[c.ncols+i]&7 != clpBasic {
			b.Tight = append(b.Tight, Row(r))
		}
	}
	return b
}

// stopError is the error of a solve stopped because ctx is done.
func stopError(ctx context.Context, iterations int) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %d iterations: %w", ErrTimeLimit, iterations, ctx.Err())
	}
	return fmt.Errorf("lp: solve stopped after %d iterations: %w", iterations, context.Cause(ctx))
}

// runAbandonable runs c.run and then after, on a goroutine of its own
// when ctx can be done. When ctx is done first it returns at once: the
// stop handler ends the simplex within an iteration, but CLP's postsolve
// (after presolve) and barrier iterations do not look at it, so the run
// is left to finish on its own and call after, which frees or releases c.
func (c *clpModel) runAbandonable(ctx context.Context, set Settings, warm bool, after func()) (*Solution, error) {
	if ctx.Done() == nil {
		defer after()
		return c.run(ctx, set, warm)
	}
	type result struct {
		sol *Solution
		err error
	}
	ch := make(chan result, 1)
	go func() {
		sol, err := c.run(ctx, set, warm)
		after()
		ch <- result{sol, err}
	}()
	select {
	case r := <-ch:
		return r.sol, r.err
	case <-ctx.Done():
		select {
		case r := <-ch:
			return r.sol, r.err
		default:
			return &Solution{Status: TimeLimit, Backend: CLP}, stopError(ctx, 0)
		}
	}
}

// clpLimits are the limits a CLP solve runs under: seconds (-1 for none),
// from ctx's deadline, and iterations.
type clpLimits struct {
	seconds     float64
	iterations  int
	deadline    time.Time
	hasDeadline bool
}

// clpLimitsOf converts ctx's deadline and set's iteration bound into CLP's
// limits, or returns ErrTimeLimit if the deadline has passed.
func clpLimitsOf(ctx context.Context, set Settings) (clpLimits, error) {
	lim := clpLimits{seconds: -1, iterations: math.MaxInt32}
	lim.deadline, lim.hasDeadline = ctx.Deadline()
	if lim.hasDeadline {
		lim.seconds = time.Until(lim.deadline).Seconds()
		if lim.seconds <= 0 {
			return lim, fmt.Errorf("%w before the solve started: %w", ErrTimeLimit, context.DeadlineExceeded)
		}
	}
	if set.MaxIterations > 0 && set.MaxIterations < lim.iterations {
		lim.iterations = set.MaxIterations
	}
	return lim, nil
}

// outcome turns CLP's status and secondary status into sol's Status and
// the matching sentinel error; copySolution fills sol's values where CLP
// has a point to report.
func (lim clpLimits) outcome(sol *Solution, status, secondary int, copySolution func(*Solution)) (*Solution, error) {
	switch status {
	case clpOptimal:
		sol.Status = Optimal
		copySolution(sol)
		return sol, nil
	case clpPrimalInfeasible:
		sol.Status = Infeasible
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrInfeasible, status, secondary)
	case clpDualInfeasible:
		sol.Status = Unbounded
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrUnbounded, status, secondary)
	case clpStopped:
		copySolution(sol)
		if secondary == clpSecondaryTime || (lim.hasDeadline && !time.Now().Before(lim.deadline)) {
			sol.Status = TimeLimit
			if lim.hasDeadline {
				return sol, fmt.Errorf("%w after %d iterations: %w", ErrTimeLimit, sol.Iterations, context.DeadlineExceeded)
			}
			return sol, fmt.Errorf("%w after %d iterations", ErrTimeLimit, sol.Iterations)
		}
		sol.Status = IterationLimit
		return sol, fmt.Errorf("%w (%d iterations)", ErrIterationLimit, sol.Iterations)
	default:
		sol.Status = NumericalFailure
		copySolution(sol)
		return sol, fmt.Errorf("%w (CLP status %d/%d)", ErrNumerical, status, secondary)
	}
}

// copySolution copies the primal values and row duals out of CLP, in the
// model's own units. Duals are reported as ∂objective/∂rhs in the model's
// own sense.
func (c *clpModel) copySolution(sol *Solution) {
	defer c.sc.unscale(sol)
	sol.Basis = c.basis()
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

// solveCLP solves m once through CLP's C interface.
func solveCLP(ctx context.Context, m *Model, set Settings) (*Solution, error) {
	if rays := freeRays(m); len(rays) > 0 {
		return solveCLPWithRays(ctx, m, set, rays)
	}
	return solveCLPOnce(ctx, m, set)
}

func solveCLPOnce(ctx context.Context, m *Model, set Settings) (*Solution, error) {
	c, err := newCLPModel(m)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil { // loading a large model takes a while
		c.close()
		return &Solution{Status: TimeLimit, Backend: CLP}, stopError(ctx, 0)
	}
	return c.runAbandonable(ctx, set, c.hint(m), c.close)
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
	sol, err := solveCLPOnce(ctx, rest, set)
	if err != nil && !errors.Is(err, ErrUnbounded) {
		return sol, err
	}
	return &Solution{Status: Unbounded, Backend: CLP}, fmt.Errorf("%w: variable %q in no row improves the objective without limit", ErrUnbounded, m.varName(Var(rays[0])))
}
