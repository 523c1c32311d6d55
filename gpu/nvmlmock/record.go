//go:build cgo

package nvmlmock

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Transcript is what an NVML library answered, call by call: a probe of a
// real machine recorded with Record, kept as a test fixture and answered
// again by Replay. It covers the calls gpu.Probe makes.
type Transcript struct {
	Calls []Call `json:"calls"`
}

// Call is one NVML call and its answer. Name is the call with its receiver
// and arguments, such as "DeviceGetCount()", "dev0.GetNvLinkState(3)" or
// "dev0.GetTopologyCommonAncestor(dev1)"; devN is the device of NVML index N
// and devN.migK the MIG device in its slot K.
type Call struct {
	Name   string          `json:"call"`
	Return nvml.Return     `json:"return"`          // nvml.SUCCESS is 0
	Error  string          `json:"error,omitempty"` // the Return's text, where it is not SUCCESS
	Value  json.RawMessage `json:"value,omitempty"` // the values returned, where it is SUCCESS
}

// Recorder wraps an NVML library and notes every call the probe makes on it,
// with the answer, so a real machine's answers can be replayed in tests.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

// Record returns lib wrapped so that every call gpu.Probe makes on it, and on
// the devices it hands out, is noted in the returned Recorder before it is
// answered. Calls the probe does not make pass through unrecorded.
func Record(lib nvml.Interface) (nvml.Interface, *Recorder) {
	r := &Recorder{}
	return recLib{Interface: lib, r: r}, r
}

// Transcript returns the calls noted so far, in the order they were made.
func (r *Recorder) Transcript() Transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Transcript{Calls: append([]Call(nil), r.calls...)}
}

func (r *Recorder) note(name string, ret nvml.Return, value any) {
	c := Call{Name: name, Return: ret}
	if ret == nvml.SUCCESS {
		if value != nil {
			b, err := json.Marshal(value)
			if err != nil {
				// Only the plain values below are marshalled; a failure is a
				// bug here, and the transcript says so rather than lying.
				b, _ = json.Marshal(err.Error())
			}
			c.Value = b
		}
	} else {
		c.Error = ret.Error()
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

type recLib struct {
	nvml.Interface
	r *Recorder
}

func (l recLib) Init() nvml.Return {
	ret := l.Interface.Init()
	l.r.note("Init()", ret, nil)
	return ret
}

func (l recLib) Shutdown() nvml.Return {
	ret := l.Interface.Shutdown()
	l.r.note("Shutdown()", ret, nil)
	return ret
}

func (l recLib) SystemGetDriverVersion() (string, nvml.Return) {
	v, ret := l.Interface.SystemGetDriverVersion()
	l.r.note("SystemGetDriverVersion()", ret, v)
	return v, ret
}

func (l recLib) DeviceGetCount() (int, nvml.Return) {
	n, ret := l.Interface.DeviceGetCount()
	l.r.note("DeviceGetCount()", ret, n)
	return n, ret
}

func (l recLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	d, ret := l.Interface.DeviceGetHandleByIndex(i)
	l.r.note(fmt.Sprintf("DeviceGetHandleByIndex(%d)", i), ret, nil)
	if ret != nvml.SUCCESS {
		return d, ret
	}
	return recDevice{Device: d, name: fmt.Sprintf("dev%d", i), r: l.r}, ret
}

// recDevice is a device handed out by a recLib; name is its receiver in the
// transcript.
type recDevice struct {
	nvml.Device
	name string
	r    *Recorder
}

func (d recDevice) note(call string, ret nvml.Return, value any) {
	d.r.note(d.name+"."+call, ret, value)
}

// unwrap returns the library's own device behind other, which the library
// needs as an argument, and other's name in the transcript.
func unwrap(other nvml.Device) (nvml.Device, string) {
	if o, ok := other.(recDevice); ok {
		return o.Device, o.name
	}
	return other, "?"
}

func (d recDevice) GetUUID() (string, nvml.Return) {
	v, ret := d.Device.GetUUID()
	d.note("GetUUID()", ret, v)
	return v, ret
}

func (d recDevice) GetName() (string, nvml.Return) {
	v, ret := d.Device.GetName()
	d.note("GetName()", ret, v)
	return v, ret
}

func (d recDevice) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	v, ret := d.Device.GetMemoryInfo()
	d.note("GetMemoryInfo()", ret, memoryJSON{Total: v.Total, Free: v.Free, Used: v.Used})
	return v, ret
}

func (d recDevice) GetCudaComputeCapability() (int, int, nvml.Return) {
	major, minor, ret := d.Device.GetCudaComputeCapability()
	d.note("GetCudaComputeCapability()", ret, [2]int{major, minor})
	return major, minor, ret
}

func (d recDevice) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	v, ret := d.Device.GetPciInfo()
	d.note("GetPciInfo()", ret, pciToJSON(v))
	return v, ret
}

