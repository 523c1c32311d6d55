//go:build unix

package gpu

import (
	"os/exec"
	"syscall"
)

// killGroup starts cmd in a process group of its own and makes cancellation
// kill the whole group.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killLeftovers kills what is left of cmd's process group once cmd has
// ended: processes the program started and did not wait for, which would
// otherwise go on using the GPU through the next measurement. A process
// that left the group (setsid) is out of reach.
func killLeftovers(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH: none left
	}
}
