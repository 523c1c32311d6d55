//go:build cgo

package gpu_test

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/gpu"
)

// TestProbeLocalAgreesWithNvidiaSMI probes this machine's real GPUs through
// NVML and checks every device against what nvidia-smi reports for it:
// UUID, product name, memory, PCI bus id and compute capability, in index
// order. It is skipped where there is no NVIDIA driver or no nvidia-smi
// (CI), and logs the probed host, so that a run on a GPU machine records
// what it found.
func TestProbeLocalAgreesWithNvidiaSMI(t *testing.T) {
	h, err := gpu.ProbeLocal(nil)
	if errors.Is(err, gpu.ErrNoDriver) {
		t.Skip("no NVIDIA driver on this machine")
	}
	if err != nil {
		t.Fatalf("ProbeLocal: %v", err)
	}
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		t.Skip("nvidia-smi is not on the PATH")
	}
	var table strings.Builder
	if err := h.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s, %d devices:\n%s", h.Driver, len(h.Devices), table.String())
	out, err := exec.Command(smi, "--query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap",
		"--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	agreesWithNvidiaSMI(t, h, string(out))
}

// agreesWithNvidiaSMI checks h's devices against the lines nvidia-smi printed
// for --query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap
// --format=csv,noheader,nounits, in index order.
func agreesWithNvidiaSMI(t *testing.T, h *gpu.Host, csv string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != len(h.Devices) {
		t.Fatalf("nvidia-smi lists %d GPUs, the probe %d", len(lines), len(h.Devices))
	}
	for i, line := range lines {
		f := strings.Split(line, ", ")
		if len(f) != 6 {
			t.Fatalf("nvidia-smi line %q: want 6 fields", line)
		}
		d := h.Devices[i]
		if idx, _ := strconv.Atoi(f[0]); idx != d.Index {
			t.Errorf("device %d: nvidia-smi index %s", i, f[0])
		}
		if f[1] != d.UUID {
			t.Errorf("device %d: UUID %q, nvidia-smi %q", i, d.UUID, f[1])
		}
		if f[2] != d.Name {
			t.Errorf("device %d: name %q, nvidia-smi %q", i, d.Name, f[2])
		}
		// nvidia-smi reports memory in MiB, rounded down.
		if mib, _ := strconv.ParseUint(f[3], 10, 64); mib != d.MemoryBytes>>20 {
			t.Errorf("device %d: %d MiB, nvidia-smi %s MiB", i, d.MemoryBytes>>20, f[3])
		}
		if bus := gpu.NormalizeBusID(f[4]); bus != d.PCIBusID {
			t.Errorf("device %d: PCI bus id %q, nvidia-smi %q (normalised %q)", i, d.PCIBusID, f[4], bus)
		}
		if f[5] != d.ComputeCapability.String() {
			t.Errorf("device %d: compute capability %v, nvidia-smi %s", i, d.ComputeCapability, f[5])
		}
		if d.Type == "" {
			t.Errorf("device %d (%s): no GPU type", i, d.Name)
		}
	}
}
