package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
)

// Incremental is a model kept loaded in its solver between solves, for row
// generation: solve, add the rows the solution violates, solve again. With
// CLP the re-solve is warm: the rows are appended to the loaded model and
// dual simplex restarts from the previous optimal basis, which stays dual
// feasible, so a few added rows cost a few pivots; a warm CLP solve that
// reports infeasibility is confirmed by its primal simplex from the basis it
// ended at, as CLP's dual can call a feasible model infeasible after bounds
// change. With PureGo the re-solve
// is warm too: the rows are appended with their logical variables basic and
// the simplex restarts from the previous basis (phase 1 repairs the rows
// it violates). With Gonum every solve starts from scratch.
//
// Warm re-solves matter for correctness as well as speed on degenerate
// LPs: a cold solve may land on another optimal vertex each round, with new
// small violations, and row generation then fails to converge.
//
// Row ranges and variable bounds may also change between solves
// (SetRowBounds, SetVarBounds), for sequences of LPs that differ only in
// their bounds. The re-solve starts from the previous basis: dual simplex
// by default, which suits rows added or bounds tightened (the basis stays
// dual feasible); primal simplex when Settings.Method is PrimalSimplex,
// which suits changes that keep the previous basis primal feasible. Either
// ends at a vertex, so row duals are vertex duals.
//
// The objective may change too (SetObjective), for lexicographic LPs: solve
// for one objective, hold its optimum by a bound, solve for the next. The
// previous optimum stays primal feasible, so the re-solve after a new
// objective starts from it with the primal simplex, with either backend
// (unless Settings.Method names another). Where the new optimum is far
// from the old, that can cost more than a cold solve: on a space-sharing
// LP of 1,000 jobs CLP's primal simplex took 4.2 s against 10.4 s for its
// dual simplex cold, but the pure-Go primal simplex 13.1 s against 4.7 s
// (docs/benchmarks/gavel.md).
//
// An Incremental is not safe for concurrent use. Close frees the solver's
// memory; an Incremental that is not closed is freed when it is garbage
// collected.
type Incremental struct {
	m       *Model
	set     Settings
	clp     *clpModel
	spx     *simplex // the PureGo backend's state
	cleanup runtime.Cleanup
	loaded  int  // rows of m already loaded into clp
	warm    bool // clp holds a basis from an earlier solve
	bounded bool // bounds changed since the last solve
	// objective reports that the objective changed since the last solve.
	objective bool
	dropped   map[Row]bool
	closed    bool
	// busy, when not nil, is closed when a solve abandoned on a cancel
	// has left clp.
	busy chan struct{}
}

// NewIncremental returns an Incremental holding a copy of m; later changes
// to m do not affect it. It returns the model's error (ErrInvalidModel) or
// a settings error (ErrInvalidSettings, ErrBackendUnavailable).
func NewIncremental(m *Model, s *Settings) (*Incremental, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil model", ErrInvalidModel)
	}
	if err := m.Err(); err != nil {
		return nil, err
	}
	set, err := resolveSettings(s)
	if err != nil {
		return nil, err
	}
	return &Incremental{m: m.Clone(), set: set}, nil
}

// AddConstraint adds the row Σ terms op rhs, as Model.AddConstraint does;
// the next Solve includes it. Invalid input is reported by the next Solve.
func (in *Incremental) AddConstraint(name string, terms []Term, op Op, rhs float64) Row {
	return in.m.AddConstraint(name, terms, op, rhs)
}

// AddRange adds the row lo ≤ Σ terms ≤ hi, as Model.AddRange does; the
// next Solve includes it.
func (in *Incremental) AddRange(name string, terms []Term, lo, hi float64) Row {
	return in.m.AddRange(name, terms, lo, hi)
}

// SetRowBounds sets row r's range to lo ≤ Σ terms ≤ hi (either side may be
// infinite); the next Solve uses it. Invalid input (an unknown row, NaN, an
// empty range) is reported by the next Solve.
func (in *Incremental) SetRowBounds(r Row, lo, hi float64) {
	m := in.m
	switch {
	case r < 0 || int(r) >= len(m.rows):
		m.fail(fmt.Errorf("%w: row %d of %d", ErrInvalidModel, r, len(m.rows)))
	case in.dropped[r]:
		m.fail(fmt.Errorf("%w: row %q was dropped (DropRows)", ErrInvalidModel, m.rnames[r]))
	case emptyRange(lo, hi):
		m.fail(fmt.Errorf("%w: row %q has empty range [%v, %v]", ErrInvalidModel, m.rnames[r], lo, hi))
	default:
		m.rowLo[r], m.rowHi[r] = lo, hi
		in.bounded = true
	}
}

