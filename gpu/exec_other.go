//go:build !unix

package gpu

import "os/exec"

// killGroup leaves cancellation to exec.CommandContext, which kills the
// program but not its children.
func killGroup(*exec.Cmd) {}
