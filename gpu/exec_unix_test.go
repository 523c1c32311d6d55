//go:build linux

package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpufair/gpufair/gpu"
)

// TestExecRunnerKillsLeftovers: a workload that started a process in the
// background and exited 0 left it running, on the GPU, through the next
// workload's measurement. It is killed once the workload ends.
func TestExecRunnerKillsLeftovers(t *testing.T) {
	needSh(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `sleep 30 >/dev/null 2>&1 & echo $! > "$1"; echo "rate: 5"`
	out, err := gpu.ExecRunner(context.Background(), []string{"sh", "-c", script, "sh", pidFile}, nil)
	if err != nil || strings.TrimSpace(string(out)) != "rate: 5" {
		t.Fatalf("ExecRunner() = %q, %v", out, err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the background process %d still runs 5 s after its workload ended", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running reports whether process pid exists and is not a zombie (one
// killed but not yet reaped by its new parent).
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
