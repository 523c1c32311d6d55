package stride_test

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/stride"
)

// TestGavelPairPriorities: with PairPriorities each combination of the
// space-sharing allocation, a job alone or a pair, has a priority of its
// own (Gavel's Algorithm 1), and over 200 rounds each runs within one
// round of its share. Max-min co-locates a with b and a with c here.
func TestGavelPairPriorities(t *testing.T) {
	ss := alloc.SpaceSharing{Objective: alloc.SharingMaxMin, Pairs: []alloc.PairRate{
		{A: "a", B: "b", Type: "v100", RateA: 0.7, RateB: 0.6},
		{A: "a", B: "c", Type: "v100", RateA: 0.4, RateB: 0.9},
	}}
	res := solveOnOneV100(t, ss, "a", "b", "c")
	want := map[string]float64{}
	for i, id := range []string{"a", "b", "c"} {
		if x := res.Alone[i][0]; x > 1e-9 {
			want[id] = x
		}
	}
	for _, ps := range res.Pairs {
		want[combination(ps.A, ps.B)] = ps.Time
	}
	if len(want) != 3 || want["ab"] == 0 || want["ac"] == 0 {
		t.Fatalf("allocation %v, want b alone and two pairs", want)
	}
	const n = 200
	got := combinationShares(t, ss, stride.GavelSettings{PairPriorities: true}, n, "a", "b", "c")
	checkShares(t, got, want, 1.0/n)
}

// TestGavelPairPrioritiesSpreadClasses: with job types, the allocation's
// time for a pair of types is spread evenly over the pairs of their jobs,
// and each of them runs its part: a and b of type x each share with c and
// d of type y. The job-by-job pass (the default) gives each job its
// co-located share too, but through fewer pairs.
func TestGavelPairPrioritiesSpreadClasses(t *testing.T) {
	ss := alloc.SpaceSharing{Objective: alloc.SharingMaxMin, JobTypes: []string{"x", "x", "y", "y"}, Pairs: []alloc.PairRate{
		{A: "x", B: "y", Type: "v100", RateA: 0.7, RateB: 0.6},
		{A: "x", B: "x", Type: "v100", RateA: 0.45, RateB: 0.45},
	}}
	res := solveOnOneV100(t, ss, "a", "b", "c", "d")
	if len(res.Pairs) != 1 || res.Pairs[0].A != "x" || res.Pairs[0].B != "y" {
		t.Fatalf("pairs %v, want x with y only", res.Pairs)
	}
	y := res.Pairs[0].Time
	want := map[string]float64{"ac": y / 4, "ad": y / 4, "bc": y / 4, "bd": y / 4, "c": res.Alone[2][0], "d": res.Alone[3][0]}
	const n = 400
	got := combinationShares(t, ss, stride.GavelSettings{PairPriorities: true}, n, "a", "b", "c", "d")
	checkShares(t, got, want, 2.0/n)
	// Job by job: each job's co-located share is still y/2.
	byJob := combinationShares(t, ss, stride.GavelSettings{}, n, "a", "b", "c", "d")
	for _, id := range []string{"a", "b", "c", "d"} {
		shared := 0.0
		for k, x := range byJob {
			if len(k) == 2 && strings.Contains(k, id) {
				shared += x
			}
		}
		if math.Abs(shared-y/2) > 2.0/n {
			t.Errorf("job by job, %s shared %.4f of the rounds, want %.4f", id, shared, y/2)
		}
	}
}

