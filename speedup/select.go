package speedup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

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
	// from the other measured cells; NaN where the model could not estimate
	// it (Complete's ErrEstimate, as for a rank the matrix is too small for).
	Errors []float64
	// Median is the median of Errors, or NaN when any cell was refused.
	Median float64
}

// Selection is the result of SelectSettings.
type Selection struct {
	Best        CompleteSettings // the candidate of least median error; the earlier one on a tie
	Validations []Validation     // every candidate, in the order given
}

// SelectSettings chooses the model for Complete by cross-validation: it holds
// out each cell of holdOut in turn, estimates it with each candidate from all
// the other measured cells, and picks the candidate with the least median
// relative error over those cells. values is as for Complete, NaN marking a
// missing cell; holdOut lists measured, positive cells as (row, type)
// indices, and nil holds out every such cell. candidates nil means
// Candidates().
//
// To add a GPU type, hold out its measured cells: the chosen model is the
// one that best predicted the type's rates from the rest. Its error is an
// estimate of the model's error on the type's missing cells, biased low by
// the choice itself, and with few held-out cells a rough one.
//
// SelectSettings fits len(candidates) × len(holdOut) models, so it takes
// ctx, and returns ctx's error once it is done. An error names the input at
// fault: a held-out cell out of range or not measured, a candidate no cell
// could be estimated with; Complete's errors for the matrix itself.
func SelectSettings(ctx context.Context, rows []string, types []topology.GPUType, values [][]float64, holdOut [][2]int, candidates []CompleteSettings) (*Selection, error) {
	if candidates == nil {
		candidates = Candidates()
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("speedup: no candidate settings")
	}
	// Complete validates the matrix, so that its errors read as Complete's.
	if _, err := Complete(rows, types, values, &candidates[0]); err != nil && !errors.Is(err, ErrEstimate) {
		return nil, err
	}
	if holdOut == nil {
		for i, r := range values {
			for k, x := range r {
				if x > 0 {
					holdOut = append(holdOut, [2]int{i, k})
				}
			}
		}
	}
	if len(holdOut) == 0 {
		return nil, fmt.Errorf("%w: no measured cell to hold out", ErrEstimate)
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
	sel := &Selection{Validations: make([]Validation, len(candidates))}
	best := -1
	for n, s := range candidates {
		v := Validation{Settings: s, Errors: make([]float64, len(holdOut))}
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
			}
		}
		v.Median = math.NaN()
		if !slices.ContainsFunc(v.Errors, math.IsNaN) {
			v.Median = stat.Median(v.Errors)
			if best < 0 || v.Median < sel.Validations[best].Median {
				best = n
			}
		}
		sel.Validations[n] = v
	}
	if best < 0 {
		return nil, fmt.Errorf("%w: no candidate estimates every held-out cell", ErrEstimate)
	}
	sel.Best = candidates[best]
	return sel, nil
}
