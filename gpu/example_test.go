package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/speedup"
)

// ExampleProfiler profiles two workloads on two GPU types and estimates the
// cell that failed. The Runner here stands in for real programs so that the
// output is fixed; leave Run nil to execute Argv (for example
// []string{"python", "train.py"} printing "rate: <steps/s>").
func ExampleProfiler() {
	rates := map[string]string{ // workload program and device -> its report
		"resnet GPU-k80": "rate: 4.8", "resnet GPU-v100": "rate: 32.4",
		"lm GPU-k80": "rate: 23.8", "lm GPU-v100": "out of memory",
	}
	run := func(_ context.Context, argv, env []string) ([]byte, error) {
		dev := strings.TrimPrefix(env[len(env)-1], "CUDA_VISIBLE_DEVICES=")
		return []byte(rates[argv[0]+" "+dev]), nil
	}
	p := gpu.Profiler{Repeats: 3, Run: run}
	prof, err := p.Profile(context.Background(),
		[]gpu.Workload{{Name: "resnet", Argv: []string{"resnet"}}, {Name: "lm", Argv: []string{"lm"}}},
		[]gpu.Target{{Type: "k80", UUID: "GPU-k80"}, {Type: "v100", UUID: "GPU-v100"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = prof.Matrix()
	fmt.Println("no rate:", errors.Is(err, gpu.ErrNoRate))
	fmt.Println(err)

	c, err := speedup.Complete(prof.Workloads, prof.Types, prof.Values(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, w := range prof.Workloads {
		fmt.Printf("%s: %.3g %.3g\n", w, c.Matrix.At(i, 0), c.Matrix.At(i, 1))
	}
	// Output:
	// no rate: true
	// gpu: profile "lm" on v100 (GPU-v100), run 0: gpu: workload reported no rate: no line "rate: <number>" in 13 bytes of output
	// resnet: 4.8 32.4
	// lm: 23.8 161
}
