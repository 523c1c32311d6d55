// Package gpu probes real NVIDIA devices through NVML and measures a
// workload's throughput on each GPU type to fill a speedup matrix.
//
// # Status: single-GPU machines, and go-nvml's mock for the rest
//
// The tests drive the probe through go-nvml's mock
// (github.com/NVIDIA/go-nvml/pkg/nvml/mock, including its DGX A100 model,
// completed by package nvmlmock), and TestProbeLocalAgreesWithNvidiaSMI
// checks ProbeLocal against nvidia-smi wherever a driver is present. That
// test has passed on virtual machines with one GPU each, driver 580.159.04:
// NVIDIA H100 80GB HBM3s and H200s. There the probe and nvidia-smi agreed on
// UUID, name, memory, PCI bus id and compute capability; NVML knew no NUMA
// node, and MIG was off. The profiler ran examples/gpu-probe/train.py and
// Gavel's 26 job types on both types (docs/benchmarks/gpu.md; the rates are
// package data's Measured rows). One machine of each type had its NVML
// answers recorded by nvmlmock.Record, as fixtures under testdata that
// TestProbeRecorded replays on any machine. Several GPUs,
// NVLink and NVSwitch fabrics, and MIG on real hardware have been seen only
// through the mock: a real driver's answers to those queries may differ
// from it. On a machine without a driver, as on CI, ProbeLocal returns
// ErrNoDriver and nothing else fails.
//
// # Probe
//
// Probe takes an nvml.Interface, so a mock can drive every path; ProbeLocal
// uses the real library (libnvidia-ml.so, loaded by go-nvml with dlopen). The
// result is a Host: for each device its index, UUID, product name and GPU
// type, memory, compute capability, PCI bus id, NUMA node, MIG mode and MIG
// devices, and NVLink ports (state, and the GPU or NVSwitch at the far end);
// for each pair of devices a Link: NVML's closest common PCIe ancestor (Path:
// same board, one PCIe switch, several switches, host bridge, NUMA node,
// across CPU sockets) and the NVLinks that join them, directly or through
// NVSwitches. Product names become GPU types through a TypeTable; the default
// maps each data-centre family to its lower-case name ("NVIDIA
// A100-SXM4-40GB" is "a100") and can be overridden in Settings.
//
// A topology.Server holds GPUs of one type, so Host.Servers gives one server
// per GPU type on the host; Cluster and Capacity combine several hosts into a
// topology.Cluster and an alloc.Cluster. GPUs in MIG mode are reported but not
// counted: CUDA shows them only through their MIG devices, so a whole-GPU job
// cannot run on them.
//
// NVML is reached through cgo. Built with CGO_ENABLED=0, the package keeps
// everything but Probe (whose argument type, nvml.Interface, exists only with
// cgo): ProbeLocal then returns ErrNoDriver wrapping ErrNoCgo.
//
// # Profile
//
// A Profiler runs a user-given command once per GPU type, with
// CUDA_VISIBLE_DEVICES set to the UUID of one device of that type (Targets
// picks them), Repeats times, each run under a Timeout, and takes the median
// rate. The command reports its rate on standard output as a last line
// "rate: <number>" (ParseRate), or in any format a caller-given Parser reads.
// A cell whose run fails, hangs or reports no rate carries a *RunError and no
// rate: it is never filled in silently. Profile.Matrix returns the
// speedup.Matrix when every cell has a rate; Profile.Values, with NaN in failed
// cells, is the input of speedup.Complete, which estimates them from the
// measured cells.
//
// ProfilePairs measures what Gavel's space sharing needs (alloc.PairRate):
// two workloads run at once on one device, each timing its steps only while
// the other runs. Two programs started together do not measure together
// (one may still be loading while the other has finished), so both keep a
// barrier through files in a directory the Profiler gives them (EnvBarrier);
// a run that does not keep it fails its cell with ErrNotColocated.
//
// See ExampleProbe and ExampleProfiler.
package gpu
