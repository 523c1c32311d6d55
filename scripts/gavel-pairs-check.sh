#!/bin/sh
# gavel-pairs-check.sh profiles seven of Gavel's job types
# (examples/gpu-probe/gavel_pairs.tsv) alone and then in every pair, each
# with itself too, two programs at once on one device (gpu-probe -pairs), on
# a machine with an NVIDIA driver and PyTorch: the co-located throughputs
# of Gavel's space sharing. Build gpu-probe first, where Go is (it needs
# cgo):
#
#	go build -o .dev/gpu-probe ./examples/gpu-probe
#
# and run it from the repository's root; .dev is ignored by git, so a copy of
# the working tree that leaves ignored files behind must be told to take it.
# Everything goes to ${OUT:-/tmp}: profile.log and a measured row for each
# GPU type, <type>.json, rewritten after each job type and pair. With one run
# of each (REPEATS=1, the default) the 7 job types and 28 pairs took
# 7 min 18 s on a 16-core H200 machine; PROFILE_LIMIT (seconds) stops the
# profiling where the machine's time is short.
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-/tmp}
sw=$(python3 -c 'import sys, torch, torchvision; print("PyTorch", torch.__version__, "(CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version(), "), torchvision", torchvision.__version__, "Python", sys.version.split()[0])')
{
	date -u
	nvidia-smi -L
	timeout "${PROFILE_LIMIT:-900}" .dev/gpu-probe -repeats "${REPEATS:-1}" -timeout 90s \
		-workloads examples/gpu-probe/gavel_pairs.tsv -pairs -rows "$out" -software "$sw" \
		-cuda "$(python3 -c 'import torch; print(torch.version.cuda)')"
	echo "profile exit $?"
	date -u
} >"$out/profile.log" 2>&1
cat "$out/profile.log"
