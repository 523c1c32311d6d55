package speedup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/stat"
	"github.com/gpufair/gpufair/topology"
)

// Candidates returns the models SelectSettings compares when it is given
// none, the default first: the additive log model, with one low-rank
// component added, plain rank-1 and rank-2 fits on the log scale, and the
// additive, rank-1 and rank-2 fits on the linear scale. No one of them is
// the most accurate on every matrix (docs/benchmarks/gpu.md): the additive
// log model is on Gavel's K80/P100/V100 table and for a new type unlike the
// others, a linear rank-1 fit for an H200 beside an H100.
func Candidates() []CompleteSettings {
	return []CompleteSettings{
		{},
		{Rank: 1},
		{Rank: 1, NoEffects: true},
		{Rank: 2, NoEffects: true},
		{Space: LinearSpace},
		{Space: LinearSpace, Rank: 1, NoEffects: true},
		{Space: LinearSpace, Rank: 2, NoEffects: true},
	}
}

// Validation is one candidate model's record in a Selection.
type Validation struct {
	Settings CompleteSettings
	// Errors holds, for each held-out cell in the order given, the relative
	// error |estimate − measured| / measured of the model's estimate of it
	// from the other measured cells; NaN where Complete refused the fit
	// (ErrEstimate: a rank the matrix is too small for, or an estimate of
	// some missing cell that is not positive and finite).
	Errors []float64
	// Median is the median of Errors, or NaN when any cell was refused.
	Median float64
	// Refused reports that Complete refuses the whole matrix, every measured
	// cell kept, with these settings (ErrEstimate): the candidate could not
	// be used, so it is not chosen whatever its Median.
	Refused bool
	// Unconverged counts the fits, of each held-out cell and of the whole
	// matrix, whose sweeps stopped at MaxIter before meeting Tol
	// (Completion.Converged false): their estimates are where the sweeps
	// stopped, not a fitted model's, so such a candidate is not chosen
	// whatever its Median.
	Unconverged int
}

// Selection is the result of SelectSettings.
type Selection struct {
	Best        CompleteSettings // the candidate of least median error of those not ruled out; the earlier one on a tie
	Validations []Validation     // every candidate, in the order given
}

// SelectSettings chooses the model for Complete by cross-validation: it holds
// out each cell of holdOut in turn, estimates it with each candidate from all
// the other measured cells, and picks the candidate with the least median
// relative error over those cells. values is as for Complete, NaN marking a
// missing cell; holdOut lists measured, positive cells as (row, type)
// indices. candidates nil means Candidates(). A candidate is chosen only if
// it estimated every held-out cell, Complete accepts it for the whole matrix
// too (no estimate that is not positive and finite), and every one of its
// fits converged (Validation.Refused, Validation.Unconverged).
//
// holdOut nil holds out every positive cell that can be: one whose row and
// type the other positive cells still join (Complete's chain), so not the
// only positive cell of its row or type, such as the one measurement of a
// new job profiled on one type. If no cell can be held out the error is a
// *gpufair.InputError on "holdOut" wrapping gpufair.ErrEmpty and ErrEstimate.
//
// To add a GPU type, hold out its measured cells: the chosen model is the
// one that best predicted the type's rates from the rest. Its error is an
// estimate of the model's error on the type's missing cells, biased low by
// the choice itself, and with few held-out cells a rough one.
//
// SelectSettings fits len(candidates) × len(holdOut) models, so it takes
// ctx, and returns ctx's error once it is done. An error names the input at
// fault: a held-out cell out of range or not measured, a held-out cell no
// candidate could estimate, a candidate's settings out of range (as for
// Complete); Complete's errors for the matrix itself.
func SelectSettings(ctx context.Context, rows []string, types []topology.GPUType, values [][]float64, holdOut [][2]int, candidates []CompleteSettings) (*Selection, error) {
	if candidates == nil {
		candidates = Candidates()
	}
	if len(candidates) == 0 {
		return nil, gpufair.Invalid("candidates", "", gpufair.ErrEmpty, "no candidate settings")
	}
	for n, s := range candidates {
		if _, err := s.withDefaults(); err != nil {
			return nil, fmt.Errorf("speedup: candidate %d: %w", n, err)
		}
	}
	// Each candidate on the whole matrix: Complete validates the matrix, so
	// that its errors read as Complete's, and a candidate it refuses is ruled out.
	sel := &Selection{Validations: make([]Validation, len(candidates))}
	refusals := make([]error, len(candidates)) // Complete's error on the whole matrix
	for n, s := range candidates {
		sel.Validations[n].Settings = s
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := Complete(rows, types, values, &s)
		switch {
		case errors.Is(err, ErrEstimate):
			sel.Validations[n].Refused, refusals[n] = true, err
		case err != nil:
			return nil, err
		case !c.Converged:
			sel.Validations[n].Unconverged++
		}
	}
	if holdOut == nil {
		holdOut = defaultHoldOut(values)
		if len(holdOut) == 0 {
			return nil, gpufair.Invalid("holdOut", "", gpufair.ErrEmpty, "%w: no measured cell can be held out: each positive cell is the only one of its row or GPU type, or the only chain of positive cells joining them", ErrEstimate)
		}
	}
	if len(holdOut) == 0 {
		return nil, gpufair.Invalid("holdOut", "", gpufair.ErrEmpty, "%w: no cell to hold out", ErrEstimate)
	}
	for _, c := range holdOut {
		if c[0] < 0 || c[0] >= len(values) || c[1] < 0 || c[1] >= len(values[c[0]]) {
			return nil, fmt.Errorf("speedup: held-out cell (%d, %d) is outside the %d×%d matrix", c[0], c[1], len(rows), len(types))
		}
		if x := values[c[0]][c[1]]; !(x > 0) {
			return nil, fmt.Errorf("speedup: held-out cell (%s, %s) is %v, not a measured positive rate", rows[c[0]], types[c[1]], x)
		}
	}
	hidden := make([][]float64, len(values))
	for i := range values {
		hidden[i] = slices.Clone(values[i])
	}
	best := -1
	for n, s := range candidates {
		v := sel.Validations[n]
		v.Errors = make([]float64, len(holdOut))
		for j, c := range holdOut {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			want := values[c[0]][c[1]]
			hidden[c[0]][c[1]] = math.NaN()
			est, err := Complete(rows, types, hidden, &s)
			hidden[c[0]][c[1]] = want
			switch {
			case errors.Is(err, ErrEstimate):
				v.Errors[j] = math.NaN()
			case err != nil:
				return nil, err
			default:
				v.Errors[j] = math.Abs(est.Matrix.At(c[0], c[1])-want) / want
				if !est.Converged {
					v.Unconverged++
				}
			}
		}
		v.Median = math.NaN()
		if !slices.ContainsFunc(v.Errors, math.IsNaN) {
			v.Median = stat.Median(v.Errors)
			if !v.Refused && v.Unconverged == 0 && (best < 0 || v.Median < sel.Validations[best].Median) {
				best = n
			}
		}
		sel.Validations[n] = v
	}
	if best < 0 {
		return nil, noCandidate(rows, types, holdOut, sel.Validations, refusals)
	}
	sel.Best = candidates[best]
	return sel, nil
}

