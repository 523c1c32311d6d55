// Package gpu probes real NVIDIA devices through NVML and measures a
// workload's throughput on each GPU type to fill a speedup matrix.
package gpu
