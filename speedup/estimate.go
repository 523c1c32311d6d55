package speedup

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

// ErrEstimate reports a matrix whose missing cells cannot be estimated: a row
// or a GPU type without any measured (positive, in log space) cell, a rank
// the matrix is too small for, or a model whose estimate of a cell is not a
// positive, finite rate.
var ErrEstimate = errors.New("speedup: cannot estimate missing cells")

// Space is the scale on which Complete fits its model.
type Space int

const (
	// LogSpace fits log(rate). Throughputs span orders of magnitude and GPU
	// types scale them by factors, so on the log scale a job's rates are its
	// own level plus a per-type shift: the row and column effects of the
	// model. Zero cells (a job that cannot run on a type) have no logarithm;
	// they are kept as measured but do not inform the fit.
	LogSpace Space = iota
	// LinearSpace fits the rates themselves. Large rates dominate the fit,
	// and an estimate may come out zero or negative: Complete refuses it.
	LinearSpace
)

// String returns the space's name: "log", "linear", or "Space(n)" for a
// value that is neither.
func (s Space) String() string {
	switch s {
	case LogSpace:
		return "log"
	case LinearSpace:
		return "linear"
	}
	return fmt.Sprintf("Space(%d)", int(s))
}

// CompleteSettings choose the model Complete fits. The zero value fits the
// additive model on the log scale (a rate is a job factor times a GPU-type
// factor), which was the most accurate on Gavel's measured throughputs; see
// docs/benchmarks/gpu.md. A field out of its range below is refused by a
// *gpufair.InputError naming it ("CompleteSettings.Rank") and wrapping
// gpufair.ErrValue, or, for a Rank the matrix is too small for,
// gpufair.ErrTooLarge and ErrEstimate.
type CompleteSettings struct {
	// Space is LogSpace or LinearSpace.
	Space Space
	// Rank is the number of low-rank components fitted on top of the row and
	// column effects (or on their own, with NoEffects): at least 0 (at least
	// 1 with NoEffects) and less than both dimensions of the matrix.
	Rank int
	// NoEffects drops the grand mean and the row and column effects, leaving
	// a plain rank-Rank fit.
	NoEffects bool
	// MaxIter bounds the imputation sweeps: at least 0, and 0 means 2000.
	MaxIter int
	// Tol stops the sweeps when the root-mean-square change of the estimated
	// cells, relative to the root-mean-square of the fitted values, falls
	// below it: finite and at least 0, and 0 means 1e-10.
	Tol float64
}

// withDefaults checks the settings that do not depend on the matrix and
// returns them with the defaults of MaxIter and Tol filled in.
func (s CompleteSettings) withDefaults() (CompleteSettings, error) {
	var errs []error
	if s.Space != LogSpace && s.Space != LinearSpace {
		errs = append(errs, gpufair.Invalid("CompleteSettings.Space", "", gpufair.ErrValue, "%v is neither LogSpace nor LinearSpace", s.Space))
	}
	switch {
	case s.Rank < 0:
		errs = append(errs, gpufair.Invalid("CompleteSettings.Rank", "", gpufair.ErrValue, "%d is negative", s.Rank))
	case s.NoEffects && s.Rank == 0:
		errs = append(errs, gpufair.Invalid("CompleteSettings.Rank", "", gpufair.ErrValue, "0 with NoEffects leaves nothing to fit"))
	}
	if s.MaxIter < 0 {
		errs = append(errs, gpufair.Invalid("CompleteSettings.MaxIter", "", gpufair.ErrValue, "%d is negative", s.MaxIter))
	}
	if math.IsNaN(s.Tol) || math.IsInf(s.Tol, 0) || s.Tol < 0 {
		// A NaN Tol is never met: MaxIter sweeps, or a hang with a large MaxIter.
		errs = append(errs, gpufair.Invalid("CompleteSettings.Tol", "", gpufair.ErrValue, "%v is not finite and non-negative", s.Tol))
	}
	if s.MaxIter == 0 {
		s.MaxIter = 2000
	}
	if s.Tol == 0 {
		s.Tol = 1e-10
	}
	return s, errors.Join(errs...)
}

// Completion is the result of Complete.
type Completion struct {
	Matrix     *Matrix  // measured cells as given, missing cells estimated
	Estimated  [][]bool // Estimated[i][k] reports that cell (i, k) was missing
	Iterations int      // imputation sweeps made
	Converged  bool     // the sweeps met Tol before MaxIter
}

