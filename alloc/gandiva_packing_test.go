package alloc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/topology"
)

func TestGandivaPackingKeepsPairsThatHelp(t *testing.T) {
	// Six one-GPU jobs on two GPUs: oversubscribed. j0 and j1 keep 80% of
	// their speed together (1.6 ≥ 1: kept); j2 and j3 keep 30% (0.6:
	// unpacked, their jobs drawn again, with j4 and j5; j2+j4 and j3+j5
	// fit, j4+j5 has no measurement and is never drawn).
	p := gavelProblem(t, []float64{2}, nil, [][]float64{{1}, {1}, {1}, {1}, {1}, {1}})
	g := GandivaPacking{
		Pairs: []PairRate{{A: "j0", B: "j1", Type: "t0", RateA: 0.8, RateB: 0.8}, {A: "j2", B: "j3", Type: "t0", RateA: 0.3, RateB: 0.3},
			{A: "j2", B: "j4", Type: "t0", RateA: 0.6, RateB: 0.6}, {A: "j3", B: "j5", Type: "t0", RateA: 0.6, RateB: 0.6}},
		Keep: []JobPair{{"j0", "j1"}, {"j2", "j3"}, {"j4", "gone"}},
		Seed: 3,
	}
	r, err := g.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := partnersOf(r, 0); !slices.Equal(got, []string{"j1"}) {
		t.Errorf("j0's partners = %v, want [j1]", got)
	}
	// Seed 3's draw does not pair j2 and j3 again (seeds 1 and 2 do).
	if got := partnersOf(r, 2); slices.Contains(got, "j3") {
		t.Errorf("j2's partners = %v: the pair that loses performance was kept", got)
	}
	if math.Abs(r.Throughput[0]-0.8*r.Partners[0][0].Time) > 1e-12 {
		t.Errorf("j0's throughput = %v, want 0.8 × its time %v", r.Throughput[0], r.Partners[0][0].Time)
	}
	combos := 0
	for i := range p.Jobs {
		if q := partnersOf(r, i); len(q) == 0 || q[0] > string(p.Jobs[i].ID) {
			combos++
		}
	}
	// Every combination gets 2/combos of the time on the one type.
	for i := range p.Jobs {
		time := slices.Max(r.Alone[i])
		for _, ps := range r.Partners[i] {
			time += ps.Time
		}
		if want := 2 / float64(combos); math.Abs(time-want) > 1e-12 {
			t.Errorf("job %d: time %v, want 2/%d", i, time, combos)
		}
	}
	// Not oversubscribed: nothing is packed, and the pairs end.
	two := gavelProblem(t, []float64{2}, nil, [][]float64{{1}, {1}})
	r, err = g.Solve(context.Background(), two)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float64{{1}, {1}}, r.Alone); diff != "" || len(r.Pairs) > 0 {
		t.Errorf("two jobs on two GPUs: pairs %v, time alone (-want +got):\n%s", r.Pairs, diff)
	}
}

