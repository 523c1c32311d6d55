package speedup

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

func TestMatrixJSON(t *testing.T) {
	m, err := New([]string{"a", "b"}, []topology.GPUType{"k80", "v100"}, [][]float64{{1, 2.5}, {0, 4}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rows":["a","b"],"types":["k80","v100"],"values":[[1,2.5],[0,4]]}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("Marshal mismatch (-want +got):\n%s", diff)
	}
	var back Matrix
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m.Values(), back.Values()); diff != "" || !cmp.Equal(m.Rows(), back.Rows()) || !cmp.Equal(m.Types(), back.Types()) {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
	var bad Matrix
	err = json.Unmarshal([]byte(`{"rows":["a"],"types":["k80"],"values":[[-1]]}`), &bad)
	var ce *CellError
	if !errors.As(err, &ce) || ce.Row != "a" || !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("Unmarshal(negative cell) error = %v, want a CellError on row a wrapping gpufair.ErrValue", err)
	}
	err = json.Unmarshal([]byte(`{"rows":["a"],"types":["k80"],"values":[[1]],"vaules":[[2]]}`), &bad)
	var ie *gpufair.InputError
	if !errors.As(err, &ie) || !errors.Is(err, gpufair.ErrValue) {
		t.Errorf("Unmarshal(unknown field) error = %v, want an *InputError wrapping gpufair.ErrValue", err)
	}
}

// TestMatrixJSONNull: a null cell (pandas writes NaN as null) was read as 0,
// a rate that says the job cannot run on the type. It is a missing cell,
// which a Matrix cannot hold: refused, naming the cell.
func TestMatrixJSONNull(t *testing.T) {
	var m Matrix
	err := json.Unmarshal([]byte(`{"rows":["a","b"],"types":["k80","v100"],"values":[[null,10],[12,4]]}`), &m)
	var ce *CellError
	if !errors.As(err, &ce) || ce.Row != "a" || ce.Type != "k80" || !math.IsNaN(ce.Value) || !errors.Is(err, gpufair.ErrValue) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Unmarshal(null cell) error = %v, want a CellError on (a, k80) saying the cell is missing", err)
	}
	// MarshalJSON writes NaN as null rather than failing, should one get in.
	b, err := json.Marshal(&Matrix{rows: []string{"a"}, types: []topology.GPUType{"k80", "v100"}, v: []float64{math.NaN(), 2}})
	if want := `{"rows":["a"],"types":["k80","v100"],"values":[[null,2]]}`; err != nil || string(b) != want {
		t.Errorf("Marshal(NaN cell) = %s, %v; want %s", b, err, want)
	}
}

// TestMatrixJSONNilAndZero: MarshalJSON of a nil *Matrix panicked.
func TestMatrixJSONNilAndZero(t *testing.T) {
	for _, tc := range []struct {
		m    *Matrix
		want string
	}{
		{nil, `null`},
		{&Matrix{}, `{"rows":[],"types":[],"values":[]}`},
	} {
		b, err := tc.m.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("(%#v).MarshalJSON() = %s, %v; want %s", tc.m, b, err, tc.want)
		}
	}
	var nilM *Matrix
	if err := nilM.UnmarshalJSON([]byte(`{"rows":["a"],"types":["k80"],"values":[[1]]}`)); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("UnmarshalJSON into a nil *Matrix: %v, want gpufair.ErrEmpty", err)
	}
}
