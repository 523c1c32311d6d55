//go:build cgo

package gpu_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
	"github.com/gpufair/gpufair/topology"
)

// fataler is what replayHost needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

// replayHost probes lib through a Recorder, replays the transcript after a
// trip through JSON, and returns both probes' hosts.
func replayHost(t fataler, lib nvml.Interface) (recorded, replayed *gpu.Host) {
	t.Helper()
	rlib, rec := nvmlmock.Record(lib)
	recorded, err := gpu.Probe(rlib, &gpu.Settings{Name: "m"})
	if err != nil {
		t.Fatalf("Probe(recorded): %v", err)
	}
	b, err := json.Marshal(rec.Transcript())
	if err != nil {
		t.Fatal(err)
	}
	if replayed, err = gpu.Probe(replayJSON(t, b), &gpu.Settings{Name: "m"}); err != nil {
		t.Fatalf("Probe(replayed): %v", err)
	}
	return recorded, replayed
}

// replayJSON returns a library replaying the transcript b holds as JSON.
func replayJSON(t fataler, b []byte) nvml.Interface {
	t.Helper()
	var tr nvmlmock.Transcript
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	lib, err := nvmlmock.Replay(tr)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	return lib
}

// TestProbeReplaysRecording records probes of mocked hosts (NVSwitch, NVLink
// pairs with PCIe paths, MIG instances and empty slots, unsupported queries)
// and checks that replaying each transcript gives the same host.
func TestProbeReplaysRecording(t *testing.T) {
	migHost := nvmlmock.Host{Driver: "580.1", GPUs: []nvmlmock.GPU{
		{Name: "NVIDIA A100 80GB PCIe", UUID: "GPU-0", BusID: "0000:17:00.0", MemoryBytes: 80 << 30, Major: 8,
			NUMANode: 1, MIGSupported: true, MIGEnabled: true, MIGSlots: 7,
			MIGDevices: []nvmlmock.MIGDev{{Slot: 0, UUID: "MIG-a", MemoryBytes: 40 << 30}, {Slot: 3, UUID: "MIG-b", MemoryBytes: 20 << 30}}},
		{Name: "Tesla T4", UUID: "GPU-1", BusID: "0000:3d:00.0", MemoryBytes: 16 << 30, Major: 7, Minor: 5, NUMANode: -1},
	}}
	mixed, _ := nvmlmock.New(mixedHost())
	mig, _ := nvmlmock.New(migHost)
	for name, lib := range map[string]nvml.Interface{"dgx a100": nvmlmock.DGXA100(), "mixed": mixed, "mig": mig} {
		recorded, replayed := replayHost(t, lib)
		if diff := cmp.Diff(recorded, replayed); diff != "" {
			t.Errorf("%s: replayed host differs (-recorded +replayed):\n%s", name, diff)
		}
		if len(recorded.Devices) == 0 {
			t.Errorf("%s: no devices recorded", name)
		}
	}
}

// TestReplayRefusesWhatWasNotRecorded checks that a call missing from a
// transcript fails the probe with a CallError naming it, and that a value of
// the wrong type is refused by Replay.
func TestReplayRefusesWhatWasNotRecorded(t *testing.T) {
	rlib, rec := nvmlmock.Record(nvmlmock.DGXA100())
	if _, err := gpu.Probe(rlib, nil); err != nil {
		t.Fatal(err)
	}
	tr := rec.Transcript()
	var kept nvmlmock.Transcript
	for _, c := range tr.Calls {
		if c.Name != "dev3.GetName()" {
			kept.Calls = append(kept.Calls, c)
		}
	}
	lib, err := nvmlmock.Replay(kept)
	if err != nil {
		t.Fatal(err)
	}
	_, err = gpu.Probe(lib, nil)
	var ce *gpu.CallError
	if !errors.As(err, &ce) || ce.Call != "GetName" || ce.Device != 3 {
		t.Errorf("Probe without dev3.GetName() = %v, want a CallError for GetName on device 3", err)
	}

	bad := nvmlmock.Transcript{Calls: append([]nvmlmock.Call(nil), tr.Calls...)}
	for i, c := range bad.Calls {
		if c.Name == "dev0.GetMemoryInfo()" {
			bad.Calls[i].Value = json.RawMessage(`"eighty gigabytes"`)
		}
	}
	if _, err := nvmlmock.Replay(bad); err == nil {
		t.Error("Replay accepted a memory value that is a string")
	}
}

