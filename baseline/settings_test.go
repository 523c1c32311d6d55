package baseline_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/round"
)

func TestRefusedSettings(t *testing.T) {
	c, ty := exampleCluster, exampleTypes
	for _, tc := range []struct {
		name  string
		make  func() error
		field string
		want  error
	}{
		{"negative round", func() error { _, err := baseline.NewSRTF(c, ty, &baseline.SRTFSettings{Round: -1}); return err }, "SRTFSettings.Round", gpufair.ErrValue},
		{"infinite round", func() error {
			_, err := baseline.NewOptimus(c, ty, &baseline.OptimusSettings{Round: math.Inf(1)})
			return err
		}, "OptimusSettings.Round", gpufair.ErrValue},
		{"NaN round", func() error {
			_, err := baseline.NewGandiva(c, ty, &baseline.GandivaSettings{Round: math.NaN()})
			return err
		}, "GandivaSettings.Round", gpufair.ErrValue},
		{"thresholds not increasing", func() error {
			_, err := baseline.NewTiresias(c, ty, &baseline.TiresiasSettings{Thresholds: []float64{100, 100}})
			return err
		}, "TiresiasSettings.Thresholds", gpufair.ErrValue},
		{"zero threshold", func() error {
			_, err := baseline.NewTiresias(c, ty, &baseline.TiresiasSettings{Thresholds: []float64{0}})
			return err
		}, "TiresiasSettings.Thresholds", gpufair.ErrValue},
		{"negative knob", func() error {
			_, err := baseline.NewTiresias(c, ty, &baseline.TiresiasSettings{PromoteKnob: -1})
			return err
		}, "TiresiasSettings.PromoteKnob", gpufair.ErrValue},
		{"converged at 1", func() error { _, err := baseline.NewSLAQ(c, ty, &baseline.SLAQSettings{Converged: 1}); return err }, "SLAQSettings.Converged", gpufair.ErrValue},
		{"unknown GPU type", func() error { _, err := baseline.NewSRTF(c, append(ty, "a100"), nil); return err }, "", gpufair.ErrUnknownType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			var ie *gpufair.InputError
			if !errors.Is(err, tc.want) || !errors.As(err, &ie) || (tc.field != "" && ie.Field != tc.field) {
				t.Fatalf("error = %v, want an *InputError on %q wrapping %v", err, tc.field, tc.want)
			}
		})
	}
}

// A loss curve that returns NaN is refused with a typed error, and the
// round is not taken.
func TestSLAQRefusesBadLoss(t *testing.T) {
	s, err := baseline.NewSLAQ(exampleCluster, exampleTypes, &baseline.SLAQSettings{Loss: func(j *round.Job, done float64) float64 {
		if j.ID == "mid" {
			return math.NaN()
		}
		return 1 / (1 + done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(exampleJobs()...); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Snapshot()
	_, err = s.Decide(t.Context(), 0)
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "SLAQSettings.Loss" || ie.ID != "mid" {
		t.Fatalf("Decide = %v, want an *InputError on SLAQSettings.Loss[mid] wrapping ErrValue", err)
	}
	if after, _ := s.Snapshot(); string(after) != string(before) {
		t.Error("a refused Decide changed the state")
	}
	if s.Ledger().Rounds() != 0 {
		t.Errorf("%d rounds after a refused Decide, want 0", s.Ledger().Rounds())
	}
}

// A Converged so small that 1/Converged overflowed made the default curve's
// β +Inf and every loss at no work NaN, which ranked pairs at random. A job
// whose total work is that small for the default Converged is priced on
// the same curve, β·w = 1/Converged − 1 (Decide refused every round while
// it stayed, though Apply had taken it): done in its first round, its loss
// falls by 1 − Converged, more than any other job's.
func TestSLAQRefusesOverflowingCurve(t *testing.T) {
	_, err := baseline.NewSLAQ(exampleCluster, exampleTypes, &baseline.SLAQSettings{Converged: 1e-310})
	var ie *gpufair.InputError
	if !errors.Is(err, gpufair.ErrValue) || !errors.As(err, &ie) || ie.Field != "SLAQSettings.Converged" {
		t.Fatalf("NewSLAQ(Converged 1e-310) = %v, want an *InputError on SLAQSettings.Converged wrapping ErrValue", err)
	}
	s, err := baseline.NewSLAQ(exampleCluster, exampleTypes, nil)
	if err != nil {
		t.Fatal(err)
	}
	tiny := round.Arrive(0, alloc.Job{ID: "tiny", Gang: 1, Weight: 1, Rates: []float64{1, 2}}, 1e-320)
	if err := s.Apply(append(exampleJobs(), tiny)...); err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide(t.Context(), 0)
	if err != nil {
		t.Fatalf("Decide = %v", err)
	}
	if !slices.ContainsFunc(d.Placements, func(p round.Placement) bool { return slices.Contains(p.Jobs, "tiny") }) {
		t.Errorf("decision %+v leaves out tiny, whose loss falls most", d.Placements)
	}
}
