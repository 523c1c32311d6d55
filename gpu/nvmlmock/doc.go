// Package nvmlmock builds NVML mocks (github.com/NVIDIA/go-nvml/pkg/nvml/mock)
// that answer every call gpu.Probe makes, so the probe can be exercised
// without hardware: New builds a host from a plain description, and DGXA100
// completes go-nvml's own DGX A100 model (pkg/nvml/mock/dgxa100) with the
// topology, NVLink and NUMA answers that model lacks.
//
// NVML needs cgo, so without cgo this package is empty.
package nvmlmock
