package lp

import (
	"context"
	"fmt"
	"runtime"
)

// Incremental is a model kept loaded in its solver between solves, for row
// generation: solve, add the rows the solution violates, solve again. With
// CLP the re-solve is warm: the rows are appended to the loaded model and
// dual simplex restarts from the previous optimal basis, which stays dual
// feasible, so a few added rows cost a few pivots. With Gonum every solve
// starts from scratch.
//
// Warm re-solves matter for correctness as well as speed on degenerate
// LPs: a cold solve may land on another optimal vertex each round, with new
// small violations, and row generation then fails to converge.
//
// An Incremental is not safe for concurrent use. Close frees the solver's
// memory; an Incremental that is not closed is freed when it is garbage
// collected.
type Incremental struct {
	m       *Model
	set     Settings
	clp     *clpModel
	cleanup runtime.Cleanup
	loaded  int  // rows of m already loaded into clp
	warm    bool // clp holds a basis from an earlier solve
	closed  bool
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
	if in.set.Backend != CLP {
		sol, err := solveGonum(ctx, in.m, in.set)
		if err != nil {
			return sol, err
		}
		return finish(in.m, sol, in.set)
	}
	if in.clp == nil {
		in.clp = newCLPModel(in.m)
		in.loaded = len(in.m.rows)
		in.cleanup = runtime.AddCleanup(in, func(c *clpModel) { c.close() }, in.clp)
	} else {
		in.clp.addRows(in.m, in.loaded)
		in.loaded = len(in.m.rows)
	}
	sol, err := in.clp.run(ctx, in.set, in.warm)
	// CLP keeps a basis after any solve; dual simplex restarts from it.
	in.warm = true
	if err != nil {
		return sol, err
	}
	return finish(in.m, sol, in.set)
}

// Close frees the solver's memory. Solve fails after Close; Close may be
// called more than once.
func (in *Incremental) Close() {
	if in.closed {
		return
	}
	in.closed = true
	if in.clp != nil {
		in.cleanup.Stop()
		in.clp.close()
		in.clp = nil
	}
}
