package speedup

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/gpufair/gpufair"

	"github.com/gpufair/gpufair/topology"
)

// matrixJSON is the JSON form of a Matrix. A cell is a pointer so that null
// (a missing cell, as pandas writes NaN) is told apart from 0.
type matrixJSON struct {
	Rows   []string           `json:"rows"`
	Types  []topology.GPUType `json:"types"`
	Values [][]*float64       `json:"values"`
}

// MarshalJSON encodes m as {"rows": [...], "types": [...], "values":
// [[...], ...]}, values[i][k] being the rate of rows[i] on types[k]. A nil
// *Matrix is null; the zero Matrix has empty lists. A Matrix has no missing
// (NaN) cells, so no cell is null.
func (m *Matrix) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	j := matrixJSON{Rows: append([]string{}, m.rows...), Types: append([]topology.GPUType{}, m.types...), Values: make([][]*float64, len(m.rows))}
	n := len(m.types)
	for i := range j.Values {
		j.Values[i] = make([]*float64, n)
		for k := range n {
			if x := m.v[i*n+k]; !math.IsNaN(x) { // json.Marshal fails on NaN: write null, as for a missing cell
				j.Values[i][k] = &x
			}
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the form MarshalJSON writes and validates it as New
// does, returning New's errors (a *CellError naming the bad cell). A null
// cell is a missing one (pandas writes NaN as null), not 0: a Matrix cannot
// hold it, so it is refused as New refuses NaN, by a *CellError naming the
// cell and wrapping gpufair.ErrValue; decode such a table into
// [][]*float64 and estimate the missing cells with Complete. A field other
// than rows, types and values is refused (a *gpufair.InputError wrapping
// gpufair.ErrValue): a misspelt field would otherwise be dropped without a
// word, and a decoder's DisallowUnknownFields does not reach inside a type
// that decodes itself.
func (m *Matrix) UnmarshalJSON(b []byte) error {
	if m == nil {
		return gpufair.Invalid("Matrix", "", gpufair.ErrEmpty, "UnmarshalJSON on a nil *Matrix")
	}
	var j matrixJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return gpufair.Invalid("Matrix", "", gpufair.ErrValue, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return err
	}
	values := make([][]float64, len(j.Values))
	for i, r := range j.Values {
		if r == nil {
			continue // a null row: New reports its length
		}
		values[i] = make([]float64, len(r))
		for k, x := range r {
			values[i][k] = math.NaN()
			if x != nil {
				values[i][k] = *x
			}
		}
	}
	n, err := New(j.Rows, j.Types, values)
	if err != nil {
		return err
	}
	*m = *n
	return nil
}
