//go:build cgo

package gpu

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ProbeLocal probes this machine's GPUs through the NVIDIA driver's NVML
// library (libnvidia-ml.so, loaded with dlopen). Without a driver it returns
// an error wrapping ErrNoDriver and NVML's ERROR_LIBRARY_NOT_FOUND or
// ERROR_DRIVER_NOT_LOADED.
func ProbeLocal(s *Settings) (*Host, error) {
	return Probe(nvml.New(), s)
}

// Probe initialises lib, reads every device and every pair of devices, and
// shuts lib down. Any NVML interface works, such as nvml.New() for the real
// library or a mock from github.com/NVIDIA/go-nvml/pkg/nvml/mock.
//
// NVML calls are made on the Interface (Init, Shutdown, SystemGetDriverVersion,
// DeviceGetCount, DeviceGetHandleByIndex) and on each Device (GetUUID, GetName,
// GetMemoryInfo, GetCudaComputeCapability, GetPciInfo, GetNumaNodeId,
// GetMigMode, GetMaxMigDeviceCount, GetMigDeviceHandleByIndex, GetNvLinkState,
// GetNvLinkRemoteDeviceType, GetNvLinkRemotePciInfo, GetTopologyCommonAncestor,
// GetP2PStatus). A query a device does not support (ERROR_NOT_SUPPORTED, or
// ERROR_FUNCTION_NOT_FOUND from an older driver) leaves its field at the
// documented "unknown" value; any other failure stops the probe with a
// *CallError naming the device and the call, and so does a call that
// succeeds with a nil device handle. If lib is nil (a nil pointer in the
// interface too), or Init fails because there is no driver, the error wraps
// ErrNoDriver.
func Probe(lib nvml.Interface, s *Settings) (h *Host, err error) {
	if v := reflect.ValueOf(lib); lib == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("%w: nil nvml.Interface", ErrNoDriver)
	}
	set := s.withDefaults()
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, fmt.Errorf("%w: nvml.Init: %w", ErrNoDriver, ret)
	default:
		return nil, callErr("Init", -1, -1, -1, ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			h, err = nil, callErr("Shutdown", -1, -1, -1, ret)
		}
	}()

	h = &Host{Name: set.Name, Rack: set.Rack}
	var ret nvml.Return
	if h.Driver, ret = lib.SystemGetDriverVersion(); ret != nvml.SUCCESS && !unsupported(ret) {
		return nil, callErr("SystemGetDriverVersion", -1, -1, -1, ret)
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, callErr("DeviceGetCount", -1, -1, -1, ret)
	}
	if n < 0 || n > maxDevices {
		return nil, outOfRange("DeviceGetCount", -1, n, maxDevices)
	}
	devs := make([]nvml.Device, n)
	h.Devices = make([]Device, n)
	for i := range n {
		if devs[i], ret = lib.DeviceGetHandleByIndex(i); ret != nvml.SUCCESS {
			return nil, callErr("DeviceGetHandleByIndex", i, -1, -1, ret)
		}
		if devs[i] == nil {
			return nil, nilHandle("DeviceGetHandleByIndex", i)
		}
		if err := readDevice(devs[i], i, set.Types, &h.Devices[i]); err != nil {
			return nil, err
		}
	}
	resolvePeers(h.Devices)
	for a := range n {
		for b := a + 1; b < n; b++ {
			l, err := readLink(devs, h.Devices, a, b)
			if err != nil {
				return nil, err
			}
			h.Links = append(h.Links, l)
		}
	}
	return h, nil
}

// unsupported reports whether ret says the query is not available on this
// device or driver, as opposed to failing.
func unsupported(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND
}

// Bounds on the counts NVML answers, far above any machine's (servers hold
// up to 16 GPUs, and a GPU up to 7 MIG devices), so that a broken or mocked
// library cannot make the probe allocate or loop without end: it reads every
// pair of devices.
const (
	maxDevices  = 256
	maxMIGSlots = 64
)

// outOfRange is the error for a count NVML answered outside [0, max].
func outOfRange(call string, dev, n, max int) error {
	return &CallError{Call: call, Device: dev, Peer: -1, Port: -1, Err: fmt.Errorf("answered %d, outside 0 to %d", n, max)}
}

