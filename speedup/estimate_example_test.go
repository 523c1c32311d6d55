package speedup_test

import (
	"fmt"
	"math"

	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// ExampleComplete estimates the V100 throughput of a job profiled only on
// K80 and P100, from jobs profiled on all three (rates in steps/s from
// Gavel's measurements). The default model reads each job's rates as a job
// factor times a GPU-type factor, fitted on the log scale.
func ExampleComplete() {
	rows := []string{"ResNet-18", "Transformer", "A3C", "CycleGAN"}
	types := []topology.GPUType{"k80", "p100", "v100"}
	values := [][]float64{
		{4.80, 35.9, 32.4},
		{5.47, 9.54, 11.1},
		{3.44, 5.68, 7.18},
		{0.505, 2.40, math.NaN()}, // not measured on V100
	}
	c, err := speedup.Complete(rows, types, values, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("CycleGAN on v100: %.3g steps/s (estimated: %v)\n", c.Matrix.At(3, 2), c.Estimated[3][2])
	// Gavel measured 4.43: CycleGAN gains more from newer GPUs than the three
	// jobs it is compared with. Errors of this size are typical when a job is
	// measured on few types (docs/benchmarks/gpu.md).

	// Output:
	// CycleGAN on v100: 2.02 steps/s (estimated: true)
}