// TestProbeRecorded replays the NVML answers recorded on real machines by
// gpu-probe -record, each with nvidia-smi's view of the same device beside
// it, and checks the probe's reading of them: it agrees with nvidia-smi, types
// the device, and reads the queries those machines did not support (NUMA
// node, NVLink) as unknown and none. Both are one GPU in a virtual machine,
// driver 580.159.04, recorded on 2026-11-28: testdata/h100-vm an NVIDIA H100
// 80GB HBM3, testdata/h200-vm an NVIDIA H200.
func TestProbeRecorded(t *testing.T) {
	for _, tc := range []struct {
		dir         string
		uuid, name  string
		typ         topology.GPUType
		memoryBytes uint64
	}{
		{"h100-vm", "GPU-954b5441-0aff-f935-6875-53ec485da414", "NVIDIA H100 80GB HBM3", "h100", 85520809984},
		{"h200-vm", "GPU-6bd0145e-e041-4ea6-732b-2b6fede0cd28", "NVIDIA H200", "h200", 150754820096},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.dir, "nvml.json"))
			if err != nil {
				t.Fatal(err)
			}
			h, err := gpu.Probe(replayJSON(t, b), &gpu.Settings{Name: "vm"})
			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			smi, err := os.ReadFile(filepath.Join("testdata", tc.dir, "nvidia-smi.csv"))
			if err != nil {
				t.Fatal(err)
			}
			agreesWithNvidiaSMI(t, h, string(smi))
			want := &gpu.Host{Name: "vm", Driver: "580.159.04", Devices: []gpu.Device{{
				Index: 0, UUID: tc.uuid, Name: tc.name, Type: tc.typ,
				MemoryBytes: tc.memoryBytes, ComputeCapability: gpu.ComputeCapability{Major: 9}, PCIBusID: "0000:00:06.0",
				NUMANode: -1, MIG: gpu.MIG{Supported: true},
			}}}
			if diff := cmp.Diff(want, h); diff != "" {
				t.Errorf("probe of the recording (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]topology.Server{{Name: "vm", Type: tc.typ, GPUs: 1}}, h.Servers()); diff != "" {
				t.Errorf("Servers() (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzReplay probes whatever a transcript says: counts, slots and values a
// driver would not give. Replay must refuse a value it cannot decode, and
// Probe must not panic on what Replay takes.
func FuzzReplay(f *testing.F) {
	for _, dir := range []string{"h100-vm", "h200-vm"} {
		b, err := os.ReadFile(filepath.Join("testdata", dir, "nvml.json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"calls": [{"call": "Init()"}, {"call": "DeviceGetCount()", "value": -1}, {"call": "Shutdown()"}]}`))
	f.Add([]byte(`{"calls": [{"call": "Init()"}, {"call": "DeviceGetCount()", "value": 2}, {"call": "DeviceGetHandleByIndex(0)"},
		{"call": "dev0.GetMigMode()", "value": [1, 0]}, {"call": "dev0.GetMaxMigDeviceCount()", "value": -3}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tr nvmlmock.Transcript
		if json.Unmarshal(b, &tr) != nil {
			return
		}
		lib, err := nvmlmock.Replay(tr)
		if err != nil {
			return
		}
		h, err := gpu.Probe(lib, nil)
		if err != nil {
			return
		}
		if len(h.Devices) > 1<<10 {
			t.Fatalf("%d devices taken", len(h.Devices))
		}
		_ = h.Servers()
	})
}

// TestProbeRefusesImpossibleCounts checks that device and MIG-slot counts no
// machine has are refused with a CallError naming the call, not allocated or
// looped over.
func TestProbeRefusesImpossibleCounts(t *testing.T) {
	for _, n := range []int{-1, 257, 1 << 40} {
		lib, _ := nvmlmock.New(mixedHost())
		lib.DeviceGetCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
		_, err := gpu.Probe(lib, nil)
		var ce *gpu.CallError
		if !errors.As(err, &ce) || ce.Call != "DeviceGetCount" || !errors.Is(err, gpu.ErrNVML) {
			t.Errorf("%d devices: error %v, want a CallError for DeviceGetCount", n, err)
		}
	}
	for _, n := range []int{-3, 65} {
		lib, devs := nvmlmock.New(nvmlmock.Host{GPUs: []nvmlmock.GPU{{Name: "NVIDIA A100 80GB PCIe", UUID: "GPU-0",
			BusID: "0000:17:00.0", MIGSupported: true, MIGEnabled: true, MIGSlots: 7}}})
		devs[0].GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return n, nvml.SUCCESS }
		_, err := gpu.Probe(lib, nil)
		var ce *gpu.CallError
		if !errors.As(err, &ce) || ce.Call != "GetMaxMigDeviceCount" || ce.Device != 0 {
			t.Errorf("%d MIG slots: error %v, want a CallError for GetMaxMigDeviceCount on device 0", n, err)
		}
	}
}

// TestPropertyReplayEqualsRecording: on random mocked hosts (genHost: NVLinks,
// NVSwitches, MIG modes, PCIe levels), a probe replayed from its own
// recording, after a trip through JSON, reads the same host.
func TestPropertyReplayEqualsRecording(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		lib, _ := nvmlmock.New(genHost().Draw(rt, "host"))
		recorded, replayed := replayHost(rt, lib)
		if diff := cmp.Diff(recorded, replayed); diff != "" {
			rt.Fatalf("replayed host differs (-recorded +replayed):\n%s", diff)
		}
	})
}
