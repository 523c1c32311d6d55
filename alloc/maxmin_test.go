package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// mmProblem builds a job-level Problem over types with counts: jobs j0,
// j1, …, one throughput row each, with gangs and weights (nil: all 1).
func mmProblem(t fataler, types []topology.GPUType, count []float64, tput [][]float64, gang []int, weight []float64) *Problem {
	t.Helper()
	jobs := make([]Job, len(tput))
	ids := make([]string, len(tput))
	for i := range tput {
		ids[i] = fmt.Sprintf("j%d", i)
		jobs[i] = Job{ID: JobID(ids[i]), Gang: 1, Weight: 1}
		if gang != nil {
			jobs[i].Gang = gang[i]
		}
		if weight != nil {
			jobs[i].Weight = weight[i]
		}
	}
	tp, err := speedup.New(ids, types, tput)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(Capacity{Types: types, Count: count}, nil, jobs, tp)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// normalisedValues returns every job's Σ_k (T_mk/E_m)·GPUs_mk / w_m, the
// quantity MaxMin maximises the minimum of.
func normalisedValues(t testing.TB, p *Problem, a *Allocation) []float64 {
	t.Helper()
	rates, err := normalisedRates(p, false)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		v[i] = Linear(rates[i]).Value(a.GPUs[i]) / j.Weight
	}
	return v
}

func minOf(v []float64) float64 {
	m := math.Inf(1)
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// xhet is Gavel §4.1's example: three jobs on one V100 and one K80.
func xhet(t testing.TB) *Problem {
	return mmProblem(t, []topology.GPUType{"V100", "K80"}, []float64{1, 1},
		[][]float64{{40, 10}, {12, 4}, {100, 50}}, nil, nil)
}

var methods = []MaxMinMethod{Decomposed, FullLP}

func TestMaxMinGavelXhet(t *testing.T) {
	// The optimum is unique (ERRATA.md): X_het = [5/11 0; 5/11 1/11; 1/11
	// 10/11], printed by Gavel rounded as 0.45, 0.09 and 0.91, and every job
	// reaches 8/11 = 12/11 of its 1/n share's 2/3.
	want := [][]float64{{5.0 / 11, 0}, {5.0 / 11, 1.0 / 11}, {1.0 / 11, 10.0 / 11}}
	for _, m := range methods {
		t.Run(fmt.Sprint(m), func(t *testing.T) {
			p := xhet(t)
			a, err := MaxMin{Method: m}.Allocate(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Validate(p.Capacity); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, a.GPUs, cmpopts.EquateApprox(0, 1e-7)); diff != "" {
				t.Errorf("X_het mismatch (-want +got):\n%s", diff)
			}
			v := normalisedValues(t, p, a)
			if got := minOf(v); math.Abs(got-8.0/11) > 1e-7 {
				t.Errorf("level = %v, want 8/11", got)
			}
			if r := minOf(v) / (2.0 / 3); math.Abs(r-12.0/11) > 1e-7 {
				t.Errorf("gain over the isolated share = %v, want 12/11", r)
			}
		})
	}
}

func TestMaxMinAgnosticXhet(t *testing.T) {
	// Type-blind: every job gets 2/3 of a GPU, a third of each, whose
	// normalised value is exactly the isolated share's 2/3.
	p := xhet(t)
	a, err := MaxMinAgnostic{}.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{1.0 / 3, 1.0 / 3}, {1.0 / 3, 1.0 / 3}, {1.0 / 3, 1.0 / 3}}
	if diff := cmp.Diff(want, a.GPUs, cmpopts.EquateApprox(0, 1e-7)); diff != "" {
		t.Errorf("agnostic X_het mismatch (-want +got):\n%s", diff)
	}
	if got := minOf(normalisedValues(t, p, a)); math.Abs(got-2.0/3) > 1e-7 {
		t.Errorf("agnostic level = %v, want 2/3", got)
	}
}

func TestMaxMinGangsAndWeights(t *testing.T) {
	// One type, 6 GPUs: a job of weight 2 gets twice the GPUs of a job of
	// weight 1, whatever the gangs (Gavel's scale-factor adjustment: equal
	// GPU time, not equal wall time). 6 = 2x + x + x → x = 1.5.
	p := mmProblem(t, []topology.GPUType{"V100"}, []float64{6},
		[][]float64{{10}, {3}, {7}}, []int{4, 2, 1}, []float64{2, 1, 1})
	for _, m := range methods {
		a, err := MaxMin{Method: m}.Allocate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]float64{{3}, {1.5}, {1}}
		// job2 (gang 1) is capped at one GPU: the level is 1.5 only for the
		// others if the LP hands the slack out, which a single max-min LP
		// need not; check the level and the capped job.
		v := normalisedValues(t, p, a)
		if got := minOf(v); math.Abs(got-1) > 1e-7 {
			t.Errorf("%v: level = %v, want 1 (job2 saturated at 1 GPU)", m, got)
		}
		if math.Abs(a.GPUs[2][0]-want[2][0]) > 1e-7 {
			t.Errorf("%v: capped job got %v GPUs, want 1", m, a.GPUs[2][0])
		}
	}
}

func TestMaxMinErrors(t *testing.T) {
	types := []topology.GPUType{"V100", "K80"}
	for _, tc := range []struct {
		name    string
		p       func() *Problem
		wantErr error
		field   string
	}{
		{
			name:    "zero-throughput row",
			p:       func() *Problem { return mmProblem(t, types, []float64{1, 1}, [][]float64{{1, 2}, {0, 0}}, nil, nil) },
			wantErr: gpufair.ErrValue, field: "Throughputs",
		},
		{
			name: "zero-count type",
			p: func() *Problem {
				p := xhet(t)
				p.Capacity.Count = []float64{1, 0}
				return p
			},
			wantErr: gpufair.ErrValue, field: "Capacity.Count",
		},
		{
			name: "no jobs",
			p: func() *Problem {
				p := xhet(t)
				p.Jobs = nil
				return p
			},
			wantErr: gpufair.ErrEmpty, field: "Jobs",
		},
		{
			name: "NaN weight",
			p: func() *Problem {
				p := xhet(t)
				p.Jobs[1].Weight = math.NaN()
				return p
			},
			wantErr: gpufair.ErrValue, field: "Jobs.Weight",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pol := range []Policy{MaxMin{}, MaxMinAgnostic{}} {
				_, err := pol.Allocate(context.Background(), tc.p())
				var ie *gpufair.InputError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &ie) || ie.Field != tc.field {
					t.Errorf("%s: error = %v, want an *gpufair.InputError on %s wrapping %v", pol.Name(), err, tc.field, tc.wantErr)
				}
			}
		})
	}
	if _, err := (MaxMin{Method: 7}).Allocate(context.Background(), xhet(t)); !errors.Is(err, lp.ErrInvalidSettings) {
		t.Errorf("unknown method: error = %v, want lp.ErrInvalidSettings", err)
	}
}

// isInputErr reports whether err is an *gpufair.InputError on field wrapping
// sentinel.
func isInputErr(err, sentinel error, field string) bool {
	var ie *gpufair.InputError
	return errors.Is(err, sentinel) && errors.As(err, &ie) && ie.Field == field
}
