// Package lp is a small, typed linear-programming layer: a sparse modelling
// API (Model, Var, Term), solvers behind one Solve function, and typed
// statuses and errors.
//
// Backends: PureGo, this package's sparse bounded simplex, the default, so
// that the library needs no system package and builds with cgo off
// (docs/benchmarks/lp.md: within 0.5-1.5x of CLP's time on this project's
// LPs); COIN-OR CLP through cgo, compiled in with the clp build tag
// (go build -tags clp; then the default); and gonum's dense simplex, kept
// as a cross-check for small models. CLP is reached through a thin
// layer over its own C interface (coin/Clp_C_Interface.h, in the Debian
// package coinor-libclp-dev), which offers what github.com/lanl/clp lacks:
// presolve (Settings.Presolve), rows added to a loaded model, and its
// bounds and objective changed, with warm re-solves (Incremental), iteration counts, and, with a few lines of C++
// (clp_stop.cpp), a solve that stops within one simplex iteration of its
// context being done.
//
// Every model is scaled by powers of two before CLP or the pure-Go simplex
// sees it (scale.go; gonum's cross-check takes it as given):
// rows and columns equilibrated, the objective brought to a largest
// coefficient of 1 and the bounds below 1e10. CLP aborts the process on an
// objective coefficient of 1e25, takes bounds of 1e30 as infinite, and
// reads objectives of 1e-8 as zero; after scaling none of these is met. A
// model whose coefficients still span more than 1e15 after scaling is
// refused with ErrInvalidModel, as is one whose scaling takes a nonzero
// bound or objective coefficient below float64's normal range (the value
// would be lost); Settings.Method Barrier gives way to
// dual simplex beyond a span of 1e8, where CLP's barrier has crashed.
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