// SetVarBounds sets v's bounds to [lo, hi] (use -Inf and Inf for free
// sides); the next Solve uses them. Invalid input (an unknown variable,
// NaN, empty bounds) is reported by the next Solve.
func (in *Incremental) SetVarBounds(v Var, lo, hi float64) {
	m := in.m
	switch {
	case v < 0 || int(v) >= len(m.obj):
		m.fail(fmt.Errorf("%w: variable %d of %d", ErrInvalidModel, v, len(m.obj)))
	case emptyRange(lo, hi):
		m.fail(fmt.Errorf("%w: variable %q has empty bounds [%v, %v]", ErrInvalidModel, m.varName(v), lo, hi))
	default:
		m.lower[v], m.upper[v] = lo, hi
		in.bounded = true
	}
}

// SetObjective sets v's objective coefficient to c; the next Solve uses
// it, from the previous basis (see Incremental). Invalid input (an unknown
// variable, NaN or an infinite c) is reported by the next Solve.
func (in *Incremental) SetObjective(v Var, c float64) {
	m := in.m
	switch {
	case v < 0 || int(v) >= len(m.obj):
		m.fail(fmt.Errorf("%w: variable %d of %d", ErrInvalidModel, v, len(m.obj)))
	case math.IsNaN(c) || math.IsInf(c, 0):
		m.fail(fmt.Errorf("%w: objective coefficient %v of variable %q", ErrInvalidModel, c, m.varName(v)))
	default:
		m.obj[v] = c
		in.objective = true
	}
}

// DropRows takes out of the solver those of rows that the current optimal
// basis does not use: rows whose slack is basic, so that the basis stays
// valid and the next Solve warm. Row generation calls it to keep a loaded
// model small: a warm restart costs time that grows with the model's rows.
// A dropped row keeps its id, becomes free (its range is -Inf to Inf) and
// has a zero dual; setting its bounds afterwards is an error of the next
// Solve (ErrInvalidModel). A row not yet loaded (added since the last
// Solve) is an error too; one already dropped is left as it is. It
// returns the rows dropped, in the order given. PureGo removes a dropped
// row from its simplex with its basic logical variable; the model keeps
// it, free, and its dual reads 0. Before the first Solve, and with
// the Gonum backend (which keeps no basis), it drops nothing.
func (in *Incremental) DropRows(rows []Row) []Row {
	if in.closed || (in.clp == nil && in.spx == nil) {
		return nil
	}
	loaded := in.loaded
	if in.spx != nil {
		loaded = in.spx.loaded
	}
	for _, r := range rows {
		if r < 0 || int(r) >= loaded {
			in.m.fail(fmt.Errorf("%w: row %d of %d loaded", ErrInvalidModel, r, loaded))
			return nil
		}
	}
	var out []Row
	if in.spx != nil {
		out = in.spx.dropRows(rows)
	} else {
		out = in.clp.dropRows(rows)
	}
	if in.dropped == nil && len(out) > 0 {
		in.dropped = make(map[Row]bool, len(out))
	}
	for _, r := range out {
		in.dropped[r] = true
		in.m.rowLo[r], in.m.rowHi[r] = math.Inf(-1), math.Inf(1)
	}
	return out
}

// NumVars returns the number of columns.
func (in *Incremental) NumVars() int { return in.m.NumVars() }

// NumRows returns the number of rows, including those added so far.
func (in *Incremental) NumRows() int { return in.m.NumRows() }

