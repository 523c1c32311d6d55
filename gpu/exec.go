package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// waitDelay bounds how long ExecRunner waits for a program's output pipes to
// close once it has exited or been killed, in case a process it left behind
// (outside its process group, if killed) holds them.
const waitDelay = 2 * time.Second

// ExecRunner runs argv[0] with arguments argv[1:] (no shell), with env
// appended to this process's environment, and returns its standard output.
// When ctx is done it kills the program and, on Unix, every process in the
// program's process group, so a shell script's children die with it; on
// Unix, whatever is left of that group once the program has ended is killed
// too, so that a process it started in the background does not run on into
// the next measurement. A non-zero exit is returned as an error carrying
// the last bytes of standard error. A program that exits 0 but leaves a
// process behind that holds its standard output or error ("server &", or
// "setsid server &", which leaves the group and is not killed) has its
// output taken as it is 2 s after the exit, without an error.
func ExecRunner(ctx context.Context, argv, env []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: empty command", ErrProfile)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = waitDelay
	killGroup(cmd)
	err := cmd.Run()
	killLeftovers(cmd)
	if errors.Is(err, exec.ErrWaitDelay) {
		// Only returned for a program that exited 0: see exec.Cmd.WaitDelay.
		err = nil
	}
	if err != nil {
		if s := tail(stderr.Bytes(), outputTail); s != "" {
			return stdout.Bytes(), fmt.Errorf("%w; stderr: %q", err, s)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}