func (d recDevice) GetNumaNodeId() (int, nvml.Return) {
	v, ret := d.Device.GetNumaNodeId()
	d.note("GetNumaNodeId()", ret, v)
	return v, ret
}

func (d recDevice) GetMigMode() (int, int, nvml.Return) {
	cur, pend, ret := d.Device.GetMigMode()
	d.note("GetMigMode()", ret, [2]int{cur, pend})
	return cur, pend, ret
}

func (d recDevice) GetMaxMigDeviceCount() (int, nvml.Return) {
	v, ret := d.Device.GetMaxMigDeviceCount()
	d.note("GetMaxMigDeviceCount()", ret, v)
	return v, ret
}

func (d recDevice) GetMigDeviceHandleByIndex(k int) (nvml.Device, nvml.Return) {
	m, ret := d.Device.GetMigDeviceHandleByIndex(k)
	name := fmt.Sprintf("%s.mig%d", d.name, k)
	d.note(fmt.Sprintf("GetMigDeviceHandleByIndex(%d)", k), ret, name)
	if ret != nvml.SUCCESS {
		return m, ret
	}
	return recDevice{Device: m, name: name, r: d.r}, ret
}

func (d recDevice) GetNvLinkState(p int) (nvml.EnableState, nvml.Return) {
	v, ret := d.Device.GetNvLinkState(p)
	d.note(fmt.Sprintf("GetNvLinkState(%d)", p), ret, v)
	return v, ret
}

func (d recDevice) GetNvLinkRemoteDeviceType(p int) (nvml.IntNvLinkDeviceType, nvml.Return) {
	v, ret := d.Device.GetNvLinkRemoteDeviceType(p)
	d.note(fmt.Sprintf("GetNvLinkRemoteDeviceType(%d)", p), ret, v)
	return v, ret
}

func (d recDevice) GetNvLinkRemotePciInfo(p int) (nvml.PciInfo, nvml.Return) {
	v, ret := d.Device.GetNvLinkRemotePciInfo(p)
	d.note(fmt.Sprintf("GetNvLinkRemotePciInfo(%d)", p), ret, pciToJSON(v))
	return v, ret
}

func (d recDevice) GetTopologyCommonAncestor(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	o, name := unwrap(other)
	v, ret := d.Device.GetTopologyCommonAncestor(o)
	d.note(fmt.Sprintf("GetTopologyCommonAncestor(%s)", name), ret, v)
	return v, ret
}

func (d recDevice) GetP2PStatus(other nvml.Device, caps nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
	o, name := unwrap(other)
	v, ret := d.Device.GetP2PStatus(o, caps)
	d.note(fmt.Sprintf("GetP2PStatus(%s,%d)", name, caps), ret, v)
	return v, ret
}

type memoryJSON struct {
	Total uint64 `json:"total"`
	Free  uint64 `json:"free"`
	Used  uint64 `json:"used"`
}

