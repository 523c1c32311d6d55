package sim

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
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

// TestPercentileOutOfRange: a negative, huge or NaN p indexed outside the
// slice and panicked; p is clamped to [0, 100], and NaN gives NaN.
func TestPercentileOutOfRange(t *testing.T) {
	x := []float64{1, 2, 3}
	for _, tc := range []struct{ p, want float64 }{{-10, 1}, {math.Inf(-1), 1}, {0, 1}, {50, 2}, {100, 3}, {150, 3}, {1e300, 3}, {math.Inf(1), 3}} {
		if got := Percentile(x, tc.p); got != tc.want {
			t.Errorf("Percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := Percentile(x, math.NaN()); !math.IsNaN(got) {
		t.Errorf("Percentile(NaN) = %v, want NaN", got)
	}
}

// TestMeasuredOutOfRange: a Result whose measured range lies outside its
// jobs sliced out of range and panicked; Measured keeps the jobs it holds.
func TestMeasuredOutOfRange(t *testing.T) {
	r := &Result{Jobs: make([]JobResult, 3)}
	for _, tc := range []struct{ from, to, want int }{{0, 3, 3}, {1, 2, 1}, {0, 5, 3}, {-1, 2, 2}, {4, 6, 0}, {2, 1, 0}} {
		r.MeasureFrom, r.MeasureTo = tc.from, tc.to
		if got := len(r.Measured()); got != tc.want {
			t.Errorf("Measured() of [%d, %d) of 3 jobs: %d jobs, want %d", tc.from, tc.to, got, tc.want)
		}
	}
	r.MeasureFrom, r.MeasureTo = 0, 5
	if s := r.Summary(); s.Finished != 3 {
		t.Errorf("Summary().Finished = %d, want the 3 jobs held", s.Finished)
	}
}

// TestNilAndEmptyInputs: calls on nil or empty input panicked or named no
// input: each now returns an *gpufair.InputError on
// the input, or the value that means nothing.
func TestNilAndEmptyInputs(t *testing.T) {
	inputError := func(t *testing.T, call string, err error, field string, sentinel error) {
		t.Helper()
		var ie *gpufair.InputError
		if !errors.As(err, &ie) || ie.Field != field || !errors.Is(err, sentinel) {
			t.Errorf("%s error = %v, want an InputError on %s wrapping %v", call, err, field, sentinel)
		}
	}
	t.Run("WriteCSV nil result", func(t *testing.T) {
		var b strings.Builder
		err := WriteCSV(&b, &Result{}, nil)
		inputError(t, "WriteCSV(nil)", err, "Result", gpufair.ErrEmpty)
		if b.Len() != 0 {
			t.Errorf("WriteCSV(nil) wrote %q, want nothing", b.String())
		}
	})
	t.Run("ReadTrace nil throughputs", func(t *testing.T) {
		// It reported the first line's job type as unmeasured.
		_, _, err := ReadTrace(strings.NewReader("A3C\tcmd\t-n\t1\t100\t0\t1\n"), nil, nil)
		inputError(t, "ReadTrace(nil tp)", err, "Throughputs", gpufair.ErrEmpty)
		_, _, err = ReadTrace(nil, gavelThroughputs(t), nil)
		inputError(t, "ReadTrace(nil reader)", err, "Reader", gpufair.ErrEmpty)
	})
	t.Run("Run on no servers", func(t *testing.T) {
		// It returned topology's error, naming no input.
		w, c := smallGavel(t, 2, 0)
		_, err := Run(context.Background(), w, topology.Cluster{}, newFIFO(c, w.Types, 360), nil)
		inputError(t, "Run(Cluster{})", err, "Cluster", gpufair.ErrEmpty)
		if !errors.Is(err, topology.ErrInvalid) {
			t.Errorf("Run(Cluster{}) error = %v, want it to wrap topology.ErrInvalid", err)
		}
	})
	t.Run("ProfileNoise nil job", func(t *testing.T) {
		f, err := ProfileNoise(0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := f(nil); got != nil {
			t.Errorf("ProfileNoise(0.5, 1)(nil) = %v, want nil", got)
		}
	})
	t.Run("Summary of no result", func(t *testing.T) {
		// A nil Result panicked, and an empty one had a makespan of −Inf.
		nan := math.NaN()
		want := Summary{
			AvgJCT: nan, P50JCT: nan, P95JCT: nan, P99JCT: nan, MaxJCT: nan,
			AvgRho: nan, P50Rho: nan, P95Rho: nan, P99Rho: nan, MaxRho: nan,
		}
		for _, r := range []*Result{nil, {}, {MeasureTo: 3}} {
			if diff := cmp.Diff(want, r.Summary(), cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("(%+v).Summary() mismatch (-want +got):\n%s", r, diff)
			}
		}
		wantApps := AppSummary{AvgJCT: nan, AvgRho: nan, P95Rho: nan, MaxRho: nan}
		var r *Result
		if diff := cmp.Diff(wantApps, r.AppSummary(), cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("(*Result)(nil).AppSummary() mismatch (-want +got):\n%s", diff)
		}
	})
}
