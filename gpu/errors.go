package gpu

import (
	"errors"
	"fmt"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrNoDriver reports that NVML could not be loaded or initialised: no
	// NVIDIA driver is installed or loaded, or the program was built without
	// cgo (NVML is reached through cgo and dlopen). It wraps NVML's own
	// error when there is one.
	ErrNoDriver = errors.New("gpu: no NVIDIA driver")

	// ErrNVML reports an NVML call that failed in the middle of a probe.
	// The error is a *CallError naming the device and the call.
	ErrNVML = errors.New("gpu: NVML call failed")

	// ErrNoCgo is wrapped by ErrNoDriver when the program was built with
	// CGO_ENABLED=0, where NVML cannot be loaded at all.
	ErrNoCgo = errors.New("gpu: built without cgo, NVML is unavailable")
)

// CallError names the NVML call that failed during a probe, and the device it
// was made on. It unwraps to both ErrNVML and NVML's own error (an
// nvml.Return when built with cgo), so errors.Is works with either.
type CallError struct {
	Call   string // NVML method, e.g. "GetUUID"
	Device int    // device index; -1 for calls on the library itself
	Peer   int    // second device of a pairwise call, else -1
	Port   int    // NVLink port of a per-link call, else -1
	Err    error  // NVML's error
}

// Error names the NVML call, the device where there is one, and NVML's error.
func (e *CallError) Error() string {
	s := "gpu: NVML " + e.Call
	if e.Device >= 0 {
		s += fmt.Sprintf(" on device %d", e.Device)
	}
	if e.Peer >= 0 {
		s += fmt.Sprintf(" with device %d", e.Peer)
	}
	if e.Port >= 0 {
		s += fmt.Sprintf(" for NVLink %d", e.Port)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns ErrNVML and NVML's error.
func (e *CallError) Unwrap() []error { return []error{ErrNVML, e.Err} }