// nilHandle is the error for a call that answered SUCCESS with a nil handle,
// which the probe would call methods on.
func nilHandle(call string, dev int) error {
	return &CallError{Call: call, Device: dev, Peer: -1, Port: -1, Err: errors.New("answered a nil handle")}
}

func callErr(call string, dev, peer, port int, ret nvml.Return) error {
	return &CallError{Call: call, Device: dev, Peer: peer, Port: port, Err: ret}
}

func readDevice(dev nvml.Device, i int, types TypeTable, d *Device) error {
	var ret nvml.Return
	d.Index = i
	if d.UUID, ret = dev.GetUUID(); ret != nvml.SUCCESS {
		return callErr("GetUUID", i, -1, -1, ret)
	}
	if d.Name, ret = dev.GetName(); ret != nvml.SUCCESS {
		return callErr("GetName", i, -1, -1, ret)
	}
	d.Type = types.Lookup(d.Name)
	mem, ret := dev.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return callErr("GetMemoryInfo", i, -1, -1, ret)
	}
	d.MemoryBytes = mem.Total
	major, minor, ret := dev.GetCudaComputeCapability()
	if ret != nvml.SUCCESS {
		return callErr("GetCudaComputeCapability", i, -1, -1, ret)
	}
	d.ComputeCapability = ComputeCapability{major, minor}
	pci, ret := dev.GetPciInfo()
	if ret != nvml.SUCCESS {
		return callErr("GetPciInfo", i, -1, -1, ret)
	}
	d.PCIBusID = busID(pci)
	d.NUMANode = -1
	if node, ret := dev.GetNumaNodeId(); ret == nvml.SUCCESS {
		d.NUMANode = node
	} else if !unsupported(ret) {
		return callErr("GetNumaNodeId", i, -1, -1, ret)
	}
	if err := readMIG(dev, i, &d.MIG); err != nil {
		return err
	}
	return readNVLinks(dev, i, d)
}

func readMIG(dev nvml.Device, i int, m *MIG) error {
	cur, pend, ret := dev.GetMigMode()
	if unsupported(ret) {
		return nil
	}
	if ret != nvml.SUCCESS {
		return callErr("GetMigMode", i, -1, -1, ret)
	}
	m.Supported = true
	m.Enabled = cur == nvml.DEVICE_MIG_ENABLE
	m.Pending = pend == nvml.DEVICE_MIG_ENABLE
	if !m.Enabled {
		return nil
	}
	slots, ret := dev.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return callErr("GetMaxMigDeviceCount", i, -1, -1, ret)
	}
	if slots < 0 || slots > maxMIGSlots {
		return outOfRange("GetMaxMigDeviceCount", i, slots, maxMIGSlots)
	}
	for k := range slots {
		mig, ret := dev.GetMigDeviceHandleByIndex(k)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // empty slot
		}
		if ret != nvml.SUCCESS {
			return callErr("GetMigDeviceHandleByIndex", i, -1, -1, ret)
		}
		if mig == nil {
			return nilHandle("GetMigDeviceHandleByIndex", i)
		}
		inst := MIGInstance{Slot: k}
		if inst.UUID, ret = mig.GetUUID(); ret != nvml.SUCCESS {
			return callErr("GetUUID (MIG device)", i, -1, -1, ret)
		}
		mem, ret := mig.GetMemoryInfo()
		if ret != nvml.SUCCESS {
			return callErr("GetMemoryInfo (MIG device)", i, -1, -1, ret)
		}
		inst.MemoryBytes = mem.Total
		m.Instances = append(m.Instances, inst)
	}
	return nil
}

// readNVLinks reads ports 0 to NVLINK_MAX_LINKS-1. A port that does not
// exist answers ERROR_NOT_SUPPORTED or ERROR_INVALID_ARGUMENT and is left
// out; a GPU without NVLink has no ports.
func readNVLinks(dev nvml.Device, i int, d *Device) error {
	for p := range nvml.NVLINK_MAX_LINKS {
		state, ret := dev.GetNvLinkState(p)
		if unsupported(ret) || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return callErr("GetNvLinkState", i, -1, p, ret)
		}
		l := NVLink{Port: p, Active: state == nvml.FEATURE_ENABLED, Peer: -1}
		if l.Active {
			kind, ret := dev.GetNvLinkRemoteDeviceType(p)
			switch {
			case ret == nvml.SUCCESS:
				l.Remote = remoteKind(kind)
			case !unsupported(ret):
				return callErr("GetNvLinkRemoteDeviceType", i, -1, p, ret)
			}
			pci, ret := dev.GetNvLinkRemotePciInfo(p)
			if ret != nvml.SUCCESS {
				return callErr("GetNvLinkRemotePciInfo", i, -1, p, ret)
			}
			l.RemoteBusID = busID(pci)
		}
		d.NVLinks = append(d.NVLinks, l)
	}
	return nil
}

