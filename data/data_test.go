package data_test

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/gpufair/gpufair/data"
)

func TestGavelFiles(t *testing.T) {
	fsys := data.Gavel()
	for _, name := range []string{"LICENSE", "simulation_throughputs.json", "physical_cluster_throughputs.json", "philly_job_distribution.csv", "traces/cluster_specs.json"} {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			t.Fatalf("ReadFile(%q): %v", name, err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	b, _ := fs.ReadFile(fsys, "simulation_throughputs.json")
	var v map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("simulation_throughputs.json: %v", err)
	}
	for _, gpu := range []string{"k80", "p100", "v100"} {
		if len(v[gpu]) == 0 {
			t.Errorf("simulation_throughputs.json has no jobs for %s", gpu)
		}
	}
	traces, err := fs.Glob(fsys, "traces/msr-seed0/*.trace")
	if err != nil || len(traces) != 15 {
		t.Errorf("msr-seed0 traces: %d files, err %v; want 15", len(traces), err)
	}
}
