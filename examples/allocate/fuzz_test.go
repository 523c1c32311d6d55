package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzRequest feeds the command arbitrary input, seeded with the test
// requests. It must never panic (a throughput of 1e25 once ended in a Go
// crash dump), and every error is one line.
func FuzzRequest(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"problem": {"capacity": {"types": ["k80"], "count": [1e308]}, "jobs": [{"id": "j", "gang": 1, "weight": 1}], "throughputs": {"rows": ["j"], "types": ["k80"], "values": [[1e300]]}}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := run(ctx, bytes.NewReader(in), &bytes.Buffer{}, options{audit: true})
		if err != nil && strings.Contains(oneLine(err), "\n") {
			t.Fatalf("error spans lines: %q", oneLine(err))
		}
	})
}
