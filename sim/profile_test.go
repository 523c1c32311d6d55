package sim

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// told records the rates each arriving job was told, then defers to fifo.
type told struct {
	*fifo
	rates map[alloc.JobID][]float64
}

func (s *told) Apply(ev ...round.Event) error {
	for _, e := range ev {
		if e.Kind == round.Arrived {
			s.rates[e.Job.ID] = e.Job.Rates
		}
	}
	return s.fifo.Apply(ev...)
}

// TestProfiledRates runs the same jobs with their rates told right and
// told wrong (Settings.Profiled): the scheduler is told the profiled
// rates, and the jobs run at their own. FIFO places by which rates are
// positive, not by how large, so the runs are the same but for what the
// scheduler was told.
func TestProfiledRates(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"a", "b"}, Jobs: []Job{
		{Job: alloc.Job{ID: "A", Gang: 1, Rates: []float64{1, 0}}, Arrival: 0, Steps: 15},
		{Job: alloc.Job{ID: "B", Gang: 1, Rates: []float64{0, 2}}, Arrival: 3, Steps: 10},
	}}
	c := servers(topology.Server{Name: "s", Type: "a", GPUs: 1}, topology.Server{Name: "t", Type: "b", GPUs: 1})
	run := func(set *Settings) (*Result, map[alloc.JobID][]float64) {
		s := &told{fifo: newFIFO(c, w.Types, 10), rates: map[alloc.JobID][]float64{}}
		res, err := Run(context.Background(), w, c, s, set)
		if err != nil {
			t.Fatal(err)
		}
		return res, s.rates
	}
	right, rates := run(&Settings{Round: 10})
	if rates["A"][0] != 1 || rates["B"][1] != 2 {
		t.Fatalf("told %v without Profiled", rates)
	}
	halve := func(j *Job) []float64 {
		out := make([]float64, len(j.Rates))
		for k, r := range j.Rates {
			out[k] = r / 2
		}
		return out
	}
	wrong, rates := run(&Settings{Round: 10, Profiled: halve})
	if rates["A"][0] != 0.5 || rates["A"][1] != 0 || rates["B"][1] != 1 {
		t.Errorf("told %v, want every rate halved", rates)
	}
	for i, j := range wrong.Jobs {
		if r := right.Jobs[i]; j.Finish != r.Finish || j.Done != r.Done || j.Isolated != r.Isolated {
			t.Errorf("job %s: finish %v, done %v, isolated %v with halved profiles; %v, %v, %v without", j.ID, j.Finish, j.Done, j.Isolated, r.Finish, r.Done, r.Isolated)
		}
	}
	if w.Jobs[0].Rates[0] != 1 {
		t.Error("the workload changed")
	}

	for name, tc := range map[string]struct {
		profiled func(*Job) []float64
		is       error
		want     string
	}{
		"short":         {func(*Job) []float64 { return []float64{1} }, gpufair.ErrShape, "1 rates for 2 types"},
		"NaN":           {func(j *Job) []float64 { return []float64{math.NaN(), 1} }, gpufair.ErrValue, "rate NaN on a"},
		"runs nowhere":  {func(j *Job) []float64 { return []float64{0, 0} }, gpufair.ErrValue, "rate 0 on"},
		"runs anywhere": {func(j *Job) []float64 { return []float64{1, 1} }, gpufair.ErrValue, "where the job runs at 0"},
	} {
		_, err := Run(context.Background(), w, c, newFIFO(c, w.Types, 10), &Settings{Round: 10, Profiled: tc.profiled})
		var ie *gpufair.InputError
		if !errors.As(err, &ie) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), "Settings.Profiled") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want an InputError on Settings.Profiled wrapping %v containing %q", name, err, tc.is, tc.want)
		}
	}
}

func TestProfileNoise(t *testing.T) {
	j := &Job{Job: alloc.Job{ID: "j7", Rates: []float64{2, 0, 10, 4}}}
	noise, err := ProfileNoise(0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	got := noise(j)
	if again := noise(j); !slices.Equal(got, again) {
		t.Errorf("the same job told %v, then %v", got, again)
	}
	other, _ := ProfileNoise(0.1, 4)
	if slices.Equal(got, other(j)) {
		t.Errorf("seeds 3 and 4 told the same rates %v", got)
	}
	for k, r := range j.Rates {
		if r == 0 && got[k] != 0 || r > 0 && math.Abs(got[k]/r-1) > 0.1 || r > 0 && got[k] == r {
			t.Errorf("rate %v told as %v, want within 10%% (and moved), 0 kept", r, got[k])
		}
	}
	if j.Rates[0] != 2 {
		t.Error("the job's rates changed")
	}
	if none, _ := ProfileNoise(0, 3); !slices.Equal(none(j), j.Rates) {
		t.Errorf("no spread told %v", none(j))
	}
	for _, spread := range []float64{-0.1, 1, math.NaN()} {
		if _, err := ProfileNoise(spread, 1); !errors.Is(err, gpufair.ErrValue) {
			t.Errorf("spread %v: error %v", spread, err)
		}
	}
}

// spyPolicy records the rates of the jobs it was asked to allocate, then
// defers to max-min.
type spyPolicy struct{ rates map[string][]float64 }

func (spyPolicy) Name() string { return "spy" }

func (s spyPolicy) Allocate(ctx context.Context, p *alloc.Problem) (*alloc.Allocation, error) {
	for i, id := range p.Throughputs.Rows() {
		s.rates[id] = p.Throughputs.Values()[i]
	}
	return alloc.MaxMin{}.Allocate(ctx, p)
}

// TestIdealProfiled: Ideal's policy is told the profiled rates, and the jobs
// run at their own. Max-min is blind to a common scale of a job's rates, so
// halving them all changes no finish.
func TestIdealProfiled(t *testing.T) {
	w := &Workload{Types: []topology.GPUType{"k80", "v100"}, Jobs: []Job{
		{Job: alloc.Job{ID: "A", Gang: 1, Rates: []float64{1, 4}}, Steps: 4000},
		{Job: alloc.Job{ID: "B", Gang: 1, Rates: []float64{1, 2}}, Arrival: 100, Steps: 4000},
	}}
	c := servers(topology.Server{Name: "s", Type: "k80", GPUs: 1}, topology.Server{Name: "t", Type: "v100", GPUs: 1})
	halve := func(j *Job) []float64 { return []float64{j.Rates[0] / 2, j.Rates[1] / 2} }
	ideal := func(profiled func(*Job) []float64) (*Result, map[string][]float64) {
		spy := spyPolicy{rates: map[string][]float64{}}
		res, err := Ideal(context.Background(), w, c, spy, &Settings{Round: 60, Profiled: profiled})
		if err != nil {
			t.Fatal(err)
		}
		return res, spy.rates
	}
	base, told := ideal(nil)
	if !slices.Equal(told["A"], []float64{1, 4}) || !slices.Equal(told["B"], []float64{1, 2}) {
		t.Errorf("told %v without Profiled", told)
	}
	halved, told := ideal(halve)
	if !slices.Equal(told["A"], []float64{0.5, 2}) || !slices.Equal(told["B"], []float64{0.5, 1}) {
		t.Errorf("told %v, want the rates halved", told)
	}
	for i := range base.Jobs {
		if b, h := base.Jobs[i], halved.Jobs[i]; math.Abs(b.Finish-h.Finish) > 1e-6*b.Finish || h.Done != h.Steps {
			t.Errorf("job %s finishes at %v told halved rates, %v told its own (done %v)", b.ID, h.Finish, b.Finish, h.Done)
		}
	}
}
