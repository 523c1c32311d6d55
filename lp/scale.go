package lp

import (
	"context"
	"fmt"
	"math"
)

// CLP aborts the process on some inputs instead of failing: an objective
// coefficient of 1e25 or more trips an assertion, and a finite bound of
// 1e30 or more is silently taken as infinite. Every model is therefore
// scaled before CLP sees it, by powers of two (exact in floating point):
//
//	x_j = β·s_j·x''_j,   row i multiplied by r_i/β,   objective by γ,
//
// so that CLP solves
//
//	optimise  Σ_j (γ·c_j·s_j) x''_j
//	s.t.      r_i·lo_i/β ≤ Σ_j (r_i·a_ij·s_j) x''_j ≤ r_i·hi_i/β,   l_j/(β·s_j) ≤ x''_j ≤ u_j/(β·s_j).
//
// The row and column factors r_i, s_j equilibrate the matrix (geometric
// means, as CLP's own scaling does) when its coefficients leave
// [1/equilibrateBeyond, equilibrateBeyond]; within that range they are 1,
// since CLP's own scaling then solves more accurately than after ours; β brings the largest finite bound
// down to maxScaledBound; γ makes the largest objective coefficient 1, so
// that CLP's absolute dual tolerance is measured against the objective's
// own size (rates of 1e-8 would otherwise all look like zero reduced
// costs). A model whose scaled coefficients still lie outside
// [1/maxScaledCoef, maxScaledCoef], or span a wider ratio than
// maxScaledCoef, is refused with ErrInvalidModel: no double-precision
// simplex solves it reliably.
const (
	// maxScaledCoef bounds |r_i·a_ij·s_j|, its reciprocal and the ratio
	// of the largest to the smallest after scaling.
	maxScaledCoef = 1e15
	// maxScaledBound is the largest finite bound, after scaling, passed to
	// CLP: far below the 1e27 beyond which CLP treats a bound as infinite.
	maxScaledBound = 1e10
	// maxCLPBound is the largest finite scaled bound accepted when the
	// bounds of a loaded model change (Incremental), whose scaling was
	// fixed when it was loaded.
	maxCLPBound = 1e20
	// ctxRows is how many rows newScaling passes between context checks.
	ctxRows = 2048
	// equilibrateBeyond is the coefficient magnitude beyond which (or
	// below whose reciprocal) rows and columns are equilibrated.
	equilibrateBeyond = 1e8
	// scalingPasses is the number of row-then-column geometric passes.
	scalingPasses = 4
	// barrierCoefRange is the largest ratio between scaled coefficients
	// for which Settings.Method Barrier is used as asked; beyond it CLP's
	// barrier has segfaulted (min 1e-12x+1e12y s.t. 1e12x+1e-12y ≥ 1,
	// 1e-12x+1e12y ≥ 1), and dual simplex solves instead.
	barrierCoefRange = 1e8
)

// scaling holds the factors of one model's scaling; rows may be added
// later (Incremental), which keeps the column factors.
type scaling struct {
	col   []float64 // s_j
	row   []float64 // r_i, per model row
	obj   float64   // γ
	bound float64   // β
	// lo, hi are the smallest and largest scaled |coefficient|.
	lo, hi float64
	// equilibrate is whether rows get geometric factors.
	equilibrate bool
}

// maxScaleExp bounds the exponent of every scale factor: 2^±1000 keeps
// them, and values they multiply that were finite, finite. A subnormal
// objective (1/x overflows) once made the objective's factor +Inf.
const maxScaleExp = 1000

// exp2 returns 2 to the power e rounded to an integer, e clamped to
// ±maxScaleExp.
func exp2(e float64) float64 {
	return math.Exp2(math.Max(-maxScaleExp, math.Min(maxScaleExp, math.Round(e))))
}

// invGeoMean returns the power of two nearest to 1/sqrt(lo·hi), computed
// in logarithms so that neither the product nor its reciprocal overflows.
func invGeoMean(lo, hi float64) float64 {
	return exp2(-(math.Log2(lo) + math.Log2(hi)) / 2)
}

