package lp

import (
	"fmt"
	"math"
	"slices"
)

// Sense is the direction of optimisation.
type Sense int

const (
	Minimize Sense = iota // the zero value
	Maximize              // the objective is maximised
)

// Op is the relation of a constraint row to its right-hand side.
type Op int

const (
	LE Op = iota // Σ a_j x_j ≤ rhs
	GE           // Σ a_j x_j ≥ rhs
	EQ           // Σ a_j x_j = rhs
)

// Var is a column of a Model, as returned by Model.AddVar.
type Var int

// Row is a constraint of a Model, as returned by Model.AddConstraint.
type Row int

// Term is one coefficient of a sparse linear expression.
type Term struct {
	Var  Var
	Coef float64
}

// Inf is the bound of an unbounded side: use -Inf for a free lower bound.
var Inf = math.Inf(1)

// Model is a linear program
//
//	minimise or maximise  Σ_j c_j x_j
//	subject to            lo_i ≤ Σ_j a_ij x_j ≤ hi_i   for each row i
//	                      l_j ≤ x_j ≤ u_j             for each column j
//
// built incrementally with sparse rows. The zero value is an empty
// minimisation. A Model is not safe for concurrent modification; solving
// does not modify it, so one model may be solved by several goroutines.
type Model struct {
	sense  Sense
	obj    []float64 // per column
	lower  []float64
	upper  []float64
	names  []string    // per column; "" for a Grid's, named by grids
	grids  []gridNames // the grids, in order of their first column
	rowLo  []float64
	rowHi  []float64
	rows   [][]Term // sparse rows, duplicates merged
	rnames []string
	start  []float64 // SetStart's hints, per column; nil when none
	basis  Basis     // SetBasisHint's hint
	err    error     // first malformed input, reported by Solve
}

// NewModel returns an empty model with the given sense.
func NewModel(s Sense) *Model { return &Model{sense: s} }

// SetSense sets the direction of optimisation.
func (m *Model) SetSense(s Sense) { m.sense = s }

// Sense returns the direction of optimisation.
func (m *Model) Sense() Sense { return m.sense }

// AddVar adds a column with bounds [lower, upper] (use -Inf and Inf for free
// sides) and objective coefficient obj, and returns it. The name is used in
// error messages only and may be empty.
func (m *Model) AddVar(name string, lower, upper, obj float64) Var {
	if m.err == nil {
		switch {
		case math.IsNaN(lower) || math.IsNaN(upper) || math.IsNaN(obj) || math.IsInf(obj, 0):
			m.err = fmt.Errorf("%w: variable %q has bounds [%v, %v] and objective %v", ErrInvalidModel, name, lower, upper, obj)
		case lower > upper || math.IsInf(lower, 1) || math.IsInf(upper, -1):
			m.err = fmt.Errorf("%w: variable %q has empty bounds [%v, %v]", ErrInvalidModel, name, lower, upper)
		}
	}
	m.obj = append(m.obj, obj)
	m.lower = append(m.lower, lower)
	m.upper = append(m.upper, upper)
	m.names = append(m.names, name)
	return Var(len(m.obj) - 1)
}

// SetObjective sets the objective coefficient of v. A variable not of m is
// a malformed input, as a NaN or infinite coefficient is.
func (m *Model) SetObjective(v Var, coef float64) {
	if !m.knownVar(v, "objective coefficient") {
		return
	}
	if m.err == nil && (math.IsNaN(coef) || math.IsInf(coef, 0)) {
		m.err = fmt.Errorf("%w: objective coefficient %v of variable %q", ErrInvalidModel, coef, m.varName(v))
	}
	m.obj[v] = coef
}

// knownVar reports whether v is a variable of m, and records a malformed
// input (what names what was being set) if not.
func (m *Model) knownVar(v Var, what string) bool {
	if v >= 0 && int(v) < len(m.obj) {
		return true
	}
	m.fail(fmt.Errorf("%w: %s of variable %d, not a variable of the model (%d variables)", ErrInvalidModel, what, v, len(m.obj)))
	return false
}

