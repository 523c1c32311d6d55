//go:build !cgo

package main

import (
	"fmt"

	"github.com/gpufair/gpufair/gpu"
)

// probeMock cannot run without cgo: go-nvml's mocks implement nvml.Interface,
// which exists only in cgo builds.
func probeMock(*gpu.Settings) (*gpu.Host, error) {
	return nil, fmt.Errorf("%w: go-nvml's mocks too", gpu.ErrNoCgo)
}

func mockAvailable() bool { return false }

// probeRecorded needs NVML, which only cgo builds load.
func probeRecorded(*gpu.Settings, string) (*gpu.Host, error) {
	return nil, fmt.Errorf("%w: recording NVML needs it too", gpu.ErrNoCgo)
}
