package testcases

import (
	"io"
	"strings"
	"testing"
)

// CheckRun is the smoke test of an example program whose run function
// writes a walk-through to w: run must succeed, print every line of want
// somewhere in its output, and print the same output when run again.
func CheckRun(t *testing.T, run func(w io.Writer) error, want ...string) {
	t.Helper()
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	var again strings.Builder
	if err := run(&again); err != nil || again.String() != out {
		t.Errorf("second run differs (error %v)", err)
	}
}
