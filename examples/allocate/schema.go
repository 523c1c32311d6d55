package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/jsonkeys"
	"github.com/gpufair/gpufair/speedup"
)

// request is the input document.
type request struct {
	// Problem is alloc.Problem in its own JSON form.
	Problem alloc.Problem `json:"problem"`
	// Policies names the policies to run; empty means every policy whose
	// inputs are given.
	Policies []string `json:"policies,omitempty"`
	// Inputs holds the per-job and per-type inputs some policies need.
	Inputs inputs `json:"inputs"`
	// Audit asks for the fairness audit of every allocation, job by job.
	Audit bool `json:"audit,omitempty"`
	// AuditTenants asks for the audit tenant by tenant (problem.tenants
	// required).
	AuditTenants bool `json:"audit_tenants,omitempty"`
}

// inputs are the policies' extra inputs, aligned with problem.jobs (or, for
// cost, with problem.cluster.types).
type inputs struct {
	RemainingSteps  []float64 `json:"remaining_steps,omitempty"`
	Elapsed         []float64 `json:"elapsed,omitempty"`
	IsolatedElapsed []float64 `json:"isolated_elapsed,omitempty"`
	Arrival         []float64 `json:"arrival,omitempty"`
	Cost            []float64 `json:"cost,omitempty"`
	SLO             []float64 `json:"slo,omitempty"`
}

// response is the output document.
type response struct {
	Results []result `json:"results"`
}

// result is one policy's allocation and, if asked, its audit.
type result struct {
	Policy     string            `json:"policy"`
	Allocation *alloc.Allocation `json:"allocation"`
	Audit      *audit            `json:"audit,omitempty"`
	// TenantAudit is the audit of the tenants' aggregate bundles.
	TenantAudit *audit `json:"tenant_audit,omitempty"`
}

// audit is alloc.AuditReport with JSON-safe numbers: a non-finite margin
// (a row valuing its own bundle at 0) is null.
type audit struct {
	SharingIncentive struct {
		Holds bool `json:"holds"`
		// Margins[i] is row i's u_i(own)/u_i(equal share) − 1; Worst is
		// the row of the smallest (rounded) margin.
		Margins     []*float64 `json:"margins"`
		Worst       string     `json:"worst"`
		WorstMargin *float64   `json:"worst_margin"`
	} `json:"sharing_incentive"`
	EnvyFreeness struct {
		Holds   bool     `json:"holds"`
		MaxEnvy *float64 `json:"max_envy"`
		// Envier and Envied are the witness pair when envy-freeness fails.
		Envier string `json:"envier,omitempty"`
		Envied string `json:"envied,omitempty"`
	} `json:"envy_freeness"`
	Pareto *struct {
		Holds bool     `json:"holds"`
		Gain  *float64 `json:"gain"`
	} `json:"pareto_efficiency,omitempty"`
}

// decode reads a request, naming the JSON path of a value of the wrong type
// or a key refused (repeated, or a case variant of a field's name, both of
// which encoding/json takes without a word) and the byte offset of a syntax
// error.
func decode(r io.Reader) (*request, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var cell *speedup.CellError
		switch {
		case errors.As(err, &syn):
			if rest := b[max(syn.Offset-1, 0):]; bytes.HasPrefix(rest, []byte("NaN")) || bytes.HasPrefix(rest, []byte("Infinity")) {
				return nil, fmt.Errorf("invalid JSON at byte %d: NaN and Infinity are not JSON numbers (Python writes them unless json.dumps is given allow_nan=False); complete a missing throughput first (speedup.Complete)", syn.Offset)
			}
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			if typ.Field == "" {
				return nil, fmt.Errorf("the request must be a JSON object, not a JSON %s", typ.Value)
			}
			return nil, fmt.Errorf("%s: want %s, got JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty input: want a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("invalid JSON: the input ends inside a value")
		case errors.As(err, &cell) && cell.Row != "" && cell.Type != "" && math.IsNaN(cell.Value):
			return nil, fmt.Errorf("problem.throughputs.values: row %q, type %q: %w: missing (null): complete the matrix first (speedup.Complete)", cell.Row, cell.Type, gpufair.ErrValue)
		case errors.As(err, &cell), errors.Is(err, gpufair.ErrShape), errors.Is(err, gpufair.ErrValue):
			// Only the throughput matrix validates itself while decoding.
			return nil, fmt.Errorf("problem.throughputs: %w", err)
		}
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value in the input")
	}
	// The first value was read whole, so it is valid JSON. The request
	// holds no maps, whose keys Check would fold.
	if err := jsonkeys.Check(b, keyNames(reflect.TypeFor[request](), nil)...); err != nil {
		return nil, err
	}
	return &req, nil
}

// jsonKind names the JSON values that decode into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer (Go %v)", t)
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// keyNames appends to names the JSON names of the fields of the structs t
// holds, at any depth. A type that decodes itself (speedup.Matrix) hides
// its fields: its names are the keys it encodes its zero value with.
func keyNames(t reflect.Type, names []string) []string {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		b, _ := json.Marshal(reflect.New(t).Interface())
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m) // none if it is not an object
		for k := range m {
			names = append(names, k)
		}
		return names
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return keyNames(t.Elem(), names)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && f.IsExported() {
				name = f.Name
			}
			if name != "" && name != "-" {
				names = keyNames(f.Type, append(names, name))
			}
		}
	}
	return names
}

// encode writes the response, indented.
func encode(w io.Writer, resp *response) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(resp)
}

// snapTol is the magnitude below which an output number is written as 0:
// the axioms' tolerance, above the LP solvers' noise.
const snapTol = alloc.AxiomTol

// roundSig rounds x to 6 significant digits, and to 0 below snapTol, so
// that outputs are the same whichever LP backend solved them (they agree to
// about 1e-9).
func roundSig(x float64) float64 {
	if math.Abs(x) < snapTol || math.IsNaN(x) || math.IsInf(x, 0) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return x
		}
		return 0
	}
	p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(x))))
	r := math.Round(x*p) / p
	if r == 0 {
		return 0 // no -0 in the output
	}
	return r
}

// finite returns a pointer to the rounded x, or nil if x is not finite.
func finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	x = roundSig(x)
	return &x
}
