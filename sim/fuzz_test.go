package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/internal/fuzzdata"
)

// FuzzRun runs a small Gavel workload whose arrivals, steps and settings
// come from arbitrary numbers (an arrival of 1e22 s once looped forever).
// Run must never panic, and must return within its context's deadline.
func FuzzRun(f *testing.F) {
	f.Add([]byte{3, 16, 32, 48, 1, 2, 3, 4, 5, 6})
	f.Add(append([]byte{2, 0}, fuzzdata.Bytes(1e22, 1e300)...))
	tp := gavelThroughputs(f)
	c, err := NewCluster(GavelTypes(), []int{4, 4, 4}, 4)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := fuzzdata.New(data)
		w, err := Generate(tp, GenerateSettings{Jobs: 1 + r.Int(4), Rate: r.Number()}, rand.NewPCG(uint64(r.Byte()), 1))
		if err != nil {
			return
		}
		for i := range w.Jobs {
			w.Jobs[i].Arrival = r.Number() * 100
			if r.Int(2) == 0 {
				w.Jobs[i].Steps = r.Number() * 1000
			}
		}
		set := &Settings{Round: r.Number() * 100, Horizon: 1e5}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		Run(ctx, w, c, newFIFO(c, w.Types, 360), set)
		if d := time.Since(start); d > 6*time.Second {
			t.Fatalf("Run took %v past a 5 s deadline", d)
		}
	})
}

// FuzzReadTrace reads arbitrary text as a trace: ReadTrace must not panic,
// must refuse with an error wrapping ErrTrace or gpufair.ErrEmpty, and
// what it reads must pass Workload.Validate (numbers that parsed but were
// out of range, NaN steps or a negative arrival, were once read).
func FuzzReadTrace(f *testing.F) {
	f.Add("A3C\tcmd\t-n\t1\t100\t0\t1\n")
	f.Add("A3C\tcmd\twd\t-n\t1\t100\t1\t2\t0\t30\n\nA3C\tcmd\t-n\t1\tNaN\t0\t1\r\n")
	f.Add("ResNet-18 (batch size 32)\tcmd\t-n\t1\t1e300\t-0\t2\n")
	tp := gavelThroughputs(f)
	f.Fuzz(func(t *testing.T, text string) {
		w, _, err := ReadTrace(strings.NewReader(text), tp, &TraceSettings{SkipUnmeasured: len(text)%2 == 0})
		if err != nil {
			if !errors.Is(err, ErrTrace) && !errors.Is(err, gpufair.ErrEmpty) {
				t.Fatalf("ReadTrace(%q) = %v, want ErrTrace or ErrEmpty", text, err)
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("ReadTrace(%q) read a workload that Validate refuses: %v", text, err)
		}
	})
}
