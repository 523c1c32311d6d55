//go:build cgo

package main

import (
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
)

func probeMock(s *gpu.Settings) (*gpu.Host, error) {
	return gpu.Probe(nvmlmock.DGXA100(), s)
}

func mockAvailable() bool { return true }
