// Command gpu-probe prints this machine's NVIDIA GPUs (index, type, memory,
// compute capability, PCI bus id, NUMA node, MIG mode, NVLinks, UUID) and how
// each pair is linked, in the notation of nvidia-smi topo -m.
//
// Given a command after its flags, it then profiles that command on one
// device of each GPU type (gpu.Profiler: CUDA_VISIBLE_DEVICES set to the
// device's UUID, -repeats runs, the median rate) and prints the rates: the
// row a scheduler adds to its throughput matrix. The command reports its
// rate as a last line "rate: <number>"; train.py beside this file is such a
// command, a small PyTorch training loop.
//
// Usage:
//
//	gpu-probe [-name host] [-mock dgxa100] [-record file] [-repeats n] [-timeout d] [command args...]
//	gpu-probe [flags] -workloads file [-pairs] [-rows dir] [-software text] [-cuda version] [-unit text]
//	gpu-probe -merge out.json row.json...
//	gpu-probe -repeats 3 python3 examples/gpu-probe/train.py
//	gpu-probe -repeats 3 python3 examples/gpu-probe/gavel_jobs.py --job resnet50 --batch 64
//
// -record file writes every NVML call the probe made, with the driver's
// answer, to file as JSON (an nvmlmock.Transcript): a fixture from which
// nvmlmock.Replay answers the same calls in tests, on machines without a GPU.
//
// -workloads file profiles every workload the file lists instead of one
// command: a workload a line, four tab-separated fields (the job type as a
// throughput table names it, a short name, the batch size or 0, and the
// command, split at spaces); gavel_jobs.tsv beside this file lists Gavel's 26
// job types. With -rows dir it writes dir/<type>.json for each GPU type after
// each workload: a row that data.LoadMeasured reads, with the driver, the
// date, this command line, -software, -cuda and -unit as its provenance.
//
// -pairs, with -workloads, then profiles every pair of the listed workloads,
// each with itself too, as two programs at once on one device of each type
// (gpu.Profiler.ProfilePairs: the programs keep its co-location barrier, as
// gavel_jobs.py does), and adds their rates to the rows as pairs: the
// co-located throughputs of Gavel's space sharing (alloc.SpaceSharing).
// gavel_pairs.tsv lists seven of Gavel's job types for it.
//
// -merge out.json joins the rows named after it, written by -rows on one
// machine in profiler runs one after the other, into one row
// (data.MergeMeasured: each job type's runs are all the rows' runs, its rate
// their median) and writes it to out.json, without probing anything.
//
// -mock dgxa100 prints go-nvml's mocked DGX A100 instead of probing, so the
// output can be seen without hardware (a command given then runs on this
// machine, with the mock's UUIDs in CUDA_VISIBLE_DEVICES).
//
// Exit status: 0 after printing the host, and also when there is no NVIDIA
// driver (it then prints one line saying so and how to get one); 1 when NVML
// fails in the middle of the probe; 2 for a bad flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/gpufair/gpufair/gpu"
	"github.com/gpufair/gpufair/topology"
)

func main() {
	name := flag.String("name", "", "host name to report (default: the machine's)")
	mock := flag.String("mock", "", `probe a mock instead of this machine: "dgxa100"`)
	record := flag.String("record", "", "write the probe's NVML calls and answers to this file")
	workloads := flag.String("workloads", "", "profile the workloads this file lists (tab-separated: job type, job, batch, command)")
	rowsDir := flag.String("rows", "", "with -workloads, write a measured row for each GPU type to this directory")
	software := flag.String("software", "", "with -rows, the software the workloads ran on, for the rows' provenance")
	cuda := flag.String("cuda", "", "with -rows, the CUDA version the workloads ran on (NVML's probe does not ask for it)")
	unit := flag.String("unit", "training steps per second", "with -rows, what the workloads' rates count")
	repeats := flag.Int("repeats", 3, "runs of the command per GPU type")
	timeout := flag.Duration("timeout", 10*time.Minute, "limit on each run of the command")
	pairs := flag.Bool("pairs", false, "with -workloads, also profile every pair of the workloads at once on one device (space sharing)")
	merge := flag.String("merge", "", "join the measured rows given as arguments into this file, and probe nothing")
	flag.Parse()
	if *merge != "" {
		if *workloads != "" || *rowsDir != "" || *mock != "" || *record != "" {
			fmt.Fprintln(os.Stderr, "gpu-probe: -merge only joins rows: give it no -workloads, -rows, -mock or -record")
			os.Exit(2)
		}
		os.Exit(mergeRows(*merge, flag.Args()))
	}
	prof := gpu.Profiler{Repeats: *repeats, Timeout: *timeout}
	var ws []workload
	if *workloads != "" {
		var err error
		if ws, err = readWorkloads(*workloads); err != nil {
			fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
			os.Exit(2)
		}
	}
	switch {
	case len(ws) > 0 && flag.NArg() > 0:
		fmt.Fprintln(os.Stderr, "gpu-probe: give a command or -workloads, not both")
		os.Exit(2)
	case *pairs && len(ws) == 0:
		fmt.Fprintln(os.Stderr, "gpu-probe: -pairs profiles the pairs of -workloads: give both")
		os.Exit(2)
	case *rowsDir != "" && len(ws) == 0:
		fmt.Fprintln(os.Stderr, "gpu-probe: -rows writes the rows of -workloads: give both")
		os.Exit(2)
	}
	os.Exit(run(*name, *mock, *record, prof, flag.Args(), ws, rowSettings{dir: *rowsDir, software: *software, cuda: *cuda, unit: *unit, pairs: *pairs}))
}

