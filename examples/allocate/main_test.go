package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestGolden runs every testdata/*.json that has a .golden beside it and
// compares the output byte for byte. Golden inputs have unique optima, so
// both LP backends give the same output (Gavel's X_het: ERRATA.md).
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.golden")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, golden := range files {
		in := strings.TrimSuffix(golden, ".golden") + ".json"
		t.Run(filepath.Base(in), func(t *testing.T) {
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var out bytes.Buffer
			if err := run(context.Background(), f, &out, options{}); err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEveryPolicy runs every policy the command offers on an input that
// gives all their inputs, with both audits: each returns a valid
// allocation of the problem's jobs, audited job by job and tenant by
// tenant.
func TestEveryPolicy(t *testing.T) {
	f, err := os.Open("testdata/inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := run(context.Background(), f, &out, options{audit: true, auditTenants: true}); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Results []struct {
			Policy     string
			Allocation *alloc.Allocation
			Audit      *json.RawMessage
			// TenantAudit's witnesses name tenants.
			TenantAudit *struct {
				SharingIncentive struct{ Worst string } `json:"sharing_incentive"`
				Pareto           *json.RawMessage       `json:"pareto_efficiency"`
			} `json:"tenant_audit"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	// Outputs are rounded to 6 significant digits: allow for it.
	c := alloc.Capacity{Types: []topology.GPUType{"k80", "v100"}, Count: []float64{2 * (1 + 1e-5), 2 * (1 + 1e-5)}}
	if len(resp.Results) != len(catalogue()) {
		t.Errorf("%d results, want one per policy (%d)", len(resp.Results), len(catalogue()))
	}
	for i, r := range resp.Results {
		if r.Policy != catalogue()[i].name && !strings.HasPrefix(r.Policy, catalogue()[i].name) {
			t.Errorf("result %d is %q, want %q", i, r.Policy, catalogue()[i].name)
		}
		if err := r.Allocation.Validate(c); err != nil || !cmp.Equal(r.Allocation.Rows, []string{"a1", "a2", "b1"}) || r.Audit == nil {
			t.Errorf("%s: allocation %+v (%v), audit present %v", r.Policy, r.Allocation, err, r.Audit != nil)
		}
		if ta := r.TenantAudit; ta == nil || (ta.SharingIncentive.Worst != "alice" && ta.SharingIncentive.Worst != "bob") || ta.Pareto != nil {
			t.Errorf("%s: tenant audit %+v, want one naming a tenant as the worst row, without Pareto", r.Policy, ta)
		}
	}
}

// TestErrors checks that bad input gets one line naming the field.
func TestErrors(t *testing.T) {
	const ok = `"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", ``, "empty input"},
		{"truncated", `{"problem": {`, "invalid JSON: the input ends"},
		{"syntax", `{"problem": {]}`, "invalid JSON at byte 14"},
		{"wrong type", `{"problem": {"capacity": {"types": ["k80"], "count": ["one"]}}}`, "problem.capacity.count: want a number, got JSON string"},
		{"unknown field", `{"problem": {` + ok + `}, "polices": []}`, `unknown field "polices"`},
		{"two values", `{"problem": {` + ok + `}} {}`, "more than one JSON value"},
		{"negative count", `{"problem": {"capacity": {"types": ["k80"], "count": [-1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.capacity.count[0] ("k80"):`},
		{"zero weight", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.jobs[0].weight ("j"): gpufair: invalid value: weight missing or 0, want one in [1e-12, 1e+12]`},
		{"bad cell", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[-2]]}}}`, `problem.throughputs: row "j", type "k80"`},
		{"rows mismatch", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["x"], "types": ["k80"], "values": [[1]]}}}`, `problem.throughputs.values[0] ("x"): gpufair: mismatched dimensions`},
		{"unknown field in throughputs", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]], "value": [[2]]}}}`, `problem.throughputs: Matrix: gpufair: invalid value: unknown field "value"`},
		{"tenant audit without tenants", `{"problem": {` + ok + `}, "audit_tenants": true}`, "audit_tenants: problem.tenants: required"},
		{"unknown policy", `{"problem": {` + ok + `}, "policies": ["fastest"]}`, `policies: unknown policy "fastest"`},
		{"missing input", `{"problem": {` + ok + `}, "policies": ["makespan"]}`, "policy makespan: inputs.remaining_steps: required"},
		{"throughput 1e300", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}, {"id": "k", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j", "k"], "types": ["k80"], "values": [[1e300], [1]]}}}`, `problem.throughputs.values[1] ("k"):`},
		{"count 1e308", `{"problem": {"capacity": {"types": ["k80"], "count": [1e308]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.capacity.count[0] ("k80"):`},
		{"short input", `{"problem": {` + ok + `}, "policies": ["makespan"], "inputs": {"remaining_steps": [1, 2]}}`, "policy makespan: inputs.remaining_steps: gpufair: mismatched dimensions"},
		// Clients in other languages: encoding/json keeps
		// the last of a repeated key and matches keys in any case, so
		// these were taken without a word.
		{"key twice", `{"problem": {` + ok + `}, "audit": true, "audit": false}`, `key "audit" listed twice`},
		{"key twice inside the matrix", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]], "values": [[2]]}}}`, `problem.throughputs: key "values" listed twice`},
		{"key twice in two cases", `{"problem": {` + ok + `}, "audit": true, "AUDIT": false}`, `key "AUDIT" listed twice (as "audit")`},
		{"key in another case", `{"Problem": {` + ok + `}}`, `key "Problem" is not "problem"`},
		{"key in another case deep", `{"problem": {"capacity": {"TYPES": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.capacity: key "TYPES" is not "types"`},
		{"key in another case in the matrix", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"Rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.throughputs: key "Rows" is not "rows"`},
		{"array", `[]`, "the request must be a JSON object, not a JSON array"},
		{"NaN", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[NaN]]}}}`, "NaN and Infinity are not JSON numbers"},
		{"Infinity", `{"problem": {"capacity": {"types": ["k80"], "count": [-Infinity]}}}`, "NaN and Infinity are not JSON numbers"},
		{"null cell", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[null]]}}}`, `problem.throughputs.values: row "j", type "k80": gpufair: invalid value: missing (null): complete the matrix first (speedup.Complete)`},
		{"weight out of range", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1e13}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, `problem.jobs[0].weight ("j"): gpufair: invalid value: weight 1e+13, want one in [1e-12, 1e+12]`},
		{"no throughputs", `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}]}}`, "problem.throughputs: gpufair: empty input"},
		{"bad input", `{"problem": {` + ok + `}, "policies": ["fifo"], "inputs": {"arrival": [-1e308]}}`, `policy fifo: inputs.arrival[0] ("j"): gpufair: invalid value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), strings.NewReader(tc.in), &bytes.Buffer{}, options{})
			if err == nil || !strings.Contains(oneLine(err), tc.want) || strings.Contains(oneLine(err), "\n") {
				t.Errorf("run() error = %v, want one line containing %q", err, tc.want)
			}
		})
	}
}

// TestMain runs the command itself when the test binary is started by
// TestExitStatus.
func TestMain(m *testing.M) {
	if os.Getenv("ALLOCATE_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runMain runs the command itself (TestMain) with args and stdin, and
// returns its exit status and standard error.
func runMain(t *testing.T, stdin string, args ...string) (status int, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ALLOCATE_RUN_MAIN=1")
	cmd.Stdin = strings.NewReader(stdin)
	var buf bytes.Buffer
	cmd.Stderr = &buf
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running the command: %v", err)
	}
	return cmd.ProcessState.ExitCode(), buf.String()
}

// TestExitStatus runs the command on a throughput of 1e300 (before rates
// were validated for their spread, a value of 1e25 made CLP abort the
// process with a crash dump): it exits with status 1 and one line on
// stderr naming the input.
func TestExitStatus(t *testing.T) {
	in := `{"problem": {"capacity": {"types": ["k80", "v100"], "count": [2, 2]}, "jobs": [{"id": "a", "gang": 1, "weight": 1}, {"id": "b", "gang": 1, "weight": 1}], "throughputs": {"rows": ["a", "b"], "types": ["k80", "v100"], "values": [[1e300, 3], [2, 8]]}}}`
	status, stderr := runMain(t, in, "-policies", "max-total-throughput")
	if status != 1 {
		t.Fatalf("exit status %d, want 1 (stderr %q)", status, stderr)
	}
	msg := strings.TrimSuffix(stderr, "\n")
	if strings.Contains(msg, "\n") || !strings.Contains(msg, `problem.throughputs.values[0] ("a")`) {
		t.Errorf("stderr = %q, want one line naming problem.throughputs.values[0]", stderr)
	}
}

// TestArguments: an argument is refused with the usage and status 2; the
// command once ignored it and waited on stdin for the request.
func TestArguments(t *testing.T) {
	status, stderr := runMain(t, `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`, "problem.json")
	if status != 2 {
		t.Fatalf("exit status %d, want 2 (stderr %q)", status, stderr)
	}
	if !strings.Contains(stderr, `unexpected argument "problem.json"`) || !strings.Contains(stderr, "Usage of allocate") {
		t.Errorf("stderr = %q, want the argument named and the usage", stderr)
	}
}

// TestNoTenantsNoOEF: without policies named and without tenants, the
// command runs the job-level policies; OEF and hierarchical, which need
// users, are left out instead of failing the whole request.
func TestNoTenantsNoOEF(t *testing.T) {
	in := `{"problem": {"capacity": {"types": ["k80"], "count": [1]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1]]}}}`
	var out bytes.Buffer
	if err := run(context.Background(), strings.NewReader(in), &out, options{}); err != nil {
		t.Fatalf("run() error = %v", err)
	}
	for _, want := range []string{`"max-min"`, `"water-filling"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks policy %s", want)
		}
	}
	if strings.Contains(out.String(), "oef") || strings.Contains(out.String(), "hierarchical") {
		t.Errorf("output runs a user-level policy without tenants")
	}
}

// TestREADME runs the input example of README.md as its output example
// says (with -audit-tenants) and compares the first result with the one it
// shows. The README once showed an output that was not the input's.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(b), "```json\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		blocks = append(blocks, block)
	}
	if len(blocks) != 2 {
		t.Fatalf("README.md has %d JSON examples, want 2 (input, output)", len(blocks))
	}
	var out bytes.Buffer
	if err := run(context.Background(), strings.NewReader(blocks[0]), &out, options{auditTenants: true}); err != nil {
		t.Fatalf("run(README's input) error = %v", err)
	}
	var got, want struct{ Results []any }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(blocks[1]), &want); err != nil {
		t.Fatalf("README's output: %v", err)
	}
	if len(got.Results) == 0 || len(want.Results) != 1 {
		t.Fatalf("%d results, README shows %d; want some, and one shown", len(got.Results), len(want.Results))
	}
	if diff := cmp.Diff(want.Results[0], got.Results[0]); diff != "" {
		t.Errorf("README's output mismatch (-README +command):\n%s", diff)
	}
}