// partnersOf returns the partners of job i, by ID, sorted and once each.
func partnersOf(r *SharingResult, i int) []string {
	var out []string
	for _, ps := range r.Partners[i] {
		out = append(out, ps.With)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestGandivaPackingBadInput(t *testing.T) {
	p := gavelProblem(t, []float64{1}, nil, [][]float64{{1}, {1}, {1}})
	for _, tc := range []struct {
		name  string
		g     GandivaPacking
		field string
		want  error
	}{
		{"labels", GandivaPacking{JobTypes: []string{"a"}}, "GandivaPacking.JobTypes", gpufair.ErrShape},
		{"pair type", GandivaPacking{Pairs: []PairRate{{A: "j0", B: "j1", Type: "x", RateA: 1, RateB: 1}}}, "GandivaPacking.Pairs", gpufair.ErrUnknownID},
		{"pair rate", GandivaPacking{Pairs: []PairRate{{A: "j0", B: "j1", Type: "t0", RateA: math.Inf(1), RateB: 1}}}, "GandivaPacking.Pairs", gpufair.ErrValue},
		{"self", GandivaPacking{Keep: []JobPair{{"j0", "j0"}}}, "GandivaPacking.Keep", gpufair.ErrValue},
		{"twice", GandivaPacking{Keep: []JobPair{{"j0", "j1"}, {"j2", "j0"}}}, "GandivaPacking.Keep", gpufair.ErrDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.g.Allocate(context.Background(), p)
			wantRefusal(t, err, tc.field, tc.want)
		})
	}
	if _, err := (GandivaPacking{}).Allocate(context.Background(), &Problem{}); err == nil {
		t.Error("an empty problem: no error")
	}
}

// TestGandivaPackingProperties: on random problems the allocation fits,
// pairs are of equal gangs and mutual, nothing is packed where the gangs
// fit the cluster, a kept pair that improves performance stays, every
// combination gets the same time (Count_k/(m·Gang), scaled to at most 1),
// and a second solve gives the same result.
func TestGandivaPackingProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genGavelProblem(8, true).Draw(t, "problem")
		n, nt := len(p.Jobs), p.Capacity.NumTypes()
		labels, pairs := drawLabelledPairs(t, p)
		var keep []JobPair
		perm := rapid.Permutation(p.JobIDs()).Draw(t, "keep order")
		for i := 0; i+1 < len(perm) && rapid.Bool().Draw(t, "keep"); i += 2 {
			keep = append(keep, JobPair{JobID(perm[i]), JobID(perm[i+1])})
		}
		g := GandivaPacking{JobTypes: labels, Pairs: pairs, Keep: keep, Seed: rapid.Uint64().Draw(t, "seed"), SumOverTypes: rapid.Bool().Draw(t, "sum")}
		r := solveTwice(t, p, g.Solve)
		index := map[string]int{}
		for i, j := range p.Jobs {
			index[string(j.ID)] = i
		}
		partner := make([]int, n)
		combos := 0
		for i := range p.Jobs {
			q := partnersOf(r, i)
			partner[i] = -1
			switch {
			case len(q) > 1:
				t.Fatalf("job %d shares with %v", i, q)
			case len(q) == 1:
				partner[i] = index[q[0]]
				if p.Jobs[partner[i]].Gang != p.Jobs[i].Gang {
					t.Fatalf("jobs %d and %d share with gangs %d and %d", i, partner[i], p.Jobs[i].Gang, p.Jobs[partner[i]].Gang)
				}
			}
			if partner[i] < i {
				combos++
			}
		}
		gangs, gpus := 0.0, 0.0
		for i, j := range p.Jobs {
			gangs += float64(j.Gang)
			if q := partner[i]; q >= 0 && !slices.Equal(partnersOf(r, q), []string{string(j.ID)}) {
				t.Fatalf("job %d shares with %d, which does not share with it", i, q)
			}
		}
		for _, c := range p.Capacity.Count {
			gpus += c
		}
		if gangs <= gpus && combos != n {
			t.Fatalf("%v GPUs for gangs of %v, yet %d combinations for %d jobs", gpus, gangs, combos, n)
		}
		kept := map[[2]int]bool{}
		for _, kp := range keep {
			a, b := index[string(kp.A)], index[string(kp.B)]
			kept[[2]int{min(a, b), max(a, b)}] = true
		}
		for a, b := range partner {
			if b > a && !kept[[2]int{a, b}] && !pairFits(p, pairs, labels, a, b) {
				t.Fatalf("jobs %d and %d drawn as a pair, though they do not fit together", a, b)
			}
		}
		for _, kp := range keep {
			a, b := index[string(kp.A)], index[string(kp.B)]
			if gangs > gpus && p.Jobs[a].Gang == p.Jobs[b].Gang && packingHelps(p, pairs, labels, a, b, g.SumOverTypes) && partner[a] != b {
				t.Fatalf("kept pair %v improves performance but was split", kp)
			}
		}
		for i, j := range p.Jobs {
			raw, sum := make([]float64, nt), 0.0
			for k, c := range p.Capacity.Count {
				raw[k] = c / (float64(combos) * float64(j.Gang))
				sum += raw[k]
			}
			for k := range raw {
				want := raw[k] / max(1, sum)
				got := r.Alone[i][k]
				for _, ps := range r.Partners[i] {
					if ps.Type == p.Capacity.Types[k] {
						got += ps.Time
					}
				}
				if math.Abs(got-want) > 1e-9 {
					t.Fatalf("job %d on type %d: time %v, want %v of %d combinations", i, k, got, want, combos)
				}
			}
		}
	})
}

