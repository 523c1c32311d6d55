//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
)

func probeMock(s *gpu.Settings) (*gpu.Host, error) {
	return gpu.Probe(nvmlmock.DGXA100(), s)
}

func mockAvailable() bool { return true }

// probeRecorded probes this machine's driver and writes every NVML call the
// probe made, with its answer, to path (an nvmlmock.Transcript as JSON), also
// when the probe fails part way.
func probeRecorded(s *gpu.Settings, path string) (*gpu.Host, error) {
	lib, rec := nvmlmock.Record(nvml.New())
	h, err := gpu.Probe(lib, s)
	b, jerr := json.MarshalIndent(rec.Transcript(), "", "\t")
	if jerr == nil {
		jerr = os.WriteFile(path, append(b, '\n'), 0o644)
	}
	if err == nil && jerr != nil {
		return nil, fmt.Errorf("writing the NVML transcript: %w", jerr)
	}
	return h, err
}
