package speedup

import (
	"fmt"
	"math"
	"sort"

	"github.com/gpufair/gpufair"
)

// TypeOrder returns the column indices from the slowest GPU type to the
// fastest. A type's speed is the mean, over the rows that can run on it, of
// log(rate) minus the row's mean log rate over its positive cells, so rows of
// very different magnitudes (steps/s of a small and a large model) weigh
// alike. Zero cells are ignored; a type no row can use is slowest. Ties keep
// column order, so the result is deterministic. A matrix without GPU types
// (nil or zero) gives an empty order.
func (m *Matrix) TypeOrder() []int {
	m = m.or()
	n := len(m.types)
	sum := make([]float64, n)
	cnt := make([]int, n)
	for i := range m.rows {
		row := m.v[i*n : (i+1)*n]
		var mean float64
		var pos int
		for _, x := range row {
			if x > 0 {
				mean += math.Log(x)
				pos++
			}
		}
		if pos == 0 {
			continue
		}
		mean /= float64(pos)
		for k, x := range row {
			if x > 0 {
				sum[k] += math.Log(x) - mean
				cnt[k]++
			}
		}
	}
	score := make([]float64, n)
	for k := range score {
		score[k] = math.Inf(-1)
		if cnt[k] > 0 {
			score[k] = sum[k] / float64(cnt[k])
		}
	}
	order := make([]int, n)
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return score[order[a]] < score[order[b]] })
	return order
}

// RelativeTo returns the matrix with every row divided by its rate on column
// k, so that column k becomes 1. A row whose rate on k is zero cannot be
// expressed relative to it: the error is a *CellError naming that cell and
// wrapping gpufair.ErrValue. A k out of range wraps gpufair.ErrShape; a
// matrix without GPU types (nil or zero), gpufair.ErrEmpty.
func (m *Matrix) RelativeTo(k int) (*Matrix, error) {
	if err := m.empty(); err != nil {
		return nil, err
	}
	if k < 0 || k >= len(m.types) {
		return nil, fmt.Errorf("%w: reference type %d of %d", gpufair.ErrShape, k, len(m.types))
	}
	div := make([]float64, len(m.rows))
	for i := range div {
		div[i] = m.At(i, k)
		if div[i] == 0 {
			return nil, &CellError{Row: m.rows[i], Type: m.types[k], Value: 0, Err: fmt.Errorf("%w: zero rate on the reference type", gpufair.ErrValue)}
		}
	}
	return m.divideRows(div)
}

// RelativeToSlowest returns speedups over the slowest type of TypeOrder:
// OEF's speedup vectors, whose first type has speedup 1 for every user.
func (m *Matrix) RelativeToSlowest() (*Matrix, error) {
	if err := m.empty(); err != nil {
		return nil, err
	}
	return m.RelativeTo(m.TypeOrder()[0])
}

// RelativeToSlowestRunnable returns each row divided by its rate on the
// slowest type of TypeOrder on which that rate is positive: OEF's speedups
// where some rows cannot run on the slowest type (a large model that does
// not fit a K80's memory). Where every row runs on the slowest type it
// equals RelativeToSlowest. Zero cells stay zero. A row of zeros has no
// such type: the error is a *CellError naming the row and wrapping
// gpufair.ErrValue.
func (m *Matrix) RelativeToSlowestRunnable() (*Matrix, error) {
	if err := m.empty(); err != nil {
		return nil, err
	}
	order := m.TypeOrder()
	div := make([]float64, len(m.rows))
	for i := range div {
		for _, k := range order {
			if x := m.At(i, k); x > 0 {
				div[i] = x
				break
			}
		}
		if div[i] == 0 {
			return nil, &CellError{Row: m.rows[i], Err: fmt.Errorf("%w: the row runs on no GPU type", gpufair.ErrValue)}
		}
	}
	return m.divideRows(div)
}

// RelativeToFastest returns rates relative to the fastest type of
// TypeOrder: every cell of that column becomes 1, slower types fall below.
func (m *Matrix) RelativeToFastest() (*Matrix, error) {
	if err := m.empty(); err != nil {
		return nil, err
	}
	o := m.TypeOrder()
	return m.RelativeTo(o[len(o)-1])
}

// EqualShareRates returns each row's rate when it receives an equal time
// share of every GPU type in proportion to the type's count: Σ_k r_ik·c_k/Σc.
// This is Gavel's normaliser (its code sets x_ik = c_k / total GPUs; see
// ERRATA in the project's design notes). count must have one finite,
// non-negative entry per type and a positive total.
func (m *Matrix) EqualShareRates(count []float64) ([]float64, error) {
	if err := m.empty(); err != nil {
		return nil, err
	}
	if len(count) != len(m.types) {
		return nil, fmt.Errorf("%w: %d counts for %d GPU types", gpufair.ErrShape, len(count), len(m.types))
	}
	var total float64
	for k, c := range count {
		if err := checkValue(c); err != nil {
			return nil, &CellError{Type: m.types[k], Err: fmt.Errorf("count %v: %w", c, err)}
		}
		total += c
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, fmt.Errorf("%w: total count %v is not positive and finite", gpufair.ErrValue, total)
	}
	n := len(m.types)
	rates := make([]float64, len(m.rows))
	for i := range rates {
		for k, x := range m.v[i*n : (i+1)*n] {
			rates[i] += x * (count[k] / total) // x·count overflowed for rates near 1e308
		}
	}
	return rates, nil
}

// RelativeToEqualShare returns every row divided by its EqualShareRates
// entry: 1 means the rate of an equal share of the cluster. A row that no
// counted type can run is an error (*CellError wrapping gpufair.ErrValue).
func (m *Matrix) RelativeToEqualShare(count []float64) (*Matrix, error) {
	div, err := m.EqualShareRates(count)
	if err != nil {
		return nil, err
	}
	for i, d := range div {
		if d == 0 {
			return nil, &CellError{Row: m.rows[i], Err: fmt.Errorf("%w: zero rate on an equal share of the cluster", gpufair.ErrValue)}
		}
	}
	return m.divideRows(div)
}

// divideRows returns a new matrix with row i divided by div[i] (non-zero).
func (m *Matrix) divideRows(div []float64) (*Matrix, error) {
	n := len(m.types)
	out := &Matrix{rows: m.rows, types: m.types, v: make([]float64, len(m.v))}
	for i, d := range div {
		for k := 0; k < n; k++ {
			x := m.v[i*n+k] / d
			if math.IsInf(x, 0) {
				// A rate more than float64's range above its divisor (1e300
				// over 1e-10) gave +Inf entries.
				return nil, &CellError{Row: m.rows[i], Type: m.types[k], Value: m.v[i*n+k],
					Err: fmt.Errorf("%w: the rate over the row's divisor %v overflows", gpufair.ErrTooLarge, d)}
			}
			out.v[i*n+k] = x
		}
	}
	return out, nil
}