// pciJSON is nvml.PciInfo with its C strings as strings, so that a
// transcript reads as nvidia-smi prints them.
type pciJSON struct {
	BusID          string `json:"bus_id"`
	BusIDLegacy    string `json:"bus_id_legacy"`
	Domain         uint32 `json:"domain"`
	Bus            uint32 `json:"bus"`
	Device         uint32 `json:"device"`
	PciDeviceID    uint32 `json:"pci_device_id"`
	PciSubSystemID uint32 `json:"pci_sub_system_id"`
}

func pciToJSON(p nvml.PciInfo) pciJSON {
	return pciJSON{
		BusID: cString(p.BusId[:]), BusIDLegacy: cString(p.BusIdLegacy[:]),
		Domain: p.Domain, Bus: p.Bus, Device: p.Device,
		PciDeviceID: p.PciDeviceId, PciSubSystemID: p.PciSubSystemId,
	}
}

func (j pciJSON) info() nvml.PciInfo {
	p := nvml.PciInfo{Domain: j.Domain, Bus: j.Bus, Device: j.Device, PciDeviceId: j.PciDeviceID, PciSubSystemId: j.PciSubSystemID}
	copy(p.BusId[:len(p.BusId)-1], j.BusID)
	copy(p.BusIdLegacy[:len(p.BusIdLegacy)-1], j.BusIDLegacy)
	return p
}

func cString(b []uint8) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// Replay returns a mock NVML library that answers each call with the answer
// t recorded for it. A call t does not hold is answered ERROR_UNKNOWN, so a
// probe that asks what the recorded one did not fails with a *gpu.CallError
// naming the call, rather than reading an invented answer. Replay returns an
// error for a transcript whose values do not decode.
func Replay(t Transcript) (nvml.Interface, error) {
	calls := make(map[string]Call, len(t.Calls))
	for _, c := range t.Calls {
		calls[c.Name] = c
	}
	rp := &replayer{calls: calls, devs: map[string]*mock.Device{}, names: map[nvml.Device]string{}}
	lib := &mock.Interface{
		InitFunc:     func() nvml.Return { return rp.ret("Init()", nil) },
		ShutdownFunc: func() nvml.Return { return rp.ret("Shutdown()", nil) },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) {
			var v string
			return v, rp.ret("SystemGetDriverVersion()", &v)
		},
		DeviceGetCountFunc: func() (int, nvml.Return) {
			var n int
			return n, rp.ret("DeviceGetCount()", &n)
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if ret := rp.ret(fmt.Sprintf("DeviceGetHandleByIndex(%d)", i), nil); ret != nvml.SUCCESS {
				return nil, ret
			}
			return rp.device(fmt.Sprintf("dev%d", i)), nvml.SUCCESS
		},
	}
	// Decode every value once now, so that a bad transcript is an error here
	// and not a wrong answer later.
	for _, c := range t.Calls {
		if err := checkValue(c); err != nil {
			return nil, err
		}
	}
	return lib, nil
}

// checkValue decodes c's value into the type its call returns.
func checkValue(c Call) error {
	if c.Return != nvml.SUCCESS || len(c.Value) == 0 {
		return nil
	}
	call := c.Name[strings.LastIndexByte(c.Name, '.')+1:]
	call = call[:strings.IndexByte(call+"(", '(')]
	var v any
	switch call {
	case "SystemGetDriverVersion", "GetUUID", "GetName", "GetMigDeviceHandleByIndex":
		v = new(string)
	case "GetMemoryInfo":
		v = new(memoryJSON)
	case "GetPciInfo", "GetNvLinkRemotePciInfo":
		v = new(pciJSON)
	case "GetCudaComputeCapability", "GetMigMode":
		v = new([2]int)
	default:
		v = new(int64)
	}
	if err := json.Unmarshal(c.Value, v); err != nil {
		return fmt.Errorf("nvmlmock: transcript call %q: value %s: %w", c.Name, c.Value, err)
	}
	return nil
}

type replayer struct {
	calls map[string]Call
	mu    sync.Mutex
	devs  map[string]*mock.Device
	names map[nvml.Device]string // devs the other way round
}

