//go:build cgo

package nvmlmock

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Host describes a mocked machine.
type Host struct {
	Driver string // SystemGetDriverVersion's answer
	GPUs   []GPU  // in NVML index order
	// Path gives GetTopologyCommonAncestor's answer for devices a < b; nil
	// answers TOPOLOGY_SYSTEM for every pair.
	Path func(a, b int) nvml.GpuTopologyLevel
	// NoSwitchP2P makes GetP2PStatus report NVLink peer-to-peer as
	// unsupported, as a driver does when the NVSwitch fabric manager is not
	// running.
	NoSwitchP2P bool
}

// GPU describes one mocked device.
type GPU struct {
	Name         string
	UUID         string
	BusID        string // e.g. "0000:07:00.0"; NVML reports it with an 8-digit domain
	MemoryBytes  uint64
	Major, Minor int // CUDA compute capability
	NUMANode     int // -1 makes GetNumaNodeId answer ERROR_NOT_SUPPORTED
	// MIGSupported false makes GetMigMode answer ERROR_NOT_SUPPORTED.
	MIGSupported, MIGEnabled, MIGPending bool
	MIGSlots                             int      // GetMaxMigDeviceCount's answer
	MIGDevices                           []MIGDev // occupied slots
	// NVLinks lists the ports; GetNvLinkState answers ERROR_NOT_SUPPORTED
	// past the last one (a GPU without NVLink has none).
	NVLinks []Port
}

// MIGDev is one MIG device in slot Slot.
type MIGDev struct {
	Slot        int
	UUID        string
	MemoryBytes uint64
}

// Port is one NVLink port. An active port leads to GPU Peer, or to an
// NVSwitch when Switch is set (Peer is then ignored).
type Port struct {
	Active bool
	Switch bool
	Peer   int
}

// New returns a mock NVML library serving h, and its devices so a test can
// replace any answer (for example to inject an error). Every call the probe
// makes is answered; calls it does not make panic, as go-nvml's mocks do.
func New(h Host) (*mock.Interface, []*mock.Device) {
	devs := make([]*mock.Device, len(h.GPUs))
	handles := make([]nvml.Device, len(h.GPUs))
	for i := range devs {
		devs[i] = &mock.Device{}
		handles[i] = devs[i]
	}
	for i, g := range h.GPUs {
		d := devs[i]
		d.GetIndexFunc = func() (int, nvml.Return) { return i, nvml.SUCCESS }
		d.GetUUIDFunc = func() (string, nvml.Return) { return g.UUID, nvml.SUCCESS }
		d.GetNameFunc = func() (string, nvml.Return) { return g.Name, nvml.SUCCESS }
		d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: g.MemoryBytes, Free: g.MemoryBytes}, nvml.SUCCESS
		}
		d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) { return g.Major, g.Minor, nvml.SUCCESS }
		d.GetMigModeFunc = func() (int, int, nvml.Return) {
			if !g.MIGSupported {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			return mode(g.MIGEnabled), mode(g.MIGPending), nvml.SUCCESS
		}
		d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return g.MIGSlots, nvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
			for _, m := range g.MIGDevices {
				if m.Slot == n {
					return migDevice(m), nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_NOT_FOUND
		}
		setTopology(&d.GetPciInfoFunc, d, h, i, g.BusID, g.NUMANode, g.NVLinks, handles)
	}
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return h.Driver, nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(n int) (nvml.Device, nvml.Return) {
			if n < 0 || n >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[n], nvml.SUCCESS
		},
	}
	return lib, devs
}

func mode(on bool) int {
	if on {
		return nvml.DEVICE_MIG_ENABLE
	}
	return nvml.DEVICE_MIG_DISABLE
}

func migDevice(m MIGDev) *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return m.UUID, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: m.MemoryBytes, Free: m.MemoryBytes}, nvml.SUCCESS
		},
		IsMigDeviceHandleFunc: func() (bool, nvml.Return) { return true, nvml.SUCCESS },
	}
}

// switchBusID is the invented PCI bus id of NVSwitch s.
func switchBusID(s int) string { return fmt.Sprintf("0000:%02x:00.0", 0xc0+s) }

// pciInfo returns NVML's PciInfo for a bus id such as "0000:07:00.0",
// printed with NVML's 8-digit domain.
func pciInfo(busID string) nvml.PciInfo {
	var p nvml.PciInfo
	var dom, bus, dev, fn uint32
	if _, err := fmt.Sscanf(busID, "%x:%x:%x.%x", &dom, &bus, &dev, &fn); err == nil {
		p.Domain, p.Bus, p.Device = dom, bus, dev
	}
	copy(p.BusId[:], fmt.Sprintf("0000%s", busID))
	copy(p.BusIdLegacy[:], busID)
	return p
}

// setTopology installs on d the PCI, NUMA, NVLink, common-ancestor and P2P
// answers for device i of h. pciFunc is d's GetPciInfoFunc field.
func setTopology(pciFunc *func() (nvml.PciInfo, nvml.Return), d *mock.Device, h Host, i int, busID string, numa int, ports []Port, handles []nvml.Device) {
	index := func(other nvml.Device) int {
		for j, x := range handles {
			if x == other {
				return j
			}
		}
		return -1
	}
	busOf := func(j int) string {
		if j < len(h.GPUs) {
			return h.GPUs[j].BusID
		}
		return ""
	}
	*pciFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(busID), nvml.SUCCESS }
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		if numa < 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return numa, nvml.SUCCESS
	}
	port := func(n int) (Port, nvml.Return) {
		if n < 0 || n >= len(ports) {
			return Port{}, nvml.ERROR_NOT_SUPPORTED
		}
		return ports[n], nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(n int) (nvml.EnableState, nvml.Return) {
		p, ret := port(n)
		if ret != nvml.SUCCESS {
			return 0, ret
		}
		if p.Active {
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_DISABLED, nvml.SUCCESS
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(n int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		p, ret := port(n)
		switch {
		case ret != nvml.SUCCESS:
			return 0, ret
		case p.Switch:
			return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
		}
		return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
	}
	d.GetNvLinkRemotePciInfoFunc = func(n int) (nvml.PciInfo, nvml.Return) {
		p, ret := port(n)
		switch {
		case ret != nvml.SUCCESS:
			return nvml.PciInfo{}, ret
		case p.Switch:
			return pciInfo(switchBusID(n / 2)), nvml.SUCCESS
		}
		return pciInfo(busOf(p.Peer)), nvml.SUCCESS
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		j := index(other)
		if j < 0 || j == i {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if h.Path == nil {
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		return h.Path(min(i, j), max(i, j)), nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(other nvml.Device, caps nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		j := index(other)
		if j < 0 || j == i {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if caps != nvml.P2P_CAPS_INDEX_NVLINK {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		for _, p := range ports {
			if p.Active && !p.Switch && p.Peer == j {
				return nvml.P2P_STATUS_OK, nvml.SUCCESS
			}
		}
		if h.NoSwitchP2P || !reachesSwitch(ports) || j >= len(h.GPUs) || !reachesSwitch(h.GPUs[j].NVLinks) {
			return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_OK, nvml.SUCCESS
	}
}

func reachesSwitch(ports []Port) bool {
	for _, p := range ports {
		if p.Active && p.Switch {
			return true
		}
	}
	return false
}
