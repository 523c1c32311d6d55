package gpu

import (
	"fmt"
	"strings"

	"github.com/gpufair/gpufair/topology"
)

// Host is what a probe found on one machine: its devices in NVML index order
// and the link between every pair of them. A Host is a plain value; callers
// may set Name and Rack before turning it into servers.
type Host struct {
	Name    string   // host name, used to name its servers
	Rack    string   // copied to every server; empty means a rack of its own
	Driver  string   // NVIDIA driver version as NVML reports it
	Devices []Device // Devices[i].Index == i
	Links   []Link   // one per pair A < B, ordered by A then B
}

// Device is one physical GPU.
type Device struct {
	Index             int              // NVML index (the order CUDA uses with CUDA_DEVICE_ORDER=PCI_BUS_ID)
	UUID              string           // "GPU-…"; what CUDA_VISIBLE_DEVICES accepts
	Name              string           // product name as NVML reports it, e.g. "NVIDIA A100-SXM4-40GB"
	Type              topology.GPUType // Name mapped through the probe's TypeTable
	MemoryBytes       uint64           // total framebuffer memory
	ComputeCapability ComputeCapability
	PCIBusID          string // normalised by NormalizeBusID, e.g. "0000:07:00.0"
	NUMANode          int    // NUMA node of the GPU's PCIe root; -1 when NVML does not know
	MIG               MIG
	NVLinks           []NVLink // the device's NVLink ports, by port number; empty for PCIe-only GPUs
}

// ComputeCapability is a CUDA compute capability such as 8.0.
type ComputeCapability struct{ Major, Minor int }

// String returns the capability as major.minor, such as "8.0".
func (c ComputeCapability) String() string { return fmt.Sprintf("%d.%d", c.Major, c.Minor) }

// MIG is a device's Multi-Instance GPU state.
type MIG struct {
	Supported bool          // NVML answered the MIG mode query; false on GPUs without MIG
	Enabled   bool          // current mode
	Pending   bool          // mode after the next GPU reset
	Instances []MIGInstance // MIG devices present, when Enabled
}

// MIGInstance is one MIG device carved out of a GPU.
type MIGInstance struct {
	Slot        int    // index passed to NVML's GetMigDeviceHandleByIndex
	UUID        string // "MIG-…"; what CUDA_VISIBLE_DEVICES accepts
	MemoryBytes uint64
}

// Remote is the kind of device at the far end of an NVLink port.
type Remote int

// The remote kinds NVML distinguishes.
const (
	RemoteUnknown Remote = iota // not queried (inactive port) or unknown to NVML
	RemoteGPU                   // a GPU, directly
	RemoteSwitch                // an NVSwitch
	RemoteCPU                   // an IBM NPU (POWER9 CPU with NVLink)
)

// String returns the kind of the link's far end.
func (r Remote) String() string {
	switch r {
	case RemoteGPU:
		return "gpu"
	case RemoteSwitch:
		return "nvswitch"
	case RemoteCPU:
		return "cpu"
	}
	return "unknown"
}

// NVLink is one NVLink port of a device.
type NVLink struct {
	Port        int    // NVML link number
	Active      bool   // NVML reports the link enabled
	Remote      Remote // set for active ports only
	RemoteBusID string // PCI bus id of the far end (normalised); set for active ports only
	Peer        int    // index on this host of the GPU at the far end; -1 when the far end is not a GPU of this host
}

// Path is the closest common ancestor of two GPUs in the PCIe tree, as NVML's
// GetTopologyCommonAncestor reports it. Known paths are ordered from closest
// to farthest, so a < b means a is the closer path. The zero value is
// PathUnknown.
type Path int

// Paths, named after the abbreviations nvidia-smi topo -m prints.
const (
	PathUnknown    Path = iota // NVML could not tell
	PathBoard                  // same board (a dual-GPU card such as the K80): NVML's TOPOLOGY_INTERNAL
	PathSwitch                 // one PCIe switch (PIX): TOPOLOGY_SINGLE
	PathSwitches               // several PCIe switches, no host bridge (PXB): TOPOLOGY_MULTIPLE
	PathHostBridge             // a PCIe host bridge (PHB): TOPOLOGY_HOSTBRIDGE
	PathNUMANode               // host bridges within one NUMA node or CPU socket (NODE): TOPOLOGY_NODE
	PathSystem                 // across CPU sockets, over the SMP interconnect (SYS): TOPOLOGY_SYSTEM
)

