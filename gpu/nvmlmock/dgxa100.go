//go:build cgo

package nvmlmock

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
)

// DGXA100NUMANode returns the NUMA node of GPU i (0 to 7) in the DGX A100
// model, as a DGX A100 with the default NPS4 BIOS setting reports it: GPUs
// 0–3 on CPU socket 0 (nodes 3, 3, 1, 1), GPUs 4–7 on socket 1 (nodes 7, 7,
// 5, 5).
func DGXA100NUMANode(i int) int { return [8]int{3, 3, 1, 1, 7, 7, 5, 5}[i] }

// DGXA100UUID returns the UUID DGXA100 gives GPU i, fixed so that output is
// reproducible (go-nvml's model draws random ones).
func DGXA100UUID(i int) string {
	return fmt.Sprintf("GPU-a100a100-0000-4000-8000-%012d", i)
}

// DGXA100 returns go-nvml's model of an NVIDIA DGX A100 (eight
// "Mock NVIDIA A100-SXM4-40GB", 40 GiB, compute capability 8.0, PCI bus ids
// 0000:00:00.0 to 0000:07:00.0, driver 550.54.15) with fixed UUIDs (see
// DGXA100UUID) and the answers the model lacks, after the machine it models:
//
//   - NVLink: each GPU has 12 active NVLinks, two to each of six NVSwitches,
//     and NVLink peer-to-peer works between every pair (nvidia-smi: NV12).
//   - PCIe: GPUs 2k and 2k+1 share a tree of PCIe switches (TOPOLOGY_MULTIPLE,
//     PXB); every other pair meets only across NUMA nodes (TOPOLOGY_SYSTEM, SYS).
//   - NUMA: DGXA100NUMANode.
//   - MIG: off (the model's mode can be changed with SetMigMode); its MIG
//     devices are not modelled, so GetMigDeviceHandleByIndex finds none.
//
// The PCI bus ids reported at the far end of NVSwitch links are invented.
func DGXA100() *dgxa100.Server {
	s := dgxa100.New()
	h := Host{Driver: s.DriverVersion, GPUs: make([]GPU, len(s.Devices))}
	handles := make([]nvml.Device, len(s.Devices))
	for i, x := range s.Devices {
		d := x.(*dgxa100.Device)
		d.UUID = DGXA100UUID(i)
		ports := make([]Port, 12)
		for p := range ports {
			ports[p] = Port{Active: true, Switch: true}
		}
		h.GPUs[i] = GPU{BusID: d.PciBusID, NUMANode: DGXA100NUMANode(i), NVLinks: ports}
		handles[i] = x
	}
	h.Path = func(a, b int) nvml.GpuTopologyLevel {
		if a/2 == b/2 {
			return nvml.TOPOLOGY_MULTIPLE
		}
		return nvml.TOPOLOGY_SYSTEM
	}
	for i, x := range s.Devices {
		d := x.(*dgxa100.Device)
		setTopology(&d.GetPciInfoFunc, &d.Device, h, i, h.GPUs[i].BusID, h.GPUs[i].NUMANode, h.GPUs[i].NVLinks, handles)
		d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_NOT_FOUND }
	}
	return s
}
