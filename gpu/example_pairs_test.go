package gpu_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpufair/gpufair/gpu"
)

// arrive is a workload's side of the co-location barrier: it writes its
// file for stage ("ready" or "done") in the directory env names, waits until
// every party has written one, and returns how many had then.
func arrive(ctx context.Context, env map[string]string, stage string) (int, error) {
	dir := env[gpu.EnvBarrier]
	parties, err := strconv.Atoi(env[gpu.EnvBarrierParties])
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, env[gpu.EnvBarrierID]+"."+stage), nil, 0o644); err != nil {
		return 0, err
	}
	for {
		m, err := filepath.Glob(filepath.Join(dir, "*."+stage))
		if err != nil || len(m) >= parties {
			return len(m), err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// envMap returns env's KEY=value entries as a map.
func envMap(env []string) map[string]string {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		vars[k] = v
	}
	return vars
}

// ExampleProfiler_ProfilePairs measures two workloads sharing one device,
// the co-located rates of Gavel's space sharing. The Runner stands in for
// real programs, which would keep the barrier around their timed steps as
// it does (examples/gpu-probe/colocate.py is the Python side); here the
// device gives each job 60% of its rate alone while both run.
func ExampleProfiler_ProfilePairs() {
	alone := map[string]float64{"resnet": 32, "lm": 20}
	run := func(ctx context.Context, argv, env []string) ([]byte, error) {
		vars := envMap(env)
		// Warmed up: wait for the partner.
		if _, err := arrive(ctx, vars, "ready"); err != nil {
			return nil, err
		}
		rate := 0.6 * alone[argv[0]] // the timed steps, beside the partner
		// Untimed steps until the partner is done too.
		if _, err := arrive(ctx, vars, "done"); err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "rate: %v\n", rate), nil
	}
	p := gpu.Profiler{Repeats: 1, Run: run}
	prof, err := p.ProfilePairs(context.Background(),
		[]gpu.Workload{{Name: "resnet", Argv: []string{"resnet"}}, {Name: "lm", Argv: []string{"lm"}}},
		[]gpu.Pair{{A: "resnet", B: "lm"}, {A: "lm", B: "lm"}},
		[]gpu.Target{{Type: "v100", UUID: "GPU-v100"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rates, err := prof.Rates() // the input of alloc.SpaceSharing's Pairs
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rates {
		fmt.Printf("%s + %s on %s: %.3g and %.3g\n", r.A, r.B, r.Type, r.RateA, r.RateB)
	}
	// Output:
	// resnet + lm on v100: 19.2 and 12
	// lm + lm on v100: 12 and 12
}