// solveOnOneV100 solves ss over unit jobs ids on one V100.
func solveOnOneV100(t *testing.T, ss alloc.SpaceSharing, ids ...alloc.JobID) *alloc.SharingResult {
	t.Helper()
	_, types := oneV100()
	jobs := make([]alloc.Job, len(ids))
	for i, id := range ids {
		jobs[i] = unitJob(id, 1)
	}
	p, err := alloc.NewJobProblem(alloc.Capacity{Types: types, Count: []float64{1}}, nil, jobs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ss.Solve(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// combination names the jobs of a placement, in order: "a", "ab", ...
func combination(ids ...string) string {
	slices.Sort(ids)
	return strings.Join(ids, "")
}

// combinationShares runs unit jobs ids on one V100 for n rounds under ss,
// and returns the share of rounds each combination ran.
func combinationShares(t *testing.T, ss alloc.SpaceSharing, set stride.GavelSettings, n int, ids ...alloc.JobID) map[string]float64 {
	t.Helper()
	c, types := oneV100()
	s, err := stride.NewGavel(ss, c, types, &set)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := s.Apply(round.Arrive(0, unitJob(id, 1), 0)); err != nil {
			t.Fatal(err)
		}
	}
	share := map[string]float64{}
	for r := range n {
		d, err := s.Decide(context.Background(), float64(r)*stride.DefaultRound)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Placements {
			names := make([]string, len(p.Jobs))
			for i, id := range p.Jobs {
				names[i] = string(id)
			}
			share[combination(names...)] += 1 / float64(n)
		}
	}
	return share
}

// checkShares fails unless every combination of want ran within tol of
// its share, and no other ran more than tol.
func checkShares(t *testing.T, got, want map[string]float64, tol float64) {
	t.Helper()
	for k, x := range want {
		if math.Abs(got[k]-x) > tol {
			t.Errorf("%s ran %.4f of the rounds, its share %.4f", k, got[k], x)
		}
	}
	for k, x := range got {
		if _, ok := want[k]; !ok && x > tol {
			t.Errorf("%s ran %.4f of the rounds, outside the allocation", k, x)
		}
	}
}

// TestGavelPairPrioritiesSnapshot: the times pairs ran together and the
// pairs of the lease in force survive a snapshot, so a restored scheduler
// decides as the one that went on; times out of range are refused.
func TestGavelPairPrioritiesSnapshot(t *testing.T) {
	ss := alloc.SpaceSharing{Objective: alloc.SharingMaxMin, Pairs: []alloc.PairRate{
		{A: "a", B: "b", Type: "v100", RateA: 0.7, RateB: 0.6},
		{A: "a", B: "c", Type: "v100", RateA: 0.4, RateB: 0.9},
	}}
	c, types := oneV100()
	set := &stride.GavelSettings{PairPriorities: true}
	newScheduler := func() *stride.Gavel {
		s, err := stride.NewGavel(ss, c, types, set)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := newScheduler()
	if err := s.Apply(round.Arrive(0, unitJob("a", 1), 0), round.Arrive(0, unitJob("b", 1), 0), round.Arrive(0, unitJob("c", 1), 0)); err != nil {
		t.Fatal(err)
	}
	decide := func(s *stride.Gavel, r int) string {
		d, err := s.Decide(context.Background(), float64(r)*stride.DefaultRound)
		if err != nil {
			t.Fatal(err)
		}
		return runs(d)
	}
	for r := range 7 {
		decide(s, r)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	restored := newScheduler()
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for r := 7; r < 40; r++ {
		if a, b := decide(s, r), decide(restored, r); a != b {
			t.Fatalf("round %d: %q went on, %q restored", r, a, b)
		}
	}
	good, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	pairRan := func(st map[string]any) map[string]any { return st["pair_ran"].(map[string]any)["a"].(map[string]any) }
	for _, tc := range []struct {
		name, field string
		edit        func(st map[string]any)
	}{
		{"beyond the time shared", "pair_ran", func(st map[string]any) { pairRan(st)["b"] = []any{1e9} }},
		{"negative", "pair_ran", func(st map[string]any) { pairRan(st)["b"] = []any{-1.0} }},
		{"wrong number of types", "pair_ran", func(st map[string]any) { pairRan(st)["b"] = []any{0.0, 0.0} }},
		{"out of order", "pair_ran", func(st map[string]any) {
			st["pair_ran"].(map[string]any)["c"] = map[string]any{"b": []any{0.0}}
		}},
		{"mate's shared time beyond its Shared", "mates", func(st map[string]any) {
			for _, m := range st["mates"].(map[string]any) {
				m.(map[string]any)["shared"] = []any{1e9}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { refuseEditedSnapshot(t, s, good, tc.field, tc.edit) })
	}
}

// TestGavelGandivaPackingKeepsPairs: Gavel's Gandiva baseline realised by
// Gavel's mechanism. Four jobs that all gain by sharing, on one V100, run
// as two pairs drawn at random; when a fifth job arrives and the policy
// is solved again, the mechanism hands it the pairs in force, which stay,
// and each pair still runs as one placement. A restored scheduler decides
// alike.
func TestGavelGandivaPackingKeepsPairs(t *testing.T) {
	pol := alloc.GandivaPacking{Seed: 1}
	c, types := oneV100()
	ids := []alloc.JobID{"a", "b", "c", "d"}
	var pairs []alloc.PairRate
	for i, a := range append(ids, "e") {
		for _, b := range append(ids, "e")[i+1:] {
			pairs = append(pairs, alloc.PairRate{A: string(a), B: string(b), Type: "v100", RateA: 0.8, RateB: 0.8})
		}
	}
	pol.Pairs = pairs
	s, err := stride.NewGavel(pol, c, types, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := s.Apply(round.Arrive(0, unitJob(id, 1), 0)); err != nil {
			t.Fatal(err)
		}
	}
	seen := func(from, to int) map[string]bool {
		out := map[string]bool{}
		for r := from; r < to; r++ {
			d, err := s.Decide(context.Background(), float64(r)*stride.DefaultRound)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Placements) != 1 {
				t.Fatalf("round %d: %d placements on one GPU", r, len(d.Placements))
			}
			out[runs(d)] = true
		}
		return out
	}
	before := seen(0, 10)
	if len(before) != 2 {
		t.Fatalf("before the arrival: combinations %v, want two pairs", before)
	}
	for k := range before {
		if len(k) != 2 {
			t.Fatalf("before the arrival: combinations %v, want two pairs", before)
		}
	}
	if err := s.Apply(round.Arrive(10*stride.DefaultRound, unitJob("e", 1), 0)); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	after := seen(10, 40)
	for k := range after {
		if k != "e" && !before[k] {
			t.Errorf("after the arrival: %q ran, not one of the pairs in force %v", k, before)
		}
	}
	if !after["e"] {
		t.Errorf("after the arrival: combinations %v, want the new job alone among them", after)
	}
	restored, err := stride.NewGavel(pol, c, types, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	s = restored
	if again := seen(10, 40); !maps.Equal(again, after) {
		t.Errorf("restored: combinations %v, want %v", again, after)
	}
}