// solveTwice solves p, checks that the result fits the cluster and that
// each job's times add up (checkPartners), and that a second solve gives
// the same result.
func solveTwice(t *rapid.T, p *Problem, solve func(context.Context, *Problem) (*SharingResult, error)) *SharingResult {
	r, err := solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	checkGavelFeasible(t, p, r.Allocation)
	checkPartners(t, p, r)
	again, err := solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, again); diff != "" {
		t.Fatalf("a second solve differs:\n%s", diff)
	}
	return r
}

// drawLabelledPairs draws a label among three job types for each job of
// p, and co-located rates in [0, 8] for some pairs of labels on some types.
func drawLabelledPairs(t *rapid.T, p *Problem) ([]string, []PairRate) {
	labels := make([]string, len(p.Jobs))
	for i := range labels {
		labels[i] = fmt.Sprint("k", rapid.IntRange(0, 2).Draw(t, "kind"))
	}
	var pairs []PairRate
	for a := range 3 {
		for b := a; b < 3; b++ {
			for k := range p.Capacity.NumTypes() {
				if rapid.Bool().Draw(t, "measured") {
					pairs = append(pairs, PairRate{A: fmt.Sprint("k", a), B: fmt.Sprint("k", b), Type: topology.GPUType(typeName(k)),
						RateA: rapid.Float64Range(0, 8).Draw(t, "rateA"), RateB: rapid.Float64Range(0, 8).Draw(t, "rateB")})
				}
			}
		}
	}
	return labels, pairs
}

// measuredRates looks up the co-located rates of jobs a and b on type k in
// pairs, by their labels, in either order; two jobs of one label each get
// the mean of the two rates.
func measuredRates(p *Problem, pairs []PairRate, labels []string, a, b, k int) (ra, rb float64, ok bool) {
	for _, pr := range pairs {
		if pr.Type != p.Capacity.Types[k] {
			continue
		}
		switch {
		case labels[a] == labels[b] && pr.A == labels[a] && pr.B == labels[a]:
			avg := (pr.RateA + pr.RateB) / 2
			return avg, avg, true
		case pr.A == labels[a] && pr.B == labels[b]:
			return pr.RateA, pr.RateB, true
		case pr.A == labels[b] && pr.B == labels[a]:
			return pr.RateB, pr.RateA, true
		}
	}
	return 0, 0, false
}

// pairFits reports whether jobs a and b have positive measured co-located
// rates on every type on which both run.
func pairFits(p *Problem, pairs []PairRate, labels []string, a, b int) bool {
	for k := range p.Capacity.Types {
		if p.Throughputs.At(a, k) == 0 || p.Throughputs.At(b, k) == 0 {
			continue
		}
		if ra, rb, _ := measuredRates(p, pairs, labels, a, b, k); !(ra > 0 && rb > 0) {
			return false
		}
	}
	return true
}

// packingHelps is the rule of GandivaPacking, written from its doc: over
// the types both jobs run on, the mean of the two jobs' co-located rates
// over their rates alone, a type without positive measured rates counting
// 0, is at least 1; with sum, their total is, and a type without positive
// rates fails the pair.
func packingHelps(p *Problem, pairs []PairRate, labels []string, a, b int, sum bool) bool {
	var terms []float64
	for k := range p.Capacity.Types {
		ta, tb := p.Throughputs.At(a, k), p.Throughputs.At(b, k)
		if ta == 0 || tb == 0 {
			continue
		}
		term := 0.0
		if ra, rb, _ := measuredRates(p, pairs, labels, a, b, k); ra > 0 && rb > 0 {
			term = ra/ta + rb/tb
		}
		terms = append(terms, term)
	}
	if len(terms) == 0 || sum && slices.Contains(terms, 0) {
		return false
	}
	if sum {
		total := 0.0
		for _, x := range terms {
			total += x
		}
		return total >= 1
	}
	mean := 0.0
	for _, x := range terms {
		mean += x / float64(len(terms))
	}
	return mean >= 1-1e-12
}
