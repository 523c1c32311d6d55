// Package data embeds the measured data gpufair's tests, benchmarks and
// examples run on, so that they work from any directory and need nothing
// outside the module.
//
// Everything under gavel/ comes from stanford-futuredata/gavel (MIT License,
// see gavel/LICENSE): throughputs of 26 DNN job types on K80, P100 and V100
// GPUs, Philly-derived job traces and cluster specifications. It is input,
// never expected output.
//
// Under measured/ are throughputs gpufair measured itself on real devices
// (Measured, LoadMeasured): Gavel's job types, rebuilt in PyTorch, on an
// NVIDIA H100 (h100.json) and an NVIDIA H200 (h200.json), each row with the
// driver, software and command that measured it.
package data

import (
	"embed"
	"io/fs"

	"github.com/gpufair/gpufair"
)

//go:embed gavel
var gavel embed.FS

// Gavel returns Gavel's data as a read-only file system rooted at gavel/:
//
//	simulation_throughputs.json          throughputs measured for simulation
//	physical_cluster_throughputs.json    the same schema, physical cluster
//	philly_job_distribution.csv          (duration s, GPUs) pairs from Philly
//	traces/msr-seed0/*.trace             Philly-derived job traces
//	traces/physical_cluster/*.trace      physical-cluster traces
//	traces/cluster_specs*.json           GPU counts "k80:p100:v100"
//	LICENSE                              Gavel's MIT license
func Gavel() fs.FS { return embedded(gavel, "gavel") }

// embedded returns the directory dir of f, which go:embed put there.
func embedded(f embed.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic("data: embedded directory " + dir + " missing: " + err.Error()) // cannot happen: checked at compile time
	}
	return sub
}

// checkFS returns an *gpufair.InputError on Field "fsys" wrapping
// gpufair.ErrEmpty for a nil file system, which fs.ReadFile would call a
// method on and panic.
func checkFS(fsys fs.FS) error {
	if fsys == nil {
		return gpufair.Invalid("fsys", "", gpufair.ErrEmpty, "nil file system")
	}
	return nil
}
