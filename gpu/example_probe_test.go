//go:build cgo

package gpu_test

import (
	"fmt"
	"os"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/gpu/nvmlmock"
)

// ExampleProbe probes go-nvml's model of a DGX A100. On a real machine,
// gpu.ProbeLocal(nil) does the same through the NVIDIA driver.
func ExampleProbe() {
	h, err := gpu.Probe(nvmlmock.DGXA100(), &gpu.Settings{Name: "dgx"})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := h.Devices[3]
	fmt.Println(d.Type, d.ComputeCapability, d.MemoryBytes>>30, "GiB", "NUMA", d.NUMANode)
	l, _ := h.Link(0, 1)
	fmt.Println("GPU0-GPU1:", l, "over NVSwitch:", l.NVSwitch, "PCIe:", l.Path)
	l, _ = h.Link(0, 7)
	fmt.Println("GPU0-GPU7:", l, "PCIe:", l.Path)
	c, _ := gpu.Capacity(h)
	fmt.Println(c.Types, c.Count)
	// A smaller table for the example: the first three GPUs.
	small := &gpu.Host{Name: h.Name, Driver: h.Driver, Devices: h.Devices[:3]}
	for _, l := range h.Links {
		if l.B < 3 {
			small.Links = append(small.Links, l)
		}
	}
	small.WriteTable(os.Stdout)
	// Output:
	// a100 8.0 40 GiB NUMA 1
	// GPU0-GPU1: NV12 over NVSwitch: true PCIe: PXB
	// GPU0-GPU7: NV12 PCIe: SYS
	// [a100] [8]
	// host dgx, driver 550.54.15, 3 GPUs (3 a100)
	//
	// GPU  TYPE  NAME                        MEMORY  CC   PCI BUS ID    NUMA  MIG  NVLINK          UUID
	// 0    a100  Mock NVIDIA A100-SXM4-40GB  40 GiB  8.0  0000:00:00.0  3     off  12 to nvswitch  GPU-a100a100-0000-4000-8000-000000000000
	// 1    a100  Mock NVIDIA A100-SXM4-40GB  40 GiB  8.0  0000:01:00.0  3     off  12 to nvswitch  GPU-a100a100-0000-4000-8000-000000000001
	// 2    a100  Mock NVIDIA A100-SXM4-40GB  40 GiB  8.0  0000:02:00.0  1     off  12 to nvswitch  GPU-a100a100-0000-4000-8000-000000000002
	//
	// links (NV<n>: n NVLinks, else the PCIe path):
	//       GPU0  GPU1  GPU2
	// GPU0  X     NV12  NV12
	// GPU1  NV12  X     NV12
	// GPU2  NV12  NV12  X
	//
	// PCIe paths:
	//       GPU0  GPU1  GPU2
	// GPU0  X     PXB   SYS
	// GPU1  PXB   X     SYS
	// GPU2  SYS   SYS   X
}
