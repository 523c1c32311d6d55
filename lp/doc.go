// Package lp is a small, typed linear-programming layer: a sparse modelling
// API (Model, Var, Term), solvers behind one Solve function, and typed
// statuses and errors.
//
// Backends: COIN-OR CLP through cgo (the default when cgo is enabled), and
// gonum's dense simplex, pure Go, used when cgo is off or when Settings asks
// for it. One-shot CLP solves go through github.com/lanl/clp; a thin layer
// over CLP's own C interface (coin/Clp_C_Interface.h, in the same Debian
// package) serves what lanl/clp lacks: presolve (Settings.Presolve), rows
// added to a loaded model with warm re-solves (Incremental), and iteration
// counts. The gonum backend is a fallback for small models only: its simplex
// is dense, and Gavel's max-min LP at 64 jobs × 3 types already takes
// seconds with it where CLP takes milliseconds at 256 × 3
// (docs/benchmarks/lp.md).
//
// Every solution Solve returns as optimal has been checked against its
// bounds and rows within Settings.FeasibilityTol; a violation is an error.
package lp
