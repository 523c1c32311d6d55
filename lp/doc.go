// Package lp is a small, typed linear-programming layer: a sparse modelling
// API (Model, Var, Term), solvers behind one Solve function, and typed
// statuses and errors.
//
// Backends: COIN-OR CLP through cgo (the default when cgo is enabled);
// PureGo, this package's sparse bounded primal simplex (the default when
// cgo is off, or with the purego build tag); and gonum's dense simplex,
// kept as a cross-check for small models. One-shot CLP solves go through
// github.com/lanl/clp; a thin layer over CLP's own C interface
// (coin/Clp_C_Interface.h, in the same Debian package) serves what
// lanl/clp lacks: presolve (Settings.Presolve), rows added to a loaded
// model with warm re-solves (Incremental), and iteration counts.
//
// PureGo keeps the basis inverse in product form over a sparse
// refactorisation, uses Harris's ratio test with bound shifting, and
// checks the context every few iterations; a basis that turns out
// singular loses its dependent columns to logical variables instead of
// failing. Incremental re-solves start from the previous basis. Both
// builds return the same typed errors for bad models (ErrInvalidModel)
// and for infeasible and unbounded ones (ErrInfeasible, ErrUnbounded).
// The gonum backend is dense, cannot be interrupted and gives no duals:
// Gavel's max-min LP at 64 jobs × 3 types already takes seconds with it
// (docs/benchmarks/lp.md).
//
// Every solution Solve returns as optimal has been checked against its
// bounds and rows within Settings.FeasibilityTol; a violation is an error.
package lp
