#!/bin/sh
# gavel-jobs-check.sh probes this machine's GPUs, records the NVML answers as
# a test fixture, and profiles Gavel's 26 job types (gavel_jobs.py beside
# gpu-probe) with gpu-probe's profiler, on a machine with an NVIDIA driver and
# PyTorch. Build the binaries first, where Go is (they need cgo):
#
#	go test -c -o .dev/gpu.test ./gpu
#	go build -o .dev/gpu-probe ./examples/gpu-probe
#
# and run it from the repository's root; .dev is ignored by git, so a copy of
# the working tree that leaves ignored files behind must be told to take it.
# Everything goes to ${OUT:-/tmp}: device.log (the probe, the tests, the
# versions), nvml.json (the transcript), nvidia-smi.csv, profile.log and a
# measured row for each GPU type, <type>.json.
#
# Each run of a job is a fresh Python process: on H100 and H200 machines
# with 16 cores a run took 9 to 11 s, PyTorch's start included, so the 26 job
# types take about 4.5 minutes with REPEATS=1 and 14 with REPEATS=3.
# PROFILE_LIMIT (seconds) stops the profiling where the machine's time is
# short; what was measured until then is in profile.log and the rows.
#
# Three runs of each job type in 15 minutes of device time, as the H200 row
# was measured: REPEATS=1, then, at once on the same machine (a fresh $OUT),
# PROFILE_ONLY=1 REPEATS=2, which skips the probe and the tests; then, here,
# gpu-probe -merge OUT.json FIRST.json SECOND.json joins the two rows.
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-/tmp}
REPEATS=${REPEATS:-3}
[ -n "$PROFILE_ONLY" ] || {
	date -u
	nvidia-smi -L
	nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,clocks.max.sm,power.limit --format=csv
	nvidia-smi | head -4
	nvidia-smi topo -m
	python3 -c 'import torch, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "torchvision", torchvision.__version__)'
	echo "== probe, recorded"
	.dev/gpu-probe -record "$out/nvml.json"
	echo "== gpu package tests"
	(cd gpu && ../.dev/gpu.test -test.count=1 2>&1 | tail -3)
} >"$out/device.log" 2>&1
[ -n "$PROFILE_ONLY" ] || nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id,compute_cap --format=csv,noheader,nounits >"$out/nvidia-smi.csv"
# Gavel's job types, one gpu-probe run: it writes $out/<type>.json, a measured
# row (data.LoadMeasured), after each job type.
sw=$(python3 -c 'import sys, torch, torchvision; print("PyTorch", torch.__version__, "(CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "), torchvision", torchvision.__version__, "Python", sys.version.split()[0])')
timeout "${PROFILE_LIMIT:-900}" .dev/gpu-probe -repeats "$REPEATS" -timeout 60s \
	-workloads examples/gpu-probe/gavel_jobs.tsv -rows "$out" -software "$sw" \
	-cuda "$(python3 -c 'import torch; print(torch.version.cuda)')" >"$out/profile.log" 2>&1
echo "profile exit $?" >>"$out/profile.log"
[ -n "$PROFILE_ONLY" ] || cat "$out/device.log"
cat "$out/profile.log"
