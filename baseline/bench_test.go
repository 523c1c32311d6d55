package baseline_test

import (
	"context"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/internal/testcases"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/topology"
)

// BenchmarkDecide times one round of each baseline at 1,000 GPUs and 2,000
// distinct jobs (testcases.RoundBench, the fixture of Gavel's round
// benchmark in package stride): each round, the jobs that ran in the round
// before report their progress, then the baseline decides.
func BenchmarkDecide(b *testing.B) {
	c, types, arrivals := testcases.RoundBench(2000)
	spread := map[alloc.JobID][]float64{}
	for _, e := range arrivals {
		s := slices.Clone(e.Job.Rates)
		for k := range s {
			s[k] *= 0.8 // a gang spread over servers runs 20% slower
		}
		spread[e.Job.ID] = s
	}
	for _, bc := range []struct {
		name string
		make func() (round.Scheduler, error)
	}{
		{"tiresias", func() (round.Scheduler, error) { return baseline.NewTiresias(c, types, nil) }},
		{"gandiva", func() (round.Scheduler, error) {
			return baseline.NewGandiva(c, types, &baseline.GandivaSettings{Spread: func(id alloc.JobID) []float64 { return spread[id] }})
		}},
		{"gandiva-no-time-slicing", func() (round.Scheduler, error) {
			return baseline.NewGandiva(c, types, &baseline.GandivaSettings{Spread: func(id alloc.JobID) []float64 { return spread[id] }, NoTimeSlicing: true})
		}},
		{"slaq", func() (round.Scheduler, error) { return baseline.NewSLAQ(c, types, nil) }},
		{"optimus", func() (round.Scheduler, error) { return baseline.NewOptimus(c, types, nil) }},
		{"srtf", func() (round.Scheduler, error) { return baseline.NewSRTF(c, types, nil) }},
		{"srsf", func() (round.Scheduler, error) {
			return baseline.NewSRTF(c, types, &baseline.SRTFSettings{Service: true})
		}},
	} {
		b.Run(bc.name+"/gpus=1000/jobs=2000", func(b *testing.B) {
			s, err := bc.make()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Apply(arrivals...); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			d, err := s.Decide(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			if d.GPUs() < 990 {
				b.Fatalf("the first round uses %d of 1,000 GPUs", d.GPUs())
			}
			rates := map[alloc.JobID][]float64{}
			for _, e := range arrivals {
				rates[e.Job.ID] = e.Job.Rates
			}
			done := map[alloc.JobID]float64{}
			now, used := 0.0, 0
			var evs []round.Event
			for b.Loop() {
				evs = progress(evs[:0], d, now, types, rates, done)
				now += baseline.DefaultRound
				if err := s.Apply(evs...); err != nil {
					b.Fatal(err)
				}
				if d, err = s.Decide(ctx, now); err != nil {
					b.Fatal(err)
				}
				used += d.GPUs()
			}
			b.ReportMetric(float64(used)/float64(b.N), "gpus-used/op")
		})
	}
}

// progress appends the progress each job of d made in its round to evs.
func progress(evs []round.Event, d *round.Decision, now float64, types []topology.GPUType, rates map[alloc.JobID][]float64, done map[alloc.JobID]float64) []round.Event {
	end := now + baseline.DefaultRound
	for _, p := range d.Placements {
		id := p.Jobs[0]
		done[id] = min(done[id]+rates[id][slices.Index(types, p.Type)]*baseline.DefaultRound, 1e6-1)
		evs = append(evs, round.Progress(end, id, done[id]))
	}
	return evs
}
