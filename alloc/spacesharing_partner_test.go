package alloc

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
)

// TestSharingPartnerFormulationExact: the partner formulation (a column per
// class and partner label) reaches the optimum of the class formulation
// (a column per pair of classes) and of Gavel's pairwise LP (every job its
// own label, pairs expanded to jobs), for every objective, with or without
// each job's own work. Its columns relax the pairwise LP, so equal optima
// mean its balance and degree rows leave nothing that pairs of distinct
// jobs cannot realise.
func TestSharingPartnerFormulationExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, labels, pairs, perJob := drawSharingInstance(t)
		steps := drawJobValues(t, len(p.Jobs), "steps", rapid.Float64Range(1, 100))
		arrival := drawJobValues(t, len(p.Jobs), "arrival", rapid.SampledFrom([]float64{0, 1, 2, 3}))
		for _, obj := range []SharingObjective{SharingMaxTotal, SharingMaxMin, SharingMaxMinThenTotal, SharingMinMakespan, SharingMinMakespanThenTotal, SharingFIFO, SharingWaterFilling} {
			solve := func(labels []string, pairs []PairRate, f sharingFormulation) *SharingResult {
				r, err := SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs, RemainingSteps: steps, Arrival: arrival, formulation: f}.Solve(context.Background(), p)
				if err != nil {
					t.Fatalf("objective %d, formulation %d: %v", obj, f, err)
				}
				checkGavelFeasible(t, p, r.Allocation)
				checkPartners(t, p, r)
				return r
			}
			partner := solve(labels, pairs, partnerFormulation)
			class := solve(labels, pairs, classFormulation)
			pairwise := solve(nil, perJob, classFormulation)
			value := func(thr []float64) float64 {
				if obj == SharingFIFO {
					return fifoValue(p, arrival, thr)
				}
				return objectiveValue(p, obj, steps, thr)
			}
			pv, cv, wv := value(partner.Throughput), value(class.Throughput), value(pairwise.Throughput)
			if !relClose(pv, cv, 1e-6) || !relClose(pv, wv, 1e-6) {
				t.Fatalf("objective %d: partner %v, class %v, pairwise %v", obj, pv, cv, wv)
			}
			checkPartnerBalance(t, labels, partner)
		}
	})
}

// drawJobValues draws one value per job from g: work left, arrivals.
func drawJobValues(t *rapid.T, n int, label string, g *rapid.Generator[float64]) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = g.Draw(t, label)
	}
	return v
}

// fifoValue is FIFO's objective, Σ_m Gang_m·(M − rank_m)·thr_m/best_m,
// ranks by arrival, ties in job order, best_m the job's fastest rate.
func fifoValue(p *Problem, arrival, thr []float64) float64 {
	rank := priorityRanks(len(thr), func(i int) float64 { return arrival[i] })
	v := 0.0
	for i, x := range thr {
		if best := slices.Max(p.Throughputs.Row(i)); best > 0 {
			v += float64(p.Jobs[i].Gang) * float64(len(thr)-rank[i]) * x / best
		}
	}
	return v
}

// objectiveValue is SpaceSharing's objective for per-job throughputs: the
// makespan's reciprocal, min thr/steps, for the makespan objectives.
func objectiveValue(p *Problem, obj SharingObjective, steps, thr []float64) float64 {
	if obj != SharingMinMakespan && obj != SharingMinMakespanThenTotal {
		return sharingValue(p, obj, thr)
	}
	v := make([]float64, len(thr))
	for i, x := range thr {
		v[i] = -x / steps[i]
	}
	return -maxOf(v)
}

// checkPartnerBalance checks that the time a-jobs spend beside b-jobs on a
// type is the time b-jobs spend beside a-jobs, and that no job spends more
// time beside its own label than the other jobs of that label together.
func checkPartnerBalance(t *rapid.T, labels []string, r *SharingResult) {
	type key struct{ a, b, k string }
	beside := map[key]float64{}
	for i, ps := range r.Partners {
		for _, s := range ps {
			beside[key{labels[i], s.With, string(s.Type)}] += s.Time
		}
	}
	for kk, x := range beside {
		if kk.a == kk.b {
			continue
		}
		if y := beside[key{kk.b, kk.a, kk.k}]; !relClose(x+1, y+1, 1e-6) {
			t.Fatalf("%s beside %s on %s: %v, the other way %v", kk.a, kk.b, kk.k, x, y)
		}
	}
	for i, ps := range r.Partners {
		for _, s := range ps {
			if s.With != labels[i] {
				continue
			}
			if all := beside[key{labels[i], labels[i], string(s.Type)}]; 2*s.Time > all+1e-6 {
				t.Fatalf("job %d beside its own label on %s for %v of %v in all", i, s.Type, s.Time, all)
			}
		}
	}
}