// SetStart hints that the pure-Go simplex start from x_v = x (clamped to
// v's bounds) rather than from a bound. When the hints of a model's
// columns give a point that meets every row, the solve starts feasible and
// skips its first phase, which a caller who already holds a feasible
// point (an allocation being checked for improvements) should use: it is
// faster, and it cannot end with a roundoff-made verdict of
// infeasibility. CLP and gonum ignore hints. A NaN or infinite x, or a
// variable not of m, is a malformed input.
func (m *Model) SetStart(v Var, x float64) {
	if !m.knownVar(v, "start") {
		return
	}
	if m.err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		m.err = fmt.Errorf("%w: start %v of variable %q", ErrInvalidModel, x, m.varName(v))
	}
	if m.start == nil {
		m.start = make([]float64, len(m.obj))
		for j := range m.start {
			m.start[j] = math.NaN() // no hint
		}
	}
	for len(m.start) < len(m.obj) {
		m.start = append(m.start, math.NaN())
	}
	m.start[v] = x
}

// Basis names a basis of the simplex method by a model's indices: the
// variables basic in it, and the rows held at one of their bounds (their
// logical variables nonbasic). A basis of a model with m rows holds m basic
// variables, structural and logical, so the basis a solve ends on has as
// many Vars as Tight rows.
type Basis struct {
	Vars  []Var
	Tight []Row
}

// SetBasisHint hints that the pure-Go simplex start from the basis b
// rather than from the slack basis (every row's logical variable basic):
// typically the Basis of an earlier solve of a similar model, its indices
// mapped to this model's. The logical variables of b.Tight's rows leave
// the basis, and the variables of b.Vars are placed in their stead by the
// factorisation's pivot rule; rows left over keep their logicals, and
// variables left over stay nonbasic. A free row, or one named twice, keeps
// its logical. A tight row holds at its bound nearer to its activity at
// the start (SetStart's values, else each variable at the bound its cost
// favours); the solve then places every nonbasic variable at the bound its
// reduced cost under the hinted basis favours (below). Variables that
// prove linearly dependent stay nonbasic, their rows keeping their
// logicals; if the basis made is ill-conditioned all the same, the hint is
// dropped and the solve starts from the slack basis: a basis mapped from
// another model can be nearly singular where that model's structure
// changed, and the simplex can stall on it. A basis at or next to the
// optimum saves most of a solve's iterations: cooperative OEF's re-solve
// of 2,000 noisy jobs took 3,778 iterations from the slack basis and 3
// from its previous optimum's (docs/benchmarks/oef.md). The solve starts
// from the hinted basis in the dual phase, as from the slack basis, so
// that a solve stopped and resumed from its Basis again and again goes on
// to the end. Any hint leaves the result optimal; a poor one costs
// iterations only. It applies to the model's first solve (an
// Incremental's first Solve). CLP takes it as its starting statuses,
// pairing columns and rows in order, without the check of conditioning,
// and its first solve then runs warm, without presolve; gonum ignores it.
// A variable or row the model does not have is a malformed input; a later
// call replaces the hint.
func (m *Model) SetBasisHint(b Basis) {
	for _, v := range b.Vars {
		if v < 0 || int(v) >= len(m.obj) {
			m.fail(fmt.Errorf("%w: basis hint names variable %d of %d", ErrInvalidModel, v, len(m.obj)))
			return
		}
	}
	for _, r := range b.Tight {
		if r < 0 || int(r) >= len(m.rows) {
			m.fail(fmt.Errorf("%w: basis hint names row %d of %d", ErrInvalidModel, r, len(m.rows)))
			return
		}
	}
	m.basis = b.clone()
}

// clone returns a copy of b that shares no memory with it.
func (b Basis) clone() Basis {
	return Basis{Vars: slices.Clone(b.Vars), Tight: slices.Clone(b.Tight)}
}

