package gpu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// waitDelay bounds how long ExecRunner waits for a killed program's output
// pipes to close, in case a grandchild outside its process group holds them.
const waitDelay = 2 * time.Second

// ExecRunner runs argv[0] with arguments argv[1:] (no shell), with env
// appended to this process's environment, and returns its standard output.
// When ctx is done it kills the program and, on Unix, every process in the
// program's process group, so a shell script's children die with it. A
// non-zero exit is returned as an error carrying the last bytes of standard
// error.
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
	if err := cmd.Run(); err != nil {
		if s := tail(stderr.Bytes(), outputTail); s != "" {
			return stdout.Bytes(), fmt.Errorf("%w; stderr: %q", err, s)
		}
		return stdout.Bytes(), err
	}
	return stdout.Bytes(), nil
}
