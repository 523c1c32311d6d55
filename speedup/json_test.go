package speedup

import (
	"encoding/json"
	"errors"
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
