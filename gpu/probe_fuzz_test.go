//go:build cgo

package gpu_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzProbe probes mocked hosts that a driver should not report but might:
// names and UUIDs empty or repeated, malformed bus IDs, no memory, compute
// capabilities out of range, MIG devices in any slot, NVLinks to the GPU
// itself, to GPUs that do not list them back or to GPUs that do not exist,
// and any topology level. Probe must not panic; what it returns must be an
// error or a host whose servers, capacity, cluster and table can be had.
func FuzzProbe(f *testing.F) {
	f.Add([]byte{2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{4, 3, 3, 3, 0, 0, 0, 1, 1, 1, 2, 2, 2, 9, 9, 9, 9, 9, 9, 9, 9})
	names := []string{"NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB", "", "Tesla T4", "NVIDIA H100 80GB HBM3", "x"}
	levels := []nvml.GpuTopologyLevel{nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, nvml.TOPOLOGY_MULTIPLE,
		nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_NODE, nvml.TOPOLOGY_SYSTEM, 7, 0xff}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		n := 1 + r.Int(6)
		h := nvmlmock.Host{Driver: "1", GPUs: make([]nvmlmock.GPU, n), NoSwitchP2P: r.Int(2) == 0}
		for i := range h.GPUs {
			g := &h.GPUs[i]
			g.Name = names[r.Int(len(names))]
			g.UUID = fmt.Sprintf("GPU-%d", r.Int(n+1))
			g.BusID = []string{fmt.Sprintf("0000:%02x:00.0", 0x10+i), fmt.Sprintf("00000000:%02x:00.0", 0x10+r.Int(4)), "", "zz"}[r.Int(4)]
			g.MemoryBytes = uint64(r.Int(3)) << 30
			g.Major, g.Minor = r.Int(12)-1, r.Int(10)
			g.NUMANode = r.Int(4) - 1
			g.MIGSupported = r.Int(2) == 0
			g.MIGEnabled = r.Int(2) == 0
			g.MIGPending = r.Int(2) == 0
			g.MIGSlots = r.Int(9)
			for range r.Int(4) {
				g.MIGDevices = append(g.MIGDevices, nvmlmock.MIGDev{Slot: r.Int(9), UUID: fmt.Sprintf("MIG-%d", r.Int(4)), MemoryBytes: uint64(r.Int(3)) << 30})
			}
			for range r.Int(5) {
				g.NVLinks = append(g.NVLinks, nvmlmock.Port{Active: r.Int(3) > 0, Switch: r.Int(3) == 0, Peer: r.Int(n + 2)})
			}
		}
		lv := make([]nvml.GpuTopologyLevel, n*n)
		for i := range lv {
			lv[i] = levels[r.Int(len(levels))]
		}
		h.Path = func(a, b int) nvml.GpuTopologyLevel { return lv[a*n+b] }
		lib, _ := nvmlmock.New(h)
		host, err := gpu.Probe(lib, &gpu.Settings{Name: "fuzz"})
		if err != nil {
			return
		}
		host.Servers()
		host.Capacity()
		if _, err := gpu.Cluster(host); err != nil {
			return
		}
		if err := host.WriteTable(io.Discard); err != nil {
			t.Fatalf("WriteTable: %v", err)
		}
	})
}
