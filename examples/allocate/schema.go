package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
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

// decode reads a request, naming the field of a type error and the byte
// offset of a syntax error.
func decode(r io.Reader) (*request, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		var cell *speedup.CellError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("invalid JSON at byte %d: %v", syn.Offset, err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("%s: want %v, got JSON %s", typ.Field, typ.Type, typ.Value)
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty input: want a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("invalid JSON: the input ends inside a value")
		case errors.As(err, &cell), errors.Is(err, gpufair.ErrShape), errors.Is(err, gpufair.ErrValue):
			// Only the throughput matrix validates itself while decoding.
			return nil, fmt.Errorf("problem.throughputs: %w", err)
		}
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value in the input")
	}
	return &req, nil
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
