//go:build cgo

package gpu_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
)

var levels = []nvml.GpuTopologyLevel{nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE, nvml.TOPOLOGY_MULTIPLE,
	nvml.TOPOLOGY_HOSTBRIDGE, nvml.TOPOLOGY_NODE, nvml.TOPOLOGY_SYSTEM}
var paths = []gpu.Path{gpu.PathBoard, gpu.PathSwitch, gpu.PathSwitches, gpu.PathHostBridge, gpu.PathNUMANode, gpu.PathSystem}

// genHost draws a mocked host of 1 to 8 GPUs of mixed products, with direct
// NVLinks between random pairs (each link listed on both ends), NVSwitch
// ports, inactive ports, MIG modes and unknown NUMA nodes, and a random PCIe
// level for every pair.
func genHost() *rapid.Generator[nvmlmock.Host] {
	names := []string{"NVIDIA A100-SXM4-40GB", "Tesla V100-SXM2-16GB", "Tesla T4", "NVIDIA H100 80GB HBM3", "NVIDIA RTX A4000"}
	return rapid.Custom(func(t *rapid.T) nvmlmock.Host {
		n := rapid.IntRange(1, 8).Draw(t, "gpus")
		h := nvmlmock.Host{Driver: "1", GPUs: make([]nvmlmock.GPU, n), NoSwitchP2P: rapid.Bool().Draw(t, "noSwitchP2P")}
		for i := range h.GPUs {
			g := &h.GPUs[i]
			g.Name = rapid.SampledFrom(names).Draw(t, "name")
			g.UUID = fmt.Sprintf("GPU-%d", i)
			g.BusID = fmt.Sprintf("0000:%02x:00.0", 0x10+i)
			g.MemoryBytes = uint64(rapid.IntRange(1, 141).Draw(t, "gib")) << 30
			g.Major, g.Minor = rapid.IntRange(3, 9).Draw(t, "major"), rapid.IntRange(0, 9).Draw(t, "minor")
			g.NUMANode = rapid.IntRange(-1, 7).Draw(t, "numa")
			g.MIGSupported = rapid.Bool().Draw(t, "migSupported")
			g.MIGEnabled = g.MIGSupported && rapid.Bool().Draw(t, "migEnabled")
			g.MIGPending = g.MIGSupported && rapid.Bool().Draw(t, "migPending")
			g.MIGSlots = 7
			for range rapid.IntRange(0, 3).Draw(t, "switchPorts") {
				g.NVLinks = append(g.NVLinks, nvmlmock.Port{Active: true, Switch: true})
			}
			if rapid.Bool().Draw(t, "inactivePort") {
				g.NVLinks = append(g.NVLinks, nvmlmock.Port{})
			}
		}
		for range rapid.IntRange(0, 2*n).Draw(t, "directLinks") {
			a, b := rapid.IntRange(0, n-1).Draw(t, "a"), rapid.IntRange(0, n-1).Draw(t, "b")
			if a == b || len(h.GPUs[a].NVLinks) >= nvml.NVLINK_MAX_LINKS || len(h.GPUs[b].NVLinks) >= nvml.NVLINK_MAX_LINKS {
				continue
			}
			h.GPUs[a].NVLinks = append(h.GPUs[a].NVLinks, nvmlmock.Port{Active: true, Peer: b})
			h.GPUs[b].NVLinks = append(h.GPUs[b].NVLinks, nvmlmock.Port{Active: true, Peer: a})
		}
		lv := rapid.SliceOfN(rapid.IntRange(0, len(levels)-1), n*n, n*n).Draw(t, "levels")
		h.Path = func(a, b int) nvml.GpuTopologyLevel { return levels[lv[a*n+b]] }
		return h
	})
}

// TestProbeModelProperty probes random mocked hosts and checks the result
// against the description the mock was built from.
func TestProbeModelProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec := genHost().Draw(t, "host")
		lib, _ := nvmlmock.New(spec)
		h, err := gpu.Probe(lib, &gpu.Settings{Name: "r"})
		if err != nil {
			t.Fatalf("Probe() error = %v", err)
		}
		n := len(spec.GPUs)
		if len(h.Devices) != n || len(h.Links) != n*(n-1)/2 {
			t.Fatalf("%d devices and %d links, want %d and %d", len(h.Devices), len(h.Links), n, n*(n-1)/2)
		}
		schedulable := 0
		for i, g := range spec.GPUs {
			d := h.Devices[i]
			if d.Index != i || d.UUID != g.UUID || d.Name != g.Name || d.Type != gpu.DefaultTypes().Lookup(g.Name) ||
				d.MemoryBytes != g.MemoryBytes || d.ComputeCapability != (gpu.ComputeCapability{Major: g.Major, Minor: g.Minor}) ||
				d.PCIBusID != g.BusID || d.NUMANode != g.NUMANode {
				t.Fatalf("device %d = %+v, want it to match %+v", i, d, g)
			}
			if d.MIG.Supported != g.MIGSupported || d.MIG.Enabled != g.MIGEnabled || d.MIG.Pending != g.MIGPending {
				t.Fatalf("device %d MIG = %+v, want %+v", i, d.MIG, g)
			}
			if len(d.NVLinks) != len(g.NVLinks) {
				t.Fatalf("device %d has %d NVLink ports, want %d", i, len(d.NVLinks), len(g.NVLinks))
			}
			for p, port := range g.NVLinks {
				l := d.NVLinks[p]
				want := gpu.NVLink{Port: p, Active: port.Active, Peer: -1}
				switch {
				case port.Active && port.Switch:
					want.Remote, want.RemoteBusID = gpu.RemoteSwitch, l.RemoteBusID
				case port.Active:
					want.Remote, want.RemoteBusID, want.Peer = gpu.RemoteGPU, spec.GPUs[port.Peer].BusID, port.Peer
				}
				if l != want {
					t.Fatalf("device %d port %d = %+v, want %+v", i, p, l, want)
				}
			}
			if !g.MIGEnabled {
				schedulable++
			}
		}
		k := 0
		for a := range n {
			for b := a + 1; b < n; b++ {
				direct, sa, sb := 0, 0, 0
				for _, p := range spec.GPUs[a].NVLinks {
					if p.Active && !p.Switch && p.Peer == b {
						direct++
					}
					if p.Active && p.Switch {
						sa++
					}
				}
				for _, p := range spec.GPUs[b].NVLinks {
					if p.Active && p.Switch {
						sb++
					}
				}
				want := gpu.Link{A: a, B: b, Path: paths[slices.Index(levels, spec.Path(a, b))], NVLinks: direct}
				if direct == 0 && sa > 0 && sb > 0 && !spec.NoSwitchP2P {
					want.NVLinks, want.NVSwitch = min(sa, sb), true
				}
				if h.Links[k] != want {
					t.Fatalf("link %d = %+v, want %+v", k, h.Links[k], want)
				}
				if l, ok := h.Link(b, a); !ok || l != want {
					t.Fatalf("Link(%d, %d) = %+v, %v; want %+v", b, a, l, ok, want)
				}
				k++
			}
		}
		_, count := h.Capacity()
		total := 0
		for _, c := range count {
			total += c
		}
		if total != schedulable {
			t.Fatalf("capacity %v sums to %d, want the %d GPUs without MIG", count, total, schedulable)
		}
	})
}
