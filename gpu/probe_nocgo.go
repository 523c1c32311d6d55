//go:build !cgo

package gpu

import "fmt"

// ProbeLocal would probe this machine's GPUs through NVML, but this build has
// no cgo, which NVML needs (github.com/NVIDIA/go-nvml loads libnvidia-ml.so
// through cgo and dlopen). It always returns an error wrapping ErrNoDriver and
// ErrNoCgo; build with CGO_ENABLED=1 to probe real devices, and to get Probe,
// which takes an nvml.Interface.
func ProbeLocal(s *Settings) (*Host, error) {
	return nil, fmt.Errorf("%w: %w", ErrNoDriver, ErrNoCgo)
}