// String returns the path's name.
func (p Path) String() string {
	switch p {
	case PathBoard:
		return "BRD"
	case PathSwitch:
		return "PIX"
	case PathSwitches:
		return "PXB"
	case PathHostBridge:
		return "PHB"
	case PathNUMANode:
		return "NODE"
	case PathSystem:
		return "SYS"
	}
	return "?"
}

// Link is how two GPUs of a host reach each other.
//
// NVLinks counts the active NVLinks that join them: for direct links, the
// ports of A whose far end is B; through NVSwitches, the smaller of A's and
// B's active switch ports, provided NVML reports NVLink peer-to-peer between
// them as working (nvidia-smi prints both as NV<n>). Path is the PCIe path,
// which traffic takes when NVLinks is 0.
type Link struct {
	A, B     int // device indices, A < B
	Path     Path
	NVLinks  int
	NVSwitch bool // the NVLinks go through NVSwitches
}

// String returns the nvidia-smi topo -m label of the link: NV<n> when the
// GPUs share NVLinks, else the PCIe path.
func (l Link) String() string {
	if l.NVLinks > 0 {
		return fmt.Sprintf("NV%d", l.NVLinks)
	}
	return l.Path.String()
}

// Link returns the link between devices a and b, in either order; false
// when there is none (a nil h has none).
func (h *Host) Link(a, b int) (Link, bool) {
	if h == nil {
		return Link{}, false
	}
	if a > b {
		a, b = b, a
	}
	for _, l := range h.Links {
		if l.A == a && l.B == b {
			return l, true
		}
	}
	return Link{}, false
}

// Schedulable reports whether d can run a whole-GPU job: its MIG mode is
// off. CUDA shows a MIG-enabled GPU only through its MIG instances, so a job
// given the GPU's UUID would find no device.
func (d *Device) Schedulable() bool { return !d.MIG.Enabled }

// Servers describes the host as topology servers: one server per GPU type,
// because a topology.Server holds GPUs of a single type. A host with one GPU
// type gives one server named h.Name; a host with several gives one server per
// type named h.Name + "/" + type, in order of the type's lowest device index.
// Only schedulable devices (MIG off) are counted; a host with none, or a nil
// h, gives no servers.
func (h *Host) Servers() []topology.Server {
	types, count := h.Capacity()
	out := make([]topology.Server, len(types))
	for k, t := range types {
		name := h.Name
		if len(types) > 1 {
			name = h.Name + "/" + string(t)
		}
		out[k] = topology.Server{Name: name, Rack: h.Rack, Type: t, GPUs: count[k]}
	}
	return out
}

// Capacity returns the number of schedulable GPUs of each type on the host,
// with the types in order of their lowest device index; none for a nil h.
func (h *Host) Capacity() (types []topology.GPUType, count []int) {
	if h == nil {
		return nil, nil
	}
	idx := map[topology.GPUType]int{}
	for i := range h.Devices {
		d := &h.Devices[i]
		if !d.Schedulable() {
			continue
		}
		k, ok := idx[d.Type]
		if !ok {
			k = len(types)
			idx[d.Type] = k
			types = append(types, d.Type)
			count = append(count, 0)
		}
		count[k]++
	}
	return types, count
}

// NormalizeBusID returns a PCI bus id in the Linux sysfs form
// "dddd:bb:dd.f", lower case. NVML prints the domain with eight hex digits
// ("00000000:07:00.0"); leading zeros beyond four are dropped so ids from
// different NVML calls compare equal. Other strings are returned lower-cased.
func NormalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	dom, rest, ok := strings.Cut(id, ":")
	if !ok || !strings.Contains(rest, ":") {
		return id
	}
	for len(dom) > 4 && dom[0] == '0' {
		dom = dom[1:]
	}
	for len(dom) < 4 {
		dom = "0" + dom
	}
	return dom + ":" + rest
}