func run(name, mock, record string, prof gpu.Profiler, argv []string, ws []workload, rows rowSettings) int {
	set := &gpu.Settings{Name: name}
	var h *gpu.Host
	var err error
	switch {
	case mock != "" && record != "":
		fmt.Fprintln(os.Stderr, "gpu-probe: -record records a real driver's answers, not a mock's: give one of -mock and -record")
		return 2
	case record != "":
		h, err = probeRecorded(set, record)
	case mock == "":
		h, err = gpu.ProbeLocal(set)
	case mock == "dgxa100":
		if set.Name == "" {
			set.Name = "dgx-a100 (mock)"
		}
		h, err = probeMock(set)
	default:
		fmt.Fprintf(os.Stderr, "gpu-probe: unknown mock %q; the one available is dgxa100\n", mock)
		return 2
	}
	switch {
	case errors.Is(err, gpu.ErrNoCgo):
		fmt.Println("gpu-probe: this binary was built with CGO_ENABLED=0, and NVML (and its mocks) can only be loaded through cgo: rebuild with CGO_ENABLED=1")
		return 0
	case errors.Is(err, gpu.ErrNoDriver):
		fmt.Printf("gpu-probe: %v: install the NVIDIA driver, which provides libnvidia-ml.so.1 "+
			"(https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/), or run gpu-probe -mock dgxa100 to see a mocked DGX A100\n", err)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
		return 1
	}
	if err := h.WriteTable(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
		return 1
	}
	fmt.Println("\nas gpufair servers:")
	for _, s := range h.Servers() {
		fmt.Printf("  %s: %d × %s\n", s.Name, s.GPUs, s.Type)
	}
	if t := gpu.Targets(h); len(t) > 0 {
		fmt.Println("profiling targets (one device per type, for gpu.Profiler):")
		for _, x := range t {
			fmt.Printf("  %s: CUDA_VISIBLE_DEVICES=%s\n", x.Type, x.UUID)
		}
	}
	if len(ws) > 0 {
		return profileRows(prof, ws, h, rows)
	}
	if len(argv) == 0 {
		return 0
	}
	return profile(prof, argv, gpu.Targets(h))
}

// profile runs argv on every target and prints each type's median rate, or
// why the type has none.
func profile(prof gpu.Profiler, argv []string, targets []gpu.Target) int {
	fmt.Printf("\nprofiling %q, %d runs per GPU type:\n", argv, prof.RunsPerCell())
	p, err := prof.Profile(context.Background(), []gpu.Workload{{Name: argv[0], Argv: argv}}, targets)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpu-probe: %v\n", err)
		return 1
	}
	for k, c := range p.Cells[0] {
		printCell(p.Types[k], c)
	}
	if p.Err() != nil {
		return 1
	}
	return 0
}

// printCell prints one GPU type's median rate and runs, or why it has none.
func printCell(t topology.GPUType, c gpu.Cell) {
	if c.Err != nil {
		fmt.Printf("  %s: no rate: %v\n", t, c.Err)
		return
	}
	fmt.Printf("  %s: %.4g (runs %.4g)\n", t, c.Rate, c.Runs)
}