// newScaling computes m's factors and checks the scaled model's range. It
// returns ctx's error if ctx is done first.
func newScaling(ctx context.Context, m *Model) (*scaling, error) {
	n := len(m.obj)
	sc := &scaling{col: make([]float64, n), row: make([]float64, len(m.rows)), obj: 1, bound: 1, lo: math.Inf(1)}
	for j := range sc.col {
		sc.col[j] = 1
	}
	for _, row := range m.rows {
		for _, t := range row {
			if a := math.Abs(t.Coef); a != 0 && (a > equilibrateBeyond || a < 1/equilibrateBeyond) {
				sc.equilibrate = true
			}
		}
	}
	lo := make([]float64, n)
	hi := make([]float64, n)
	for pass := 0; sc.equilibrate && pass < scalingPasses; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range m.rows {
			sc.row[i] = sc.rowFactor(m.rows[i])
		}
		for j := range lo {
			lo[j], hi[j] = math.Inf(1), 0
		}
		for i, row := range m.rows {
			if i%ctxRows == ctxRows-1 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			for _, t := range row {
				if a := math.Abs(t.Coef) * sc.row[i]; a != 0 {
					lo[t.Var], hi[t.Var] = min(lo[t.Var], a), max(hi[t.Var], a)
				}
			}
		}
		for j := range sc.col {
			if hi[j] > 0 {
				sc.col[j] = invGeoMean(lo[j], hi[j])
			}
		}
	}
	for i := range m.rows {
		sc.row[i] = sc.rowFactor(m.rows[i])
	}
	// The largest bound after the row and column factors, in logarithms:
	// their products may leave float64's range.
	bmax := math.Inf(-1)
	for j := range m.obj {
		for _, b := range [2]float64{m.lower[j], m.upper[j]} {
			if b != 0 && !math.IsInf(b, 0) {
				bmax = math.Max(bmax, math.Log2(math.Abs(b))-math.Log2(sc.col[j]))
			}
		}
	}
	for i := range m.rows {
		for _, b := range [2]float64{m.rowLo[i], m.rowHi[i]} {
			if b != 0 && !math.IsInf(b, 0) {
				bmax = math.Max(bmax, math.Log2(math.Abs(b))+math.Log2(sc.row[i]))
			}
		}
	}
	if over := bmax - math.Log2(maxScaledBound); over > 0 {
		sc.bound = exp2(math.Ceil(over))
	}
	if err := sc.check(m, 0); err != nil {
		return sc, err
	}
	if err := sc.scaleObjective(m); err != nil {
		return sc, err
	}
	return sc, sc.checkBounds(m, len(m.rows))
}

// scaleObjective sets the objective's factor from m's objective, so that
// its largest coefficient after the column factors is 1, and checks that
// no coefficient leaves the scaled range. The column factors, and so the
// basis, do not depend on it: an objective changed between warm solves
// (Incremental.SetObjective) is scaled anew.
func (sc *scaling) scaleObjective(m *Model) error {
	// In logarithms: the products may leave float64's range.
	cmax := math.Inf(-1)
	for j, c := range m.obj {
		if c != 0 {
			cmax = math.Max(cmax, math.Log2(math.Abs(c))+math.Log2(sc.col[j]))
		}
	}
	sc.obj = 1
	if !math.IsInf(cmax, -1) {
		sc.obj = exp2(-cmax)
	}
	for j := range m.obj {
		if c := sc.objective(m, j); math.Abs(c) > maxScaledCoef || lost(m.obj[j], c) {
			return fmt.Errorf("%w: objective coefficient %v of variable %q is %.3g after scaling: the objective spans too wide a range", ErrInvalidModel, m.obj[j], m.varName(Var(j)), c)
		}
	}
	return nil
}

// ldexp returns x·f·g for powers of two f and g, exactly, without
// overflowing on the way to a representable result.
func ldexp(x, f, g float64) float64 {
	return math.Ldexp(x, pow2Exp(f)+pow2Exp(g))
}

// pow2Exp returns the exponent of f, a power of two within exp2's range,
// read from its bits: math.Log2 took 6% of hierarchical water filling,
// which scales every bound at each round.
func pow2Exp(f float64) int {
	return int(math.Float64bits(f)>>52&0x7ff) - 1023
}

// rowFactor returns the geometric row factor of row under the current
// column factors.
func (sc *scaling) rowFactor(row []Term) float64 {
	if !sc.equilibrate {
		return 1
	}
	lo, hi := math.Inf(1), 0.0
	for _, t := range row {
		if a := math.Abs(t.Coef) * sc.col[t.Var]; a != 0 {
			lo, hi = math.Min(lo, a), math.Max(hi, a)
		}
	}
	if hi == 0 {
		return 1
	}
	return invGeoMean(lo, hi)
}

// addRows gives rows first.. of m their factors, keeping the column
// factors, and checks their range.
func (sc *scaling) addRows(m *Model, first int) error {
	for i := len(sc.row); i < len(m.rows); i++ {
		sc.row = append(sc.row, sc.rowFactor(m.rows[i]))
	}
	if err := sc.check(m, first); err != nil {
		return err
	}
	return sc.checkBoundsFrom(m, first, len(m.rows))
}