// ret answers call: its recorded Return, with its value decoded into v.
func (rp *replayer) ret(call string, v any) nvml.Return {
	c, ok := rp.calls[call]
	if !ok {
		return nvml.ERROR_UNKNOWN
	}
	if c.Return == nvml.SUCCESS && v != nil && len(c.Value) > 0 {
		if json.Unmarshal(c.Value, v) != nil {
			return nvml.ERROR_UNKNOWN // checked by Replay; kept for safety
		}
	}
	return c.Return
}

// device returns the mocked device called name, the same one each time, so
// that the probe can pass it back as another device's peer.
func (rp *replayer) device(name string) *mock.Device {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if d, ok := rp.devs[name]; ok {
		return d
	}
	d := &mock.Device{}
	rp.devs[name], rp.names[d] = d, name
	q := func(call string) string { return name + "." + call }
	peer := func(other nvml.Device) string {
		rp.mu.Lock()
		defer rp.mu.Unlock()
		if n, ok := rp.names[other]; ok {
			return n
		}
		return "?"
	}
	d.GetUUIDFunc = func() (string, nvml.Return) {
		var v string
		return v, rp.ret(q("GetUUID()"), &v)
	}
	d.GetNameFunc = func() (string, nvml.Return) {
		var v string
		return v, rp.ret(q("GetName()"), &v)
	}
	d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		var v memoryJSON
		ret := rp.ret(q("GetMemoryInfo()"), &v)
		return nvml.Memory{Total: v.Total, Free: v.Free, Used: v.Used}, ret
	}
	d.GetCudaComputeCapabilityFunc = func() (int, int, nvml.Return) {
		var v [2]int
		ret := rp.ret(q("GetCudaComputeCapability()"), &v)
		return v[0], v[1], ret
	}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var v pciJSON
		ret := rp.ret(q("GetPciInfo()"), &v)
		return v.info(), ret
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) {
		var v int
		return v, rp.ret(q("GetNumaNodeId()"), &v)
	}
	d.GetMigModeFunc = func() (int, int, nvml.Return) {
		var v [2]int
		ret := rp.ret(q("GetMigMode()"), &v)
		return v[0], v[1], ret
	}
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) {
		var v int
		return v, rp.ret(q("GetMaxMigDeviceCount()"), &v)
	}
	d.GetMigDeviceHandleByIndexFunc = func(k int) (nvml.Device, nvml.Return) {
		var mig string
		if ret := rp.ret(q(fmt.Sprintf("GetMigDeviceHandleByIndex(%d)", k)), &mig); ret != nvml.SUCCESS {
			return nil, ret
		}
		return rp.device(mig), nvml.SUCCESS
	}
	d.GetNvLinkStateFunc = func(p int) (nvml.EnableState, nvml.Return) {
		var v nvml.EnableState
		return v, rp.ret(q(fmt.Sprintf("GetNvLinkState(%d)", p)), &v)
	}
	d.GetNvLinkRemoteDeviceTypeFunc = func(p int) (nvml.IntNvLinkDeviceType, nvml.Return) {
		var v nvml.IntNvLinkDeviceType
		return v, rp.ret(q(fmt.Sprintf("GetNvLinkRemoteDeviceType(%d)", p)), &v)
	}
	d.GetNvLinkRemotePciInfoFunc = func(p int) (nvml.PciInfo, nvml.Return) {
		var v pciJSON
		ret := rp.ret(q(fmt.Sprintf("GetNvLinkRemotePciInfo(%d)", p)), &v)
		return v.info(), ret
	}
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		var v nvml.GpuTopologyLevel
		return v, rp.ret(q(fmt.Sprintf("GetTopologyCommonAncestor(%s)", peer(other))), &v)
	}
	d.GetP2PStatusFunc = func(other nvml.Device, caps nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		var v nvml.GpuP2PStatus
		return v, rp.ret(q(fmt.Sprintf("GetP2PStatus(%s,%d)", peer(other), caps)), &v)
	}
	return d
}