// TestSharingMinMakespanNoSharing: without pairs the policy is Makespan,
// the same makespan, and with pairs never a later one; the second stage
// keeps the makespan and adds to Σ thr/steps.
func TestSharingMinMakespanNoSharing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, labels, pairs, _ := drawSharingInstance(t)
		steps := drawJobValues(t, len(p.Jobs), "steps", rapid.Float64Range(1, 100))
		value := func(thr []float64) float64 { return objectiveValue(p, SharingMinMakespan, steps, thr) }
		shared, sv := checkPlainThenShared(t, p, Makespan{RemainingSteps: steps},
			SpaceSharing{Objective: SharingMinMakespan, JobTypes: labels, Pairs: pairs, RemainingSteps: steps}, value)
		// Then total: the same makespan, and Σ thr/steps at least the
		// first stage's.
		then, err := SpaceSharing{Objective: SharingMinMakespanThenTotal, JobTypes: labels, Pairs: pairs, RemainingSteps: steps}.Solve(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if tv := objectiveValue(p, SharingMinMakespan, steps, then.Throughput); !relClose(tv, sv, 1e-6) {
			t.Fatalf("then total: 1/makespan %v, the first stage's %v", tv, sv)
		}
		sum := func(thr []float64) float64 {
			s := 0.0
			for i, x := range thr {
				s += x / steps[i]
			}
			return s
		}
		if a, b := sum(then.Throughput), sum(shared.Throughput); a < b*(1-1e-6) {
			t.Fatalf("then total: Σ thr/steps %v, below the first stage's %v", a, b)
		}
	})
}

// TestSharingMinMakespanHand: two jobs of one type on one GPU, each with
// the work of an hour alone. Alone one after the other they take 2 h;
// co-located each at 0.8 of its rate alone they take 1.25 h together.
func TestSharingMinMakespanHand(t *testing.T) {
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{10}, {10}})
	pairs := []PairRate{{A: "a", B: "a", Type: "t0", RateA: 8, RateB: 8}}
	labels := []string{"a", "a"}
	for _, tc := range []struct {
		name  string
		pairs []PairRate
		want  float64 // makespan, in the rates' time unit
	}{
		{"alone", nil, 2 * 36000 / 10},
		{"co-located", pairs, 36000 / 8},
	} {
		r, err := SpaceSharing{Objective: SharingMinMakespan, JobTypes: labels, Pairs: tc.pairs, RemainingSteps: []float64{36000, 36000}}.Solve(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range r.Throughput {
			if got := 36000 / x; !relClose(got, tc.want, 1e-7) {
				t.Errorf("%s: job %d finishes at %v, want %v", tc.name, i, got, tc.want)
			}
		}
	}
}

// TestSharingJobInputRefusals: the makespan objectives' work left is
// checked as Makespan checks it, and SharingFIFO's arrivals as FIFO's.
func TestSharingJobInputRefusals(t *testing.T) {
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{10}, {10}})
	type row struct {
		s     SpaceSharing
		field string
		want  error
	}
	var rows []row
	for _, obj := range []SharingObjective{SharingMinMakespan, SharingMinMakespanThenTotal} {
		for _, steps := range [][]float64{nil, {1}, {1, 0}, {1, -1}, {1, math.NaN()}, {1, math.Inf(1)}, {1, 1e40}} {
			want := gpufair.ErrValue
			if len(steps) != 2 {
				want = gpufair.ErrShape
			}
			rows = append(rows, row{SpaceSharing{Objective: obj, RemainingSteps: steps}, "SpaceSharing.RemainingSteps", want})
		}
	}
	for _, arr := range [][]float64{{1}, {1, -1}, {1, math.NaN()}, {1, math.Inf(1)}} {
		want := gpufair.ErrValue
		if len(arr) != 2 {
			want = gpufair.ErrShape
		}
		rows = append(rows, row{SpaceSharing{Objective: SharingFIFO, Arrival: arr}, "SpaceSharing.Arrival", want})
	}
	for _, r := range rows {
		_, err := r.s.Solve(context.Background(), p)
		wantRefusal(t, err, r.field, r.want)
	}
	q := gavelProblem(t, []float64{1}, nil, [][]float64{{10}, {0}})
	_, err := SpaceSharing{Objective: SharingMinMakespan, RemainingSteps: []float64{1, 1}}.Solve(context.Background(), q)
	wantRefusal(t, err, "Throughputs", gpufair.ErrValue)
	var ie *gpufair.InputError
	if !errors.As(err, &ie) || ie.ID != string(q.Jobs[1].ID) {
		t.Errorf("error %v does not name the job that runs nowhere", err)
	}
}

// TestSharingFIFONoSharing: without pairs the policy reaches FIFO's
// optimum, and with pairs never less.
func TestSharingFIFONoSharing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, labels, pairs, _ := drawSharingInstance(t)
		arrival := drawJobValues(t, len(p.Jobs), "arrival", rapid.SampledFrom([]float64{0, 1, 2, 3}))
		checkPlainThenShared(t, p, FIFO{Arrival: arrival},
			SpaceSharing{Objective: SharingFIFO, JobTypes: labels, Pairs: pairs, Arrival: arrival},
			func(thr []float64) float64 { return fifoValue(p, arrival, thr) })
	})
}

// checkPlainThenShared checks that s without its pairs reaches the
// objective value of plain, the same policy without space sharing, and
// with them never less; it returns s's result with its pairs and value.
func checkPlainThenShared(t *rapid.T, p *Problem, plain Policy, s SpaceSharing, value func(thr []float64) float64) (*SharingResult, float64) {
	a, err := plain.Allocate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := value(throughputs(p, a))
	pairs := s.Pairs
	s.Pairs = nil
	none, err := s.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	s.Pairs = pairs
	shared, err := s.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := value(none.Throughput); !relClose(got, want, 1e-6) {
		t.Fatalf("%s without pairs: objective %v, %s's %v", s.Name(), got, plain.Name(), want)
	}
	sv := value(shared.Throughput)
	if sv < want*(1-1e-6) {
		t.Fatalf("%s with pairs: objective %v, below %v without", s.Name(), sv, want)
	}
	return shared, sv
}