// check records the range of the scaled coefficients of rows first.. and
// refuses a model CLP cannot be trusted with.
func (sc *scaling) check(m *Model, first int) error {
	for i := first; i < len(m.rows); i++ {
		for _, t := range m.rows[i] {
			if t.Coef == 0 {
				continue
			}
			a := math.Abs(sc.coef(i, t))
			sc.lo, sc.hi = math.Min(sc.lo, a), math.Max(sc.hi, a)
			if a > maxScaledCoef || a < 1/maxScaledCoef || sc.hi/sc.lo > maxScaledCoef {
				return fmt.Errorf("%w: coefficient %v of variable %q in row %q is %.3g after scaling, and the scaled coefficients span [%.3g, %.3g], wider than 1e15: no double-precision simplex solves this reliably", ErrInvalidModel, t.Coef, m.varName(t.Var), m.rnames[i], a, sc.lo, sc.hi)
			}
		}
	}
	return nil
}

// barrierSafe reports whether the scaled coefficients lie in a range CLP's
// barrier solves without crashing.
func (sc *scaling) barrierSafe() bool {
	return sc.hi == 0 || sc.hi/sc.lo <= barrierCoefRange
}

// coef returns row i's scaled coefficient of t.Var.
func (sc *scaling) coef(i int, t Term) float64 { return ldexp(t.Coef, sc.row[i], sc.col[t.Var]) }

// objective returns the scaled objective coefficient of column j.
func (sc *scaling) objective(m *Model, j int) float64 { return ldexp(m.obj[j], sc.obj, sc.col[j]) }

// colBounds returns column j's scaled bounds.
func (sc *scaling) colBounds(m *Model, j int) (lo, hi float64) {
	return ldexp(m.lower[j], 1/sc.bound, 1/sc.col[j]), ldexp(m.upper[j], 1/sc.bound, 1/sc.col[j])
}

// rowBounds returns row i's scaled range.
func (sc *scaling) rowBounds(m *Model, i int) (lo, hi float64) {
	return ldexp(m.rowLo[i], sc.row[i], 1/sc.bound), ldexp(m.rowHi[i], sc.row[i], 1/sc.bound)
}

// unscale maps a solution of the scaled model back to m's units.
func (sc *scaling) unscale(sol *Solution) {
	for j := range sol.X {
		sol.X[j] = ldexp(sol.X[j], sc.bound, sc.col[j])
	}
	for i := range sol.RowDuals {
		sol.RowDuals[i] = ldexp(sol.RowDuals[i], sc.row[i], 1/sc.obj)
	}
}

// checkBounds refuses bounds of the columns and of the first rows of m
// that the current factors leave beyond maxCLPBound.
func (sc *scaling) checkBounds(m *Model, rows int) error {
	return sc.checkBoundsFrom(m, 0, rows)
}

// checkBoundsFrom is checkBounds for the columns and rows first..rows-1.
func (sc *scaling) checkBoundsFrom(m *Model, first, rows int) error {
	bad := func(lo, hi, rawLo, rawHi float64) bool {
		return !math.IsInf(lo, 0) && math.Abs(lo) > maxCLPBound || !math.IsInf(hi, 0) && math.Abs(hi) > maxCLPBound ||
			lost(rawLo, lo) || lost(rawHi, hi)
	}
	for j := range m.obj {
		if lo, hi := sc.colBounds(m, j); bad(lo, hi, m.lower[j], m.upper[j]) {
			return fmt.Errorf("%w: variable %q has bounds [%v, %v], beyond the range of the loaded model's scaling", ErrInvalidModel, m.varName(Var(j)), m.lower[j], m.upper[j])
		}
	}
	for i := first; i < rows; i++ {
		if lo, hi := sc.rowBounds(m, i); bad(lo, hi, m.rowLo[i], m.rowHi[i]) {
			return fmt.Errorf("%w: row %q has range [%v, %v], beyond the range of the loaded model's scaling", ErrInvalidModel, m.rnames[i], m.rowLo[i], m.rowHi[i])
		}
	}
	return nil
}

// lost reports that x, a nonzero finite bound or objective coefficient,
// scaled to s below float64's normal range: what it said is gone. Beside
// a coefficient of 1e200, a variable's bound of 1 scaled to 0 and fixed it,
// and the solve reported a wrong optimum.
func lost(x, s float64) bool { return x != 0 && !math.IsInf(x, 0) && math.Abs(s) < 0x1p-1022 }
