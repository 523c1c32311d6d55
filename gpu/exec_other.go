//go:build !unix

package gpu

import "os/exec"

// killGroup leaves cancellation to exec.CommandContext, which kills the
// program but not its children.
func killGroup(*exec.Cmd) {}

// killLeftovers does nothing: without process groups, the processes a
// program leaves behind cannot be told from others.
func killLeftovers(*exec.Cmd) {}
