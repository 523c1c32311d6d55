package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gpufair/gpufair"
)

// TestRunNilArguments: nil arguments panicked; they are input errors.
func TestRunNilArguments(t *testing.T) {
	w, c := smallGavel(t, 4, 0)
	s := newFIFO(c, w.Types, 360)
	if _, err := Run(context.Background(), nil, c, s, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("Run(nil workload) error = %v, want ErrEmpty", err)
	}
	if _, err := Run(context.Background(), w, c, nil, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("Run(nil scheduler) error = %v, want ErrEmpty", err)
	}
	tp := gavelThroughputs(t)
	if _, err := Generate(nil, GenerateSettings{Jobs: 1}, rand.NewPCG(1, 1)); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("Generate(nil throughputs) error = %v, want ErrEmpty", err)
	}
	if _, err := Generate(tp, GenerateSettings{Jobs: 1}, nil); !errors.Is(err, gpufair.ErrEmpty) {
		t.Errorf("Generate(nil source) error = %v, want ErrEmpty", err)
	}
	if _, err := Generate(tp, GenerateSettings{Jobs: 1 << 40}, rand.NewPCG(1, 1)); !errors.Is(err, gpufair.ErrTooLarge) {
		t.Errorf("Generate(2^40 jobs) error = %v, want ErrTooLarge", err)
	}
}

// TestRunFarArrival: a job arriving at 1e22 s overflowed the round count
// and the run looped forever, past its context and Horizon.
func TestRunFarArrival(t *testing.T) {
	w, c := smallGavel(t, 2, 0)
	w.Jobs[1].Arrival = 1e22
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := Run(ctx, w, c, newFIFO(c, w.Types, 360), &Settings{Horizon: 3600})
	if !errors.Is(err, gpufair.ErrTooLarge) {
		t.Errorf("Run() error = %v, want ErrTooLarge", err)
	}
}
