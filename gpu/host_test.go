package gpu_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/topology"
)

func TestDefaultTypes(t *testing.T) {
	tab := gpu.DefaultTypes()
	for _, tc := range []struct {
		name string
		want topology.GPUType
	}{
		{"NVIDIA A100-SXM4-40GB", "a100"},
		{"NVIDIA A100-SXM4-80GB", "a100"},
		{"NVIDIA A100 80GB PCIe", "a100"},
		{"Mock NVIDIA A100-SXM4-40GB", "a100"},
		{"NVIDIA A10G", "a10g"},
		{"NVIDIA A10", "a10"},
		{"NVIDIA H100 80GB HBM3", "h100"},
		{"NVIDIA GH200 480GB", "gh200"},
		{"NVIDIA H200", "h200"},
		{"NVIDIA L40S", "l40s"},
		{"NVIDIA L4", "l4"},
		{"Tesla V100-SXM2-16GB", "v100"},
		{"Tesla V100-PCIE-32GB", "v100"},
		{"Tesla P100-PCIE-16GB", "p100"},
		{"Tesla K80", "k80"},
		{"Tesla T4", "t4"},
		// Words, not substrings: workstation cards are not data-centre ones.
		{"NVIDIA RTX A4000", "rtx-a4000"},
		{"Quadro P4000", "quadro-p4000"},
		{"NVIDIA RTX A2000 12GB", "rtx-a2000-12gb"},
		{"NVIDIA GeForce RTX 4090", "geforce-rtx-4090"},
		{"", "unknown"},
	} {
		if got := tab.Lookup(tc.name); got != tc.want {
			t.Errorf("DefaultTypes().Lookup(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	// An override placed first wins; the copy returned is the caller's.
	over := append(gpu.TypeTable{{Match: "a100 sxm4 80gb", Type: "a100-80gb"}}, tab...)
	if got := over.Lookup("NVIDIA A100-SXM4-80GB"); got != "a100-80gb" {
		t.Errorf("override Lookup = %q, want a100-80gb", got)
	}
	if got := over.Lookup("NVIDIA A100-SXM4-40GB"); got != "a100" {
		t.Errorf("override Lookup of the 40GB part = %q, want a100", got)
	}
	// A rule without a type is skipped: it gave devices an empty type, which
	// Cluster and Capacity refuse.
	untyped := append(gpu.TypeTable{{Match: "a100", Type: ""}}, tab...)
	if got := untyped.Lookup("NVIDIA A100-SXM4-40GB"); got != "a100" {
		t.Errorf("Lookup past a rule without a type = %q, want a100", got)
	}
	tab[0].Type = "changed"
	if gpu.DefaultTypes()[0].Type == "changed" {
		t.Errorf("DefaultTypes() shares its table between calls")
	}
}

func TestNormalizeBusID(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:07:00.0": "0000:07:00.0",
		"0000:07:00.0":     "0000:07:00.0",
		"00000001:B7:00.0": "0001:b7:00.0",
		"07:00.0":          "07:00.0",
		"":                 "",
		"1:07:00.0":        "0001:07:00.0",
	} {
		if got := gpu.NormalizeBusID(in); got != want {
			t.Errorf("NormalizeBusID(%q) = %q, want %q", in, got, want)
		}
	}
}

// handHost is a host written by hand, so these tests run without cgo.
func handHost(name string) *gpu.Host {
	return &gpu.Host{
		Name: name, Driver: "535",
		Devices: []gpu.Device{
			{Index: 0, UUID: "GPU-0", Name: "Tesla P100-PCIE-16GB", Type: "p100", MemoryBytes: 16 << 30, NUMANode: 0,
				ComputeCapability: gpu.ComputeCapability{Major: 6}, PCIBusID: "0000:04:00.0"},
			{Index: 1, UUID: "GPU-1", Name: "Tesla K80", Type: "k80", MemoryBytes: 12 << 30, NUMANode: -1,
				ComputeCapability: gpu.ComputeCapability{Major: 3, Minor: 7}, PCIBusID: "0000:05:00.0"},
			{Index: 2, UUID: "GPU-2", Name: "Tesla K80", Type: "k80", MemoryBytes: 12 << 30, NUMANode: -1,
				ComputeCapability: gpu.ComputeCapability{Major: 3, Minor: 7}, PCIBusID: "0000:06:00.0"},
		},
		Links: []gpu.Link{
			{A: 0, B: 1, Path: gpu.PathSystem},
			{A: 0, B: 2, Path: gpu.PathSystem},
			{A: 1, B: 2, Path: gpu.PathBoard},
		},
	}
}

func TestHostServersAndCluster(t *testing.T) {
	a, b := handHost("a"), handHost("b")
	b.Rack = "r1"
	want := []topology.Server{
		{Name: "a/p100", Type: "p100", GPUs: 1}, {Name: "a/k80", Type: "k80", GPUs: 2},
		{Name: "b/p100", Rack: "r1", Type: "p100", GPUs: 1}, {Name: "b/k80", Rack: "r1", Type: "k80", GPUs: 2},
	}
	c, err := gpu.Cluster(a, b)
	if err != nil {
		t.Fatalf("Cluster() error = %v", err)
	}
	if diff := cmp.Diff(want, c.Servers); diff != "" {
		t.Errorf("Cluster() mismatch (-want +got):\n%s", diff)
	}
	capa, err := gpu.Capacity(a, b)
	if err != nil {
		t.Fatalf("Capacity() error = %v", err)
	}
	if diff := cmp.Diff(alloc.Capacity{Types: []topology.GPUType{"p100", "k80"}, Count: []float64{2, 4}}, capa); diff != "" {
		t.Errorf("Capacity() mismatch (-want +got):\n%s", diff)
	}
	// The topology cluster agrees with the alloc capacity.
	types, count := c.Capacity()
	if !cmp.Equal(types, capa.Types) || count[0] != 2 || count[1] != 4 {
		t.Errorf("topology capacity %v %v disagrees with alloc capacity %v", types, count, capa)
	}

	for _, tc := range []struct {
		name  string
		hosts []*gpu.Host
		want  error
	}{
		{"none", nil, gpu.ErrNoHosts},
		{"nil host", []*gpu.Host{a, nil}, gpu.ErrNoHosts},
		{"empty host", []*gpu.Host{{Name: "e"}}, gpu.ErrNoHosts},
		{"same name", []*gpu.Host{a, handHost("a")}, topology.ErrInvalid},
		{"no name", []*gpu.Host{handHost("")}, topology.ErrInvalid},
	} {
		if _, err := gpu.Cluster(tc.hosts...); !errors.Is(err, tc.want) {
			t.Errorf("Cluster(%s) error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := gpu.Capacity(); !errors.Is(err, gpu.ErrNoHosts) {
		t.Errorf("Capacity() error = %v, want ErrNoHosts", err)
	}
	if _, err := gpu.Capacity(nil); !errors.Is(err, gpu.ErrNoHosts) {
		t.Errorf("Capacity(nil) error = %v, want ErrNoHosts", err)
	}
}

func TestWriteTable(t *testing.T) {
	h := handHost("lab")
	var b strings.Builder
	if err := h.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `host lab, driver 535, 3 GPUs (1 p100, 2 k80)

GPU  TYPE  NAME                  MEMORY  CC   PCI BUS ID    NUMA  MIG  NVLINK  UUID
0    p100  Tesla P100-PCIE-16GB  16 GiB  6.0  0000:04:00.0  0     n/a  -       GPU-0
1    k80   Tesla K80             12 GiB  3.7  0000:05:00.0  -     n/a  -       GPU-1
2    k80   Tesla K80             12 GiB  3.7  0000:06:00.0  -     n/a  -       GPU-2

links (NV<n>: n NVLinks, else the PCIe path):
      GPU0  GPU1  GPU2
GPU0  X     SYS   SYS
GPU1  SYS   X     BRD
GPU2  SYS   BRD   X
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("WriteTable() mismatch (-want +got):\n%s", diff)
	}
}

func TestLinkLabels(t *testing.T) {
	for _, tc := range []struct {
		l    gpu.Link
		want string
	}{
		{gpu.Link{Path: gpu.PathSwitch}, "PIX"},
		{gpu.Link{Path: gpu.PathSwitches}, "PXB"},
		{gpu.Link{Path: gpu.PathHostBridge}, "PHB"},
		{gpu.Link{Path: gpu.PathNUMANode}, "NODE"},
		{gpu.Link{Path: gpu.PathSystem}, "SYS"},
		{gpu.Link{Path: gpu.PathBoard}, "BRD"},
		{gpu.Link{}, "?"},
		{gpu.Link{Path: gpu.PathSystem, NVLinks: 4}, "NV4"},
	} {
		if got := tc.l.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.l, got, tc.want)
		}
	}
	if !(gpu.PathBoard < gpu.PathSwitch && gpu.PathSwitch < gpu.PathSwitches && gpu.PathSwitches < gpu.PathHostBridge &&
		gpu.PathHostBridge < gpu.PathNUMANode && gpu.PathNUMANode < gpu.PathSystem) {
		t.Errorf("paths are not ordered from closest to farthest")
	}
}

// TestWriteTableRemoteOutOfRange: an NVLink whose Remote is none of the
// constants (a Host is a plain value a caller may fill or decode) counts as
// one to an unknown device; WriteTable indexed its counts with it and
// panicked.
func TestWriteTableRemoteOutOfRange(t *testing.T) {
	for _, r := range []gpu.Remote{-1, gpu.RemoteCPU + 1, 1 << 20} {
		h := handHost("lab")
		h.Devices[0].NVLinks = []gpu.NVLink{{Port: 0, Active: true, Remote: r, Peer: -1}, {Port: 1, Active: true, Remote: gpu.RemoteGPU, Peer: -1}}
		var b strings.Builder
		if err := h.WriteTable(&b); err != nil {
			t.Fatalf("Remote %d: WriteTable() error = %v", r, err)
		}
		if !strings.Contains(b.String(), "1 to gpu, 1 to unknown") {
			t.Errorf("Remote %d: WriteTable() =\n%s\nwant device 0 with \"1 to gpu, 1 to unknown\"", r, b.String())
		}
	}
}

// TestNilHost: a nil *Host has no devices, servers or links (its methods,
// and Targets, dereferenced nil), and WriteTable says there is no host.
func TestNilHost(t *testing.T) {
	var h *gpu.Host
	if types, count := h.Capacity(); types != nil || count != nil {
		t.Errorf("Capacity on nil = %v, %v", types, count)
	}
	if s := h.Servers(); len(s) != 0 {
		t.Errorf("Servers on nil = %v", s)
	}
	if l, ok := h.Link(0, 1); ok {
		t.Errorf("Link on nil = %v, true", l)
	}
	if ts := gpu.Targets(nil); ts != nil {
		t.Errorf("Targets(nil) = %v", ts)
	}
	var b strings.Builder
	if err := h.WriteTable(&b); !errors.Is(err, gpu.ErrNoHosts) {
		t.Errorf("WriteTable on nil: error %v, want ErrNoHosts", err)
	}
}
