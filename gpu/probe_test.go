//go:build cgo

package gpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
	"github.com/gpufair/gpufair/topology"
)

const gib = 1 << 30

// TestProbeDGXA100 checks every field the probe reports for go-nvml's DGX A100
// model against what the model (and nvmlmock's completion of it) says.
func TestProbeDGXA100(t *testing.T) {
	h, err := gpu.Probe(nvmlmock.DGXA100(), &gpu.Settings{Name: "dgx-1", Rack: "r7"})
	if err != nil {
		t.Fatalf("Probe() error = %v", err)
	}
	want := &gpu.Host{Name: "dgx-1", Rack: "r7", Driver: "550.54.15"}
	for i := range 8 {
		d := gpu.Device{
			Index:             i,
			UUID:              nvmlmock.DGXA100UUID(i),
			Name:              "Mock NVIDIA A100-SXM4-40GB",
			Type:              "a100",
			MemoryBytes:       42949672960,
			ComputeCapability: gpu.ComputeCapability{Major: 8, Minor: 0},
			PCIBusID:          "0000:0" + string(rune('0'+i)) + ":00.0",
			NUMANode:          []int{3, 3, 1, 1, 7, 7, 5, 5}[i],
			MIG:               gpu.MIG{Supported: true},
		}
		for p := range 12 {
			d.NVLinks = append(d.NVLinks, gpu.NVLink{
				Port: p, Active: true, Remote: gpu.RemoteSwitch,
				RemoteBusID: []string{"0000:c0:00.0", "0000:c1:00.0", "0000:c2:00.0", "0000:c3:00.0", "0000:c4:00.0", "0000:c5:00.0"}[p/2],
				Peer:        -1,
			})
		}
		want.Devices = append(want.Devices, d)
	}
	for a := range 8 {
		for b := a + 1; b < 8; b++ {
			path := gpu.PathSystem
			if a/2 == b/2 {
				path = gpu.PathSwitches
			}
			want.Links = append(want.Links, gpu.Link{A: a, B: b, Path: path, NVLinks: 12, NVSwitch: true})
		}
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Fatalf("Probe() mismatch (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([]topology.Server{{Name: "dgx-1", Rack: "r7", Type: "a100", GPUs: 8}}, h.Servers()); diff != "" {
		t.Errorf("Servers() mismatch (-want +got):\n%s", diff)
	}
	l, ok := h.Link(5, 4)
	if !ok || l.String() != "NV12" || l.Path.String() != "PXB" {
		t.Errorf("Link(5, 4) = %+v, %v; want NV12 over PXB", l, ok)
	}
}

// mixedHost is two V100s joined by two direct NVLinks (ports 2 to 5 present
// but inactive) and two T4s without NVLink, whose NUMA node NVML does not
// know.
func mixedHost() nvmlmock.Host {
	v100 := func(i, peer int, bus string) nvmlmock.GPU {
		return nvmlmock.GPU{
			Name: "Tesla V100-SXM2-16GB", UUID: "GPU-v100-" + string(rune('0'+i)), BusID: bus,
			MemoryBytes: 16 * gib, Major: 7, Minor: 0, NUMANode: 0,
			NVLinks: []nvmlmock.Port{{Active: true, Peer: peer}, {Active: true, Peer: peer}, {}, {}, {}, {}},
		}
	}
	t4 := func(i int, bus string) nvmlmock.GPU {
		return nvmlmock.GPU{
			Name: "Tesla T4", UUID: "GPU-t4-" + string(rune('0'+i)), BusID: bus,
			MemoryBytes: 15 * gib, Major: 7, Minor: 5, NUMANode: -1,
		}
	}
	return nvmlmock.Host{
		Driver: "535.104.05",
		GPUs:   []nvmlmock.GPU{v100(0, 1, "0000:1A:00.0"), v100(1, 0, "0000:1b:00.0"), t4(2, "0000:3d:00.0"), t4(3, "0000:3e:00.0")},
		Path: func(a, b int) nvml.GpuTopologyLevel {
			switch {
			case a == 0 && b == 1, a == 2 && b == 3:
				return nvml.TOPOLOGY_SINGLE
			case a == 1 && b == 2:
				return nvml.TOPOLOGY_HOSTBRIDGE
			}
			return nvml.TOPOLOGY_NODE
		},
	}
}

func TestProbeMixedTypes(t *testing.T) {
	lib, _ := nvmlmock.New(mixedHost())
	h, err := gpu.Probe(lib, &gpu.Settings{Name: "mixed"})
	if err != nil {
		t.Fatalf("Probe() error = %v", err)
	}
	v100Links := func(peer int) []gpu.NVLink {
		bus := []string{"0000:1a:00.0", "0000:1b:00.0"}[peer]
		return []gpu.NVLink{
			{Port: 0, Active: true, Remote: gpu.RemoteGPU, RemoteBusID: bus, Peer: peer},
			{Port: 1, Active: true, Remote: gpu.RemoteGPU, RemoteBusID: bus, Peer: peer},
			{Port: 2, Peer: -1}, {Port: 3, Peer: -1}, {Port: 4, Peer: -1}, {Port: 5, Peer: -1},
		}
	}
	want := &gpu.Host{
		Name: "mixed", Driver: "535.104.05",
		Devices: []gpu.Device{
			{Index: 0, UUID: "GPU-v100-0", Name: "Tesla V100-SXM2-16GB", Type: "v100", MemoryBytes: 16 * gib,
				ComputeCapability: gpu.ComputeCapability{Major: 7}, PCIBusID: "0000:1a:00.0", NUMANode: 0, NVLinks: v100Links(1)},
			{Index: 1, UUID: "GPU-v100-1", Name: "Tesla V100-SXM2-16GB", Type: "v100", MemoryBytes: 16 * gib,
				ComputeCapability: gpu.ComputeCapability{Major: 7}, PCIBusID: "0000:1b:00.0", NUMANode: 0, NVLinks: v100Links(0)},
			{Index: 2, UUID: "GPU-t4-2", Name: "Tesla T4", Type: "t4", MemoryBytes: 15 * gib,
				ComputeCapability: gpu.ComputeCapability{Major: 7, Minor: 5}, PCIBusID: "0000:3d:00.0", NUMANode: -1},
			{Index: 3, UUID: "GPU-t4-3", Name: "Tesla T4", Type: "t4", MemoryBytes: 15 * gib,
				ComputeCapability: gpu.ComputeCapability{Major: 7, Minor: 5}, PCIBusID: "0000:3e:00.0", NUMANode: -1},
		},
		Links: []gpu.Link{
			{A: 0, B: 1, Path: gpu.PathSwitch, NVLinks: 2},
			{A: 0, B: 2, Path: gpu.PathNUMANode},
			{A: 0, B: 3, Path: gpu.PathNUMANode},
			{A: 1, B: 2, Path: gpu.PathHostBridge},
			{A: 1, B: 3, Path: gpu.PathNUMANode},
			{A: 2, B: 3, Path: gpu.PathSwitch},
		},
	}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Fatalf("Probe() mismatch (-want +got):\n%s", diff)
	}
	wantServers := []topology.Server{{Name: "mixed/v100", Type: "v100", GPUs: 2}, {Name: "mixed/t4", Type: "t4", GPUs: 2}}
	if diff := cmp.Diff(wantServers, h.Servers()); diff != "" {
		t.Errorf("Servers() mismatch (-want +got):\n%s", diff)
	}

	// Two hosts combine into one cluster; the DGX's a100 comes last because
	// types appear in host order.
	dgx, err := gpu.Probe(nvmlmock.DGXA100(), &gpu.Settings{Name: "dgx"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := gpu.Cluster(h, dgx)
	if err != nil {
		t.Fatalf("Cluster() error = %v", err)
	}
	if diff := cmp.Diff(append(wantServers, topology.Server{Name: "dgx", Type: "a100", GPUs: 8}), c.Servers); diff != "" {
		t.Errorf("Cluster() mismatch (-want +got):\n%s", diff)
	}
	capa, err := gpu.Capacity(h, dgx)
	if err != nil {
		t.Fatalf("Capacity() error = %v", err)
	}
	if diff := cmp.Diff(alloc.Capacity{Types: []topology.GPUType{"v100", "t4", "a100"}, Count: []float64{2, 2, 8}}, capa); diff != "" {
		t.Errorf("Capacity() mismatch (-want +got):\n%s", diff)
	}
	if _, err := gpu.Cluster(h, h); !errors.Is(err, topology.ErrInvalid) {
		t.Errorf("Cluster(h, h) error = %v, want topology.ErrInvalid (duplicate server names)", err)
	}
}

// TestProbeSwitchWithoutFabric: GPUs with NVSwitch ports but no NVLink P2P
// (fabric manager down) are linked over PCIe only.
func TestProbeSwitchWithoutFabric(t *testing.T) {
	sw := []nvmlmock.Port{{Active: true, Switch: true}, {Active: true, Switch: true}}
	lib, _ := nvmlmock.New(nvmlmock.Host{
		NoSwitchP2P: true,
		GPUs: []nvmlmock.GPU{
			{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-a", BusID: "0000:18:00.0", NVLinks: sw},
			{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-b", BusID: "0000:2a:00.0", NVLinks: sw},
		},
	})
	h, err := gpu.Probe(lib, &gpu.Settings{Name: "h"})
	if err != nil {
		t.Fatalf("Probe() error = %v", err)
	}
	if diff := cmp.Diff([]gpu.Link{{A: 0, B: 1, Path: gpu.PathSystem}}, h.Links); diff != "" {
		t.Errorf("Links mismatch (-want +got):\n%s", diff)
	}
	if h.Devices[0].Type != "h100" {
		t.Errorf("Type = %q, want h100", h.Devices[0].Type)
	}
}

func TestProbeMIG(t *testing.T) {
	a100 := func(uuid, bus string) nvmlmock.GPU {
		return nvmlmock.GPU{Name: "NVIDIA A100 80GB PCIe", UUID: uuid, BusID: bus, MemoryBytes: 80 * gib,
			Major: 8, NUMANode: 0, MIGSupported: true, MIGSlots: 7}
	}
	g0 := a100("GPU-0", "0000:17:00.0")
	g0.MIGEnabled, g0.MIGPending = true, true
	g0.MIGDevices = []nvmlmock.MIGDev{{Slot: 0, UUID: "MIG-a", MemoryBytes: 40 * gib}, {Slot: 3, UUID: "MIG-b", MemoryBytes: 20 * gib}}
	g1 := a100("GPU-1", "0000:65:00.0")
	g1.MIGPending = true // enabled after the next reset: still whole now
	g2 := a100("GPU-2", "0000:ca:00.0")
	lib, _ := nvmlmock.New(nvmlmock.Host{GPUs: []nvmlmock.GPU{g0, g1, g2}})
	h, err := gpu.Probe(lib, &gpu.Settings{Name: "m"})
	if err != nil {
		t.Fatalf("Probe() error = %v", err)
	}
	wantMIG := []gpu.MIG{
		{Supported: true, Enabled: true, Pending: true, Instances: []gpu.MIGInstance{
			{Slot: 0, UUID: "MIG-a", MemoryBytes: 40 * gib}, {Slot: 3, UUID: "MIG-b", MemoryBytes: 20 * gib}}},
		{Supported: true, Pending: true},
		{Supported: true},
	}
	for i, want := range wantMIG {
		if diff := cmp.Diff(want, h.Devices[i].MIG); diff != "" {
			t.Errorf("device %d MIG mismatch (-want +got):\n%s", i, diff)
		}
	}
	// The MIG-enabled GPU is not schedulable as a whole GPU.
	if diff := cmp.Diff([]topology.Server{{Name: "m", Type: "a100", GPUs: 2}}, h.Servers()); diff != "" {
		t.Errorf("Servers() mismatch (-want +got):\n%s", diff)
	}
	var b strings.Builder
	if err := h.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"on (2 inst.)", "off (on after reset)", "MIG-b", "(2 a100)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("WriteTable() lacks %q:\n%s", s, b.String())
		}
	}

	// All GPUs in MIG mode: no servers, and Cluster says so.
	for _, d := range []*nvmlmock.GPU{&g1, &g2} {
		d.MIGEnabled = true
	}
	lib, _ = nvmlmock.New(nvmlmock.Host{GPUs: []nvmlmock.GPU{g0, g1, g2}})
	h, err = gpu.Probe(lib, &gpu.Settings{Name: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gpu.Cluster(h); !errors.Is(err, gpu.ErrNoHosts) {
		t.Errorf("Cluster() error = %v, want ErrNoHosts", err)
	}
}

// TestProbeErrors makes one NVML call fail in the middle of a probe and checks
// that the error names the call and device and wraps both ErrNVML and NVML's
// return code.
func TestProbeErrors(t *testing.T) {
	fail := nvml.ERROR_GPU_IS_LOST
	for _, tc := range []struct {
		name     string
		breakLib func(lib *mock.Interface, devs []*mock.Device)
		want     gpu.CallError
	}{
		{"count", func(lib *mock.Interface, _ []*mock.Device) {
			lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "DeviceGetCount", Device: -1, Peer: -1, Port: -1}},
		{"handle", func(lib *mock.Interface, _ []*mock.Device) {
			lib.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, fail }
		}, gpu.CallError{Call: "DeviceGetHandleByIndex", Device: 0, Peer: -1, Port: -1}},
		{"uuid", func(_ *mock.Interface, d []*mock.Device) {
			d[2].GetUUIDFunc = func() (string, nvml.Return) { return "", fail }
		}, gpu.CallError{Call: "GetUUID", Device: 2, Peer: -1, Port: -1}},
		{"name", func(_ *mock.Interface, d []*mock.Device) {
			d[1].GetNameFunc = func() (string, nvml.Return) { return "", fail }
		}, gpu.CallError{Call: "GetName", Device: 1, Peer: -1, Port: -1}},
		{"memory", func(_ *mock.Interface, d []*mock.Device) {
			d[3].GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, fail }
		}, gpu.CallError{Call: "GetMemoryInfo", Device: 3, Peer: -1, Port: -1}},
		{"compute capability", func(_ *mock.Interface, d []*mock.Device) {
			d[0].GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return 0, 0, fail }
		}, gpu.CallError{Call: "GetCudaComputeCapability", Device: 0, Peer: -1, Port: -1}},
		{"pci", func(_ *mock.Interface, d []*mock.Device) {
			d[1].GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, fail }
		}, gpu.CallError{Call: "GetPciInfo", Device: 1, Peer: -1, Port: -1}},
		{"numa", func(_ *mock.Interface, d []*mock.Device) {
			d[0].GetNumaNodeIdFunc = func() (int, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "GetNumaNodeId", Device: 0, Peer: -1, Port: -1}},
		{"mig mode", func(_ *mock.Interface, d []*mock.Device) {
			d[2].GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, fail }
		}, gpu.CallError{Call: "GetMigMode", Device: 2, Peer: -1, Port: -1}},
		{"nvlink state", func(_ *mock.Interface, d []*mock.Device) {
			d[1].GetNvLinkStateFunc = func(n int) (nvml.EnableState, nvml.Return) {
				if n == 1 {
					return 0, fail
				}
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
		}, gpu.CallError{Call: "GetNvLinkState", Device: 1, Peer: -1, Port: 1}},
		{"nvlink remote type", func(_ *mock.Interface, d []*mock.Device) {
			d[0].GetNvLinkRemoteDeviceTypeFunc = func(int) (nvml.IntNvLinkDeviceType, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "GetNvLinkRemoteDeviceType", Device: 0, Peer: -1, Port: 0}},
		{"nvlink remote pci", func(_ *mock.Interface, d []*mock.Device) {
			d[1].GetNvLinkRemotePciInfoFunc = func(int) (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{}, fail }
		}, gpu.CallError{Call: "GetNvLinkRemotePciInfo", Device: 1, Peer: -1, Port: 0}},
		{"common ancestor", func(_ *mock.Interface, d []*mock.Device) {
			d[1].GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "GetTopologyCommonAncestor", Device: 1, Peer: 2, Port: -1}},
		{"driver", func(lib *mock.Interface, _ []*mock.Device) {
			lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", fail }
		}, gpu.CallError{Call: "SystemGetDriverVersion", Device: -1, Peer: -1, Port: -1}},
		{"init", func(lib *mock.Interface, _ []*mock.Device) {
			lib.InitFunc = func() nvml.Return { return nvml.ERROR_NO_PERMISSION }
		}, gpu.CallError{Call: "Init", Device: -1, Peer: -1, Port: -1}},
		{"shutdown", func(lib *mock.Interface, _ []*mock.Device) {
			lib.ShutdownFunc = func() nvml.Return { return fail }
		}, gpu.CallError{Call: "Shutdown", Device: -1, Peer: -1, Port: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, devs := nvmlmock.New(mixedHost())
			tc.breakLib(lib, devs)
			h, err := gpu.Probe(lib, &gpu.Settings{Name: "x"})
			if h != nil {
				t.Errorf("Probe() host = %v, want nil with an error", h)
			}
			if !errors.Is(err, gpu.ErrNVML) {
				t.Fatalf("Probe() error = %v, want ErrNVML", err)
			}
			var ce *gpu.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("Probe() error = %T, want *CallError", err)
			}
			want := tc.want
			want.Err = ce.Err
			if diff := cmp.Diff(want, *ce); diff != "" {
				t.Errorf("CallError mismatch (-want +got):\n%s", diff)
			}
			if wantRet := fail; tc.name == "init" {
				wantRet = nvml.ERROR_NO_PERMISSION
				if !errors.Is(err, wantRet) {
					t.Errorf("error %v does not wrap %v", err, wantRet)
				}
			} else if !errors.Is(err, wantRet) {
				t.Errorf("error %v does not wrap %v", err, wantRet)
			}
			if errors.Is(err, gpu.ErrNoDriver) {
				t.Errorf("error %v wraps ErrNoDriver; the driver was there", err)
			}
		})
	}
}

// TestProbeMIGErrors covers the calls made only for MIG-enabled GPUs and the
// P2P query made only for NVSwitch-linked GPUs.
func TestProbeMIGErrors(t *testing.T) {
	fail := nvml.ERROR_UNKNOWN
	g := nvmlmock.GPU{Name: "NVIDIA A30", UUID: "GPU-x", BusID: "0000:01:00.0", MIGSupported: true, MIGEnabled: true, MIGSlots: 2,
		MIGDevices: []nvmlmock.MIGDev{{Slot: 1, UUID: "MIG-x"}}, NVLinks: []nvmlmock.Port{{Active: true, Switch: true}}}
	g2 := g
	g2.UUID, g2.BusID = "GPU-y", "0000:02:00.0"
	for _, tc := range []struct {
		name     string
		breakLib func(d *mock.Device)
		want     gpu.CallError
	}{
		{"max mig", func(d *mock.Device) {
			d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "GetMaxMigDeviceCount", Device: 0, Peer: -1, Port: -1}},
		{"mig handle", func(d *mock.Device) {
			d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, fail }
		}, gpu.CallError{Call: "GetMigDeviceHandleByIndex", Device: 0, Peer: -1, Port: -1}},
		{"p2p", func(d *mock.Device) {
			d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) { return 0, fail }
		}, gpu.CallError{Call: "GetP2PStatus", Device: 0, Peer: 1, Port: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, devs := nvmlmock.New(nvmlmock.Host{GPUs: []nvmlmock.GPU{g, g2}})
			tc.breakLib(devs[0])
			_, err := gpu.Probe(lib, nil)
			var ce *gpu.CallError
			if !errors.As(err, &ce) || !errors.Is(err, fail) {
				t.Fatalf("Probe() error = %v, want a *CallError wrapping %v", err, fail)
			}
			want := tc.want
			want.Err = ce.Err
			if diff := cmp.Diff(want, *ce); diff != "" {
				t.Errorf("CallError mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProbeNoDriver: NVML's answers when the library or the kernel driver is
// missing become ErrNoDriver, and so does the real library on this machine
// when it has no NVIDIA driver.
func TestProbeNoDriver(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		_, err := gpu.Probe(lib, nil)
		if !errors.Is(err, gpu.ErrNoDriver) || !errors.Is(err, ret) {
			t.Errorf("Probe() with Init = %v: error = %v, want ErrNoDriver wrapping it", ret, err)
		}
	}
	h, err := gpu.ProbeLocal(nil)
	switch {
	case err == nil:
		t.Logf("this machine has an NVIDIA driver: %d GPUs", len(h.Devices))
	case !errors.Is(err, gpu.ErrNoDriver):
		t.Errorf("ProbeLocal() error = %v, want nil or ErrNoDriver", err)
	}
}

func TestSettingsDefaults(t *testing.T) {
	lib, _ := nvmlmock.New(mixedHost())
	h, err := gpu.Probe(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name == "" {
		t.Errorf("Probe(lib, nil) host has no name")
	}
	lib, _ = nvmlmock.New(mixedHost())
	h, err = gpu.Probe(lib, &gpu.Settings{Name: "n", Types: gpu.TypeTable{{Match: "V100 SXM2", Type: "v100-sxm2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := []topology.GPUType{h.Devices[0].Type, h.Devices[2].Type}; !cmp.Equal(got, []topology.GPUType{"v100-sxm2", "t4"}) {
		t.Errorf("types with a custom table = %v, want [v100-sxm2 t4] (t4 from the name, no rule)", got)
	}
}

// TestProbeNilHandles: a nil library is no driver, and a call that answers
// SUCCESS with a nil device or MIG device handle is a *CallError naming it;
// the probe called methods on them and panicked.
func TestProbeNilHandles(t *testing.T) {
	// A nil pointer in the interface called its methods, and panicked.
	if _, err := gpu.Probe((*mock.Interface)(nil), nil); !errors.Is(err, gpu.ErrNoDriver) {
		t.Errorf("Probe((*mock.Interface)(nil)) error = %v, want ErrNoDriver", err)
	}
	if _, err := gpu.Probe(nil, nil); !errors.Is(err, gpu.ErrNoDriver) {
		t.Errorf("Probe(nil) error = %v, want ErrNoDriver", err)
	}
	g := nvmlmock.GPU{Name: "NVIDIA A30", UUID: "GPU-x", BusID: "0000:01:00.0", MIGSupported: true, MIGEnabled: true, MIGSlots: 2,
		MIGDevices: []nvmlmock.MIGDev{{Slot: 1, UUID: "MIG-x"}}}
	for _, tc := range []struct {
		name     string
		breakLib func(lib *mock.Interface, d *mock.Device)
		want     gpu.CallError
	}{
		{"device", func(lib *mock.Interface, _ *mock.Device) {
			lib.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.SUCCESS }
		}, gpu.CallError{Call: "DeviceGetHandleByIndex", Device: 0, Peer: -1, Port: -1}},
		{"mig device", func(_ *mock.Interface, d *mock.Device) {
			d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.SUCCESS }
		}, gpu.CallError{Call: "GetMigDeviceHandleByIndex", Device: 0, Peer: -1, Port: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, devs := nvmlmock.New(nvmlmock.Host{GPUs: []nvmlmock.GPU{g}})
			tc.breakLib(lib, devs[0])
			h, err := gpu.Probe(lib, nil)
			var ce *gpu.CallError
			if h != nil || !errors.As(err, &ce) || !errors.Is(err, gpu.ErrNVML) {
				t.Fatalf("Probe() = %v, %v; want a *CallError", h, err)
			}
			got := *ce
			got.Err = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CallError mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