// Solve solves the model with every row added so far, warm where the
// backend allows it, and checks the solution against all of them. Errors
// and statuses are those of the package-level Solve.
func (in *Incremental) Solve(ctx context.Context) (*Solution, error) {
	if in.closed {
		return nil, fmt.Errorf("%w: Incremental used after Close", ErrInvalidModel)
	}
	in.wait()
	if err := in.m.Err(); err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if len(in.m.obj) == 0 {
		sol, err := solveEmpty(in.m, in.set)
		if err != nil {
			return sol, err
		}
		return finish(in.m, sol, in.set)
	}
	switch in.set.Backend {
	case Gonum:
		sol, err := solveGonum(ctx, in.m, in.set)
		if err != nil {
			return sol, err
		}
		return finish(in.m, sol, in.set)
	case PureGo:
		if err := in.loadPureGo(ctx); err != nil {
			return nil, stopped(err)
		}
		sol, err := in.spx.solve(ctx, in.set)
		if err != nil {
			return sol, err
		}
		return finish(in.m, sol, in.set)
	}
	// A new objective for a model already loaded; a new model loads its
	// own.
	newObjective := in.objective && in.clp != nil
	if in.clp == nil {
		c, err := newCLPModel(in.m)
		if err != nil {
			return nil, err
		}
		in.clp = c
		in.loaded = len(in.m.rows)
		in.cleanup = runtime.AddCleanup(in, func(c *clpModel) { c.close() }, in.clp)
		in.warm = c.hint(in.m)
	} else {
		if in.bounded {
			if err := in.clp.setBounds(in.m, in.loaded); err != nil {
				return nil, err
			}
		}
		if err := in.clp.addRows(in.m, in.loaded); err != nil {
			return nil, err
		}
		in.loaded = len(in.m.rows)
	}
	set := in.set
	if newObjective {
		if err := in.clp.setObjective(in.m); err != nil {
			return nil, err
		}
		if set.Method == Auto {
			// The last optimum is primal feasible for the new objective;
			// the dual simplex would start from a basis that is not dual
			// feasible (space sharing's second LP: 10.4 s cold, 4.2 s so).
			set.Method = PrimalSimplex
		}
	}
	in.bounded, in.objective = false, false
	warm := in.warm
	sol, err := in.runCLP(ctx, set, warm)
	// CLP keeps a basis after any solve; dual simplex restarts from it.
	in.warm = true
	if warm && errors.Is(err, ErrInfeasible) && !in.clp.emptyRowInfeasible() {
		// CLP's warm dual simplex can call a feasible model infeasible
		// after its bounds change (a rapid case of
		// TestPropertyIncrementalBounds: a basic variable fixed at 0 and a
		// row's range flipped to the other side of 0); the primal simplex
		// from the basis it ended at confirms or refutes it.
		confirm := in.set
		confirm.Method = PrimalSimplex
		sol, err = in.runCLP(ctx, confirm, true)
	}
	if err != nil {
		return sol, err
	}
	return finish(in.m, sol, in.set)
}

// runCLP runs one solve of the loaded CLP model, as abandonable as
// clpModel.runAbandonable, and marks in busy until the run has left CLP.
func (in *Incremental) runCLP(ctx context.Context, set Settings, warm bool) (*Solution, error) {
	busy := make(chan struct{})
	in.busy = busy
	// The closure keeps in reachable, and so its cleanup from freeing clp,
	// while an abandoned solve still runs.
	return in.clp.runAbandonable(ctx, set, warm, func() { close(busy); runtime.KeepAlive(in) })
}

// Close frees the solver's memory. Solve fails after Close; Close may be
// called more than once.
func (in *Incremental) Close() {
	if in.closed {
		return
	}
	in.closed = true
	in.spx = nil
	in.wait()
	if in.clp != nil {
		in.cleanup.Stop()
		in.clp.close()
		in.clp = nil
	}
}

// loadPureGo creates the pure-Go simplex on the first solve, and passes
// it the rows added and the bounds changed since the last one.
func (in *Incremental) loadPureGo(ctx context.Context) error {
	if in.spx == nil {
		s, err := newSimplex(ctx, in.m)
		if err != nil {
			return err
		}
		in.spx = s
		in.bounded, in.objective = false, false
		return nil
	}
	if in.objective {
		if err := in.spx.setObjective(in.m); err != nil {
			return err
		}
		in.objective = false
	}
	if in.bounded {
		if err := in.spx.setBounds(in.m); err != nil {
			return err
		}
		in.bounded = false
	}
	if err := in.spx.addRows(ctx, in.m); err != nil {
		// Rows added in part: start again from the model next time.
		in.spx = nil
		return err
	}
	return nil
}

// wait returns once no abandoned solve runs in clp.
func (in *Incremental) wait() {
	if in.busy != nil {
		<-in.busy
		in.busy = nil
	}
}