// Complete estimates the missing cells of a throughput matrix from its
// measured cells by low-rank matrix completion, the technique Gavel's
// throughput estimator uses (section 3.3).
//
// values[i][k] is the rate of rows[i] on types[k]; NaN marks a missing cell.
// Every other cell must be finite and non-negative. On the chosen Space, with
// y the transformed rates, the fitted model is
//
//	y[i][k] ≈ μ + a[i] + b[k] + Σ_{c<Rank} u[i][c]·v[k][c]
//
// (without μ, a, b when NoEffects is set), fitted to the measured cells by
// least squares with the iterative SVD imputation of Mazumder, Hastie and
// Tibshirani ("hard-impute"): start the missing cells at the row and column
// effects of the measured ones, then repeat: take the effects of the filled
// matrix (its grand, row and column means), truncate the SVD of what is left
// to Rank components, and refill the missing cells from the model, until the
// refilled values stop changing (Tol) or MaxIter sweeps. Each sweep lowers
// the squared error on the measured cells, and the result, once the sweeps
// converge, is a stationary point of it. Everything is deterministic.
//
// A missing cell can be estimated only if its row and its type are joined by
// a chain of measured cells (row i measured on type k, row j measured on k
// and on k', …): otherwise, and in particular when its row or type has no
// usable measured cell, Complete returns an error wrapping ErrEstimate that
// names it (a *CellError).
//
// Every estimate is a positive, finite rate, as a 0 would say the job cannot
// run on the type. Where the model gives a cell an estimate that is not (zero
// or negative, as a linear fit can; an exp that underflows or overflows;
// linear rates near float64's limit), Complete returns no matrix but an error
// joining a *CellError for each such cell, with the estimate as its Value,
// wrapping ErrEstimate (and gpufair.ErrTooLarge where it overflows). Sweeps
// that stop at MaxIter do not make an error: Completion.Converged reports it.
//
// Invalid cells (±Inf, negative) and bad shapes give the errors of New;
// settings out of range, those described at CompleteSettings. Complete copies
// its input.
func Complete(rows []string, types []topology.GPUType, values [][]float64, s *CompleteSettings) (*Completion, error) {
	var set CompleteSettings
	if s != nil {
		set = *s
	}
	set, err := set.withDefaults()
	if err != nil {
		return nil, err
	}
	// Validate through New with missing cells set to zero, so that shape and
	// value errors read exactly as New's.
	probe := make([][]float64, len(values))
	for i, r := range values {
		probe[i] = make([]float64, len(r))
		for k, x := range r {
			if !math.IsNaN(x) {
				probe[i][k] = x
			}
		}
	}
	if _, err := New(rows, types, probe); err != nil {
		return nil, err
	}
	m, n := len(rows), len(types)
	if set.Rank >= min(m, n) {
		return nil, gpufair.Invalid("CompleteSettings.Rank", "", gpufair.ErrTooLarge, "%w: rank %d for a %d×%d matrix (it must be less than both dimensions)", ErrEstimate, set.Rank, m, n)
	}

	// known[i][k]: the cell informs the fit; missing[i][k]: it is estimated.
	y := mat.NewDense(m, n, nil)
	known := make([][]bool, m)
	missing := make([][]bool, m)
	nMissing := 0
	for i, r := range values {
		known[i] = make([]bool, n)
		missing[i] = make([]bool, n)
		for k, x := range r {
			switch {
			case math.IsNaN(x):
				missing[i][k] = true
				nMissing++
			case set.Space == LogSpace && x == 0:
				// measured "cannot run": kept, not fitted
			case set.Space == LogSpace:
				known[i][k] = true
				y.Set(i, k, math.Log(x))
			default:
				known[i][k] = true
				y.Set(i, k, x)
			}
		}
	}
	if err := checkCoverage(rows, types, values, known, missing); err != nil {
		return nil, err
	}
	if err := checkConnected(rows, types, known, missing); err != nil {
		return nil, err
	}

	out := &Completion{Estimated: missing}
	if nMissing > 0 {
		fill := make([][]bool, m) // cells the sweeps refill: missing or unusable
		for i := range fill {
			fill[i] = make([]bool, n)
			for k := range fill[i] {
				fill[i][k] = !known[i][k]
			}
		}
		out.Iterations, out.Converged = impute(y, known, fill, set)
	} else {
		out.Converged = true
	}

	res := make([][]float64, m)
	var errs []error
	for i := range res {
		res[i] = make([]float64, n)
		for k := range res[i] {
			x := values[i][k]
			if missing[i][k] {
				x = y.At(i, k)
				if set.Space == LogSpace {
					x = math.Exp(x)
				}
				if err := checkEstimate(x, set.Space); err != nil {
					errs = append(errs, &CellError{Row: rows[i], Type: types[k], Value: x, Err: err})
				}
			}
			res[i][k] = x
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out.Matrix = &Matrix{rows: slices.Clone(rows), types: slices.Clone(types), v: slices.Concat(res...)}
	return out, nil
}

// checkEstimate returns why x, an estimate on space s, is not a positive,
// finite rate, or nil.
func checkEstimate(x float64, s Space) error {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		if s == LinearSpace {
			return fmt.Errorf("%w: %w: the linear fit overflows float64 (LogSpace fits such rates)", ErrEstimate, gpufair.ErrTooLarge)
		}
		return fmt.Errorf("%w: %w: the estimate overflows float64", ErrEstimate, gpufair.ErrTooLarge)
	case x <= 0 && s == LinearSpace:
		return fmt.Errorf("%w: the linear fit's estimate is not positive (a 0 would say the job cannot run on the type; LogSpace's estimates are positive)", ErrEstimate)
	case x <= 0:
		return fmt.Errorf("%w: the estimate underflows to 0 (a 0 would say the job cannot run on the type)", ErrEstimate)
	}
	return nil
}

// checkCoverage reports rows and types that have missing cells but no cell
// that informs the fit: none measured, or, in log space, only zeros.
func checkCoverage(rows []string, types []topology.GPUType, values [][]float64, known, missing [][]bool) error {
	why := func(measured bool, of string) string {
		if measured {
			return "every measured cell of the " + of + " is 0, and LogSpace fits only positive rates"
		}
		return "no measured cell in the " + of
	}
	var errs []error
	colKnown := make([]bool, len(types))
	colMissing := make([]bool, len(types))
	colMeasured := make([]bool, len(types))
	for i := range rows {
		rk, rm, measured := false, false, false
		for k := range types {
			rk = rk || known[i][k]
			rm = rm || missing[i][k]
			measured = measured || !math.IsNaN(values[i][k])
			colKnown[k] = colKnown[k] || known[i][k]
			colMissing[k] = colMissing[k] || missing[i][k]
			colMeasured[k] = colMeasured[k] || !math.IsNaN(values[i][k])
		}
		if rm && !rk {
			errs = append(errs, &CellError{Row: rows[i], Err: fmt.Errorf("%w: %s", ErrEstimate, why(measured, "row"))})
		}
	}
	for k, t := range types {
		if colMissing[k] && !colKnown[k] {
			errs = append(errs, &CellError{Type: t, Err: fmt.Errorf("%w: %s", ErrEstimate, why(colMeasured[k], "GPU type"))})
		}
	}
	return errors.Join(errs...)
}

// checkConnected reports a missing cell whose row and type are not joined by
// a chain of measured cells (row i – type k – row j – …). Without such a
// chain the data say nothing about how the row's level compares with the
// type's: in the effects model, shifting one connected block of rows and
// types against another fits the measured cells equally well.
func checkConnected(rows []string, types []topology.GPUType, known, missing [][]bool) error {
	l := newLinks(len(rows), len(types))
	for i := range rows {
		for k := range types {
			if known[i][k] {
				l.join(i, k)
			}
		}
	}
	for i := range rows {
		for k, t := range types {
			if missing[i][k] && !l.joined(i, k) {
				return &CellError{Row: rows[i], Type: t, Value: math.NaN(),
					Err: fmt.Errorf("%w: no chain of measured cells joins the row to the type", ErrEstimate)}
			}
		}
	}
	return nil
}

// links is a union-find over the rows (0..m-1) and the types (m..) of an
// m-row matrix: a cell joins its row and its type, and a cell's row and
// type are joined when a chain of cells (row – type – row – …) links them,
// which is when the cell can be estimated from the others.
type links struct {
	m      int
	parent []int
}

func newLinks(m, n int) *links {
	l := &links{m: m, parent: make([]int, m+n)}
	for x := range l.parent {
		l.parent[x] = x
	}
	return l
}

func (l *links) find(x int) int {
	for l.parent[x] != x {
		l.parent[x] = l.parent[l.parent[x]]
		x = l.parent[x]
	}
	return x
}

// join records cell (i, k).
func (l *links) join(i, k int) { l.parent[l.find(i)] = l.find(l.m + k) }

// joined reports whether row i and type k are linked.
func (l *links) joined(i, k int) bool { return l.find(i) == l.find(l.m+k) }

// impute runs the sweeps on y in place: cells with fill set are overwritten
// by the model, the others are data.
func impute(y *mat.Dense, known, fill [][]bool, set CompleteSettings) (iters int, converged bool) {
	m, n := y.Dims()
	// Start: effects of the known cells, by alternating means (a few rounds
	// are enough for a starting point).
	mu, a, b := knownEffects(y, known)
	for i := range m {
		for k := range n {
			if fill[i][k] {
				y.Set(i, k, mu+a[i]+b[k])
			}
		}
	}
	r := mat.NewDense(m, n, nil)
	var svd mat.SVD
	var u, v mat.Dense
	for iters < set.MaxIter {
		iters++
		// Effects of the filled matrix.
		mu, a, b = 0, make([]float64, m), make([]float64, n)
		if !set.NoEffects {
			for i := range m {
				for k := range n {
					x := y.At(i, k)
					a[i] += x / float64(n)
					b[k] += x / float64(m)
					mu += x / float64(m*n)
				}
			}
			for i := range a {
				a[i] -= mu
			}
			for k := range b {
				b[k] -= mu
			}
		}
		for i := range m {
			for k := range n {
				r.Set(i, k, y.At(i, k)-mu-a[i]-b[k])
			}
		}
		rank := set.Rank
		var sigma []float64
		if rank > 0 {
			if !svd.Factorize(r, mat.SVDThin) {
				return iters, false
			}
			svd.UTo(&u)
			svd.VTo(&v)
			sigma = svd.Values(nil)
		}
		var change, scale float64
		for i := range m {
			for k := range n {
				if !fill[i][k] {
					continue
				}
				z := mu + a[i] + b[k]
				for c := range rank {
					z += sigma[c] * u.At(i, c) * v.At(k, c)
				}
				d := z - y.At(i, k)
				change += d * d
				scale += z * z
				y.Set(i, k, z)
			}
		}
		if change <= set.Tol*set.Tol*max(scale, 1e-300) {
			return iters, true
		}
	}
	return iters, false
}

// knownEffects fits y ≈ mu + a[i] + b[k] on the known cells by alternating
// means (backfitting), until no effect moves by more than effectsTol or
// after maxBackfit rounds: the starting point of the sweeps, and for Rank 0
// already their fixed point.
func knownEffects(y *mat.Dense, known [][]bool) (mu float64, a, b []float64) {
	m, n := y.Dims()
	a, b = make([]float64, m), make([]float64, n)
	cnt := 0
	for i := range m {
		for k := range n {
			if known[i][k] {
				mu += y.At(i, k)
				cnt++
			}
		}
	}
	mu /= float64(cnt)
	for range maxBackfit {
		moved := 0.0
		for i := range m {
			s, c := 0.0, 0
			for k := range n {
				if known[i][k] {
					s += y.At(i, k) - mu - b[k]
					c++
				}
			}
			if c > 0 {
				moved = max(moved, math.Abs(s/float64(c)-a[i]))
				a[i] = s / float64(c)
			}
		}
		for k := range n {
			s, c := 0.0, 0
			for i := range m {
				if known[i][k] {
					s += y.At(i, k) - mu - a[i]
					c++
				}
			}
			if c > 0 {
				moved = max(moved, math.Abs(s/float64(c)-b[k]))
				b[k] = s / float64(c)
			}
		}
		if moved <= effectsTol {
			break
		}
	}
	return mu, a, b
}

// effectsTol is the largest change of a row or column effect (in the units
// of the fitted values) at which backfitting stops; maxBackfit bounds its
// rounds. The sweeps that follow refine the start anyway.
const (
	effectsTol = 1e-12
	maxBackfit = 10000
)
