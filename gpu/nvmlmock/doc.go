// Package nvmlmock builds NVML mocks (github.com/NVIDIA/go-nvml/pkg/nvml/mock)
// that answer every call gpu.Probe makes, so the probe can be exercised
// without hardware: New builds a host from a plain description, and DGXA100
// completes go-nvml's own DGX A100 model (pkg/nvml/mock/dgxa100) with the
// topology, NVLink and NUMA answers that model lacks.
//
// Record wraps a real library and notes every call the probe makes, with its
// answer, as a Transcript (JSON); Replay answers the same calls again from
// it, so a real machine's answers become a test fixture
// (gpu-probe -record writes one).
//
// NVML needs cgo, so without cgo this package is empty.
package nvmlmock
