#!/bin/sh
# gpu-check.sh runs the gpu package's tests against the real driver, the
# probe, and gpu-probe's profile of examples/gpu-probe/train.py at three batch
# sizes, on a machine with an NVIDIA driver and PyTorch. Build the two binaries
# first, where Go is (they need cgo):
#
#	go test -c -o .dev/gpu.test ./gpu
#	go build -o .dev/gpu-probe ./examples/gpu-probe
#
# and run it from the repository's root. Both are ignored by git (.gitignore:
# *.test and /.dev/), so a copy of the working tree that leaves ignored files
# behind must be told to take .dev along. The log goes to stdout and, when
# OUT is set, to $OUT/device.log (else /tmp/device.log).
cd "$(dirname "$0")/.." || exit 1
{
	echo "== nvidia-smi"
	nvidia-smi -L
	nvidia-smi --query-gpu=index,name,driver_version,memory.total,compute_cap,clocks.max.sm,power.limit --format=csv
	echo "== gpu package tests"
	(cd gpu && ../.dev/gpu.test -test.v -test.count=1)
	echo "== gpu-probe"
	.dev/gpu-probe
	for b in 128 32 512; do
		echo "== gpu-probe with train.py --batch $b (3 repeats)"
		timeout 150 .dev/gpu-probe -repeats 3 -timeout 60s python3 examples/gpu-probe/train.py --batch $b
	done
} 2>&1 | tee "${OUT:-/tmp}/device.log"