func remoteKind(k nvml.IntNvLinkDeviceType) Remote {
	switch k {
	case nvml.NVLINK_DEVICE_TYPE_GPU:
		return RemoteGPU
	case nvml.NVLINK_DEVICE_TYPE_SWITCH:
		return RemoteSwitch
	case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
		return RemoteCPU
	}
	return RemoteUnknown
}

// resolvePeers sets Peer on every active port whose far end has the bus id of
// a device of this host. Drivers older than NVML's remote-type query report
// RemoteUnknown; a far end that is a GPU of the host is then known to be one.
func resolvePeers(ds []Device) {
	byBus := make(map[string]int, len(ds))
	for i := range ds {
		if ds[i].PCIBusID != "" {
			byBus[ds[i].PCIBusID] = i
		}
	}
	for i := range ds {
		for k := range ds[i].NVLinks {
			l := &ds[i].NVLinks[k]
			if !l.Active || l.Remote == RemoteSwitch || l.Remote == RemoteCPU {
				continue
			}
			if j, ok := byBus[l.RemoteBusID]; ok && j != i {
				l.Peer = j
				l.Remote = RemoteGPU
			}
		}
	}
}

func readLink(devs []nvml.Device, ds []Device, a, b int) (Link, error) {
	l := Link{A: a, B: b}
	level, ret := devs[a].GetTopologyCommonAncestor(devs[b])
	switch {
	case ret == nvml.SUCCESS:
		l.Path = pathOf(level)
	case !unsupported(ret):
		return l, callErr("GetTopologyCommonAncestor", a, b, -1, ret)
	}
	for _, p := range ds[a].NVLinks {
		if p.Active && p.Peer == b {
			l.NVLinks++
		}
	}
	if l.NVLinks > 0 {
		return l, nil
	}
	sa, sb := switchPorts(&ds[a]), switchPorts(&ds[b])
	if sa == 0 || sb == 0 {
		return l, nil
	}
	// Both GPUs reach NVSwitches; they share a fabric only if the driver
	// (and, on NVSwitch systems, the fabric manager) enabled NVLink P2P.
	st, ret := devs[a].GetP2PStatus(devs[b], nvml.P2P_CAPS_INDEX_NVLINK)
	switch {
	case unsupported(ret):
		return l, nil
	case ret != nvml.SUCCESS:
		return l, callErr("GetP2PStatus", a, b, -1, ret)
	case st == nvml.P2P_STATUS_OK:
		l.NVLinks, l.NVSwitch = min(sa, sb), true
	}
	return l, nil
}

func switchPorts(d *Device) int {
	n := 0
	for _, p := range d.NVLinks {
		if p.Active && p.Remote == RemoteSwitch {
			n++
		}
	}
	return n
}

func pathOf(level nvml.GpuTopologyLevel) Path {
	switch level {
	case nvml.TOPOLOGY_INTERNAL:
		return PathBoard
	case nvml.TOPOLOGY_SINGLE:
		return PathSwitch
	case nvml.TOPOLOGY_MULTIPLE:
		return PathSwitches
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return PathHostBridge
	case nvml.TOPOLOGY_NODE:
		return PathNUMANode
	case nvml.TOPOLOGY_SYSTEM:
		return PathSystem
	}
	return PathUnknown
}

// busID returns the normalised bus id of pci, preferring the full BusId and
// falling back to the legacy field, then to the numeric fields.
func busID(pci nvml.PciInfo) string {
	if s := cString(pci.BusId[:]); s != "" {
		return NormalizeBusID(s)
	}
	if s := cString(pci.BusIdLegacy[:]); s != "" {
		return NormalizeBusID(s)
	}
	if pci.Domain == 0 && pci.Bus == 0 && pci.Device == 0 {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", pci.Domain, pci.Bus, pci.Device)
}

func cString[T ~uint8 | ~int8](b []T) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