// AddConstraint adds the row Σ terms op rhs and returns it. Terms naming the
// same variable are summed. rhs must be finite (a NaN or infinite one is a
// malformed input); AddRange takes an infinite side.
func (m *Model) AddConstraint(name string, terms []Term, op Op, rhs float64) Row {
	lo, hi := -Inf, Inf
	switch op {
	case LE:
		hi = rhs
	case GE:
		lo = rhs
	case EQ:
		lo, hi = rhs, rhs
	default:
		m.fail(fmt.Errorf("%w: row %q has unknown operator %d", ErrInvalidModel, name, op))
	}
	if math.IsNaN(rhs) || math.IsInf(rhs, 0) {
		m.fail(fmt.Errorf("%w: row %q has right-hand side %v", ErrInvalidModel, name, rhs))
	}
	return m.AddRange(name, terms, lo, hi)
}

// emptyRange reports whether [lo, hi] holds no number: a NaN side, lo > hi,
// or a range that is infinite in the wrong direction.
func emptyRange(lo, hi float64) bool {
	return math.IsNaN(lo) || math.IsNaN(hi) || lo > hi || math.IsInf(lo, 1) || math.IsInf(hi, -1)
}

// AddRange adds the row lo ≤ Σ terms ≤ hi (either side may be infinite) and
// returns it.
func (m *Model) AddRange(name string, terms []Term, lo, hi float64) Row {
	if emptyRange(lo, hi) {
		m.fail(fmt.Errorf("%w: row %q has empty range [%v, %v]", ErrInvalidModel, name, lo, hi))
	}
	row := make([]Term, 0, len(terms))
	idx := make(map[Var]int, len(terms))
	for _, t := range terms {
		if t.Var < 0 || int(t.Var) >= len(m.obj) {
			m.fail(fmt.Errorf("%w: row %q names variable %d of %d", ErrInvalidModel, name, t.Var, len(m.obj)))
			continue
		}
		if math.IsNaN(t.Coef) || math.IsInf(t.Coef, 0) {
			m.fail(fmt.Errorf("%w: row %q has coefficient %v for variable %q", ErrInvalidModel, name, t.Coef, m.varName(t.Var)))
			continue
		}
		if p, ok := idx[t.Var]; ok {
			row[p].Coef += t.Coef
			continue
		}
		idx[t.Var] = len(row)
		row = append(row, t)
	}
	m.rowLo = append(m.rowLo, lo)
	m.rowHi = append(m.rowHi, hi)
	m.rows = append(m.rows, row)
	m.rnames = append(m.rnames, name)
	return Row(len(m.rows) - 1)
}

func (m *Model) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// NumVars returns the number of columns.
func (m *Model) NumVars() int { return len(m.obj) }

// NumRows returns the number of constraint rows.
func (m *Model) NumRows() int { return len(m.rows) }

// Err returns the first malformed input given to the model (NaN or infinite
// coefficients, empty bounds, unknown variables), or nil. Solve returns it too.
func (m *Model) Err() error { return m.err }

// Clone returns a deep copy of m, including its error state, that can be
// extended without changing m.
func (m *Model) Clone() *Model {
	c := &Model{
		sense:  m.sense,
		obj:    append([]float64(nil), m.obj...),
		lower:  append([]float64(nil), m.lower...),
		upper:  append([]float64(nil), m.upper...),
		names:  append([]string(nil), m.names...),
		grids:  append([]gridNames(nil), m.grids...),
		rowLo:  append([]float64(nil), m.rowLo...),
		rowHi:  append([]float64(nil), m.rowHi...),
		rows:   make([][]Term, len(m.rows)),
		rnames: append([]string(nil), m.rnames...),
		start:  append([]float64(nil), m.start...),
		basis:  m.basis.clone(),
		err:    m.err,
	}
	for i, r := range m.rows {
		c.rows[i] = append([]Term(nil), r...)
	}
	return c
}