// noCandidate explains why no candidate was chosen: the held-out cells that
// none estimated though some other cell was, or else each candidate's reason.
func noCandidate(rows []string, types []topology.GPUType, holdOut [][2]int, vs []Validation, refusals []error) error {
	var errs []error
	someCell := slices.ContainsFunc(vs, func(v Validation) bool {
		return slices.ContainsFunc(v.Errors, func(x float64) bool { return !math.IsNaN(x) })
	})
	for j, c := range holdOut {
		if !someCell {
			break
		}
		if !slices.ContainsFunc(vs, func(v Validation) bool { return !math.IsNaN(v.Errors[j]) }) {
			errs = append(errs, &CellError{Row: rows[c[0]], Type: types[c[1]], Value: math.NaN(),
				Err: fmt.Errorf("%w: no candidate estimates the held-out cell from the other measured cells", ErrEstimate)})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	why := make([]string, len(vs))
	for n, v := range vs {
		switch {
		case v.Refused:
			why[n] = fmt.Sprintf("candidate %d refuses the whole matrix (%v)", n, refusals[n])
		case v.Unconverged > 0:
			why[n] = fmt.Sprintf("candidate %d did not converge in %d fits", n, v.Unconverged)
		default:
			why[n] = fmt.Sprintf("candidate %d refuses %d held-out cells", n, len(slices.DeleteFunc(slices.Clone(v.Errors), func(x float64) bool { return !math.IsNaN(x) })))
		}
	}
	return fmt.Errorf("%w: no candidate can be chosen: %s", ErrEstimate, strings.Join(why, "; "))
}

// defaultHoldOut lists the positive cells of values whose row and type the
// other positive cells still join, as a chain row – type – row – …: those
// an estimate can be made for with the cell held out.
func defaultHoldOut(values [][]float64) [][2]int {
	m, n := len(values), 0
	for _, r := range values {
		n = max(n, len(r))
	}
	var pos [][2]int
	for i, r := range values {
		for k, x := range r {
			if x > 0 {
				pos = append(pos, [2]int{i, k})
			}
		}
	}
	var out [][2]int
	for _, c := range pos {
		l := newLinks(m, n)
		for _, o := range pos {
			if o != c {
				l.join(o[0], o[1])
			}
		}
		if l.joined(c[0], c[1]) {
			out = append(out, c)
		}
	}
	return out
}
