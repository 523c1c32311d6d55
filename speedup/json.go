package speedup

import (
	"encoding/json"

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
// does, returning New's errors (a *CellError naming the bad cell).
func (m *Matrix) UnmarshalJSON(b []byte) error {
	var j matrixJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	n, err := New(j.Rows, j.Types, j.Values)
	if err != nil {
		return err
	}
	*m = *n
	return nil
}
