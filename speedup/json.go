package speedup

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gpufair/gpufair"

	"github.com/gpufair/gpufair/topology"
)

// matrixJSON is the JSON form of a Matrix.
type matrixJSON struct {
	Rows   []string           `json:"rows"`
	Types  []topology.GPUType `json:"types"`
	Values [][]float64        `json:"values"`
}

// MarshalJSON encodes m as {"rows": [...], "types": [...], "values":
// [[...], ...]}, values[i][k] being the rate of rows[i] on types[k].
func (m *Matrix) MarshalJSON() ([]byte, error) {
	return json.Marshal(matrixJSON{Rows: m.Rows(), Types: m.Types(), Values: m.Values()})
}

// UnmarshalJSON decodes the form MarshalJSON writes and validates it as New
// does, returning New's errors (a *CellError naming the bad cell). A field
// other than rows, types and values is refused (a *gpufair.InputError
// wrapping gpufair.ErrValue): a misspelt field would otherwise be dropped
// without a word, and a decoder's DisallowUnknownFields does not reach
// inside a type that decodes itself.
func (m *Matrix) UnmarshalJSON(b []byte) error {
	var j matrixJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return gpufair.Invalid("Matrix", "", gpufair.ErrValue, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return err
	}
	n, err := New(j.Rows, j.Types, j.Values)
	if err != nil {
		return err
	}
	*m = *n
	return nil
}
