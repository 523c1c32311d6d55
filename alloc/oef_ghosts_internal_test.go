package alloc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/topology"
)

// TestGhostDualCertifies solves noisy instances, takes out the class that
// holds the most tight rows beyond its basic shares (a pool's anchor), and
// solves again warm with it as a ghost. The dual with the ghost's flows
// contracted (withoutGhosts) must certify the LP without the ghost at a
// cold solve's throughput. Dropping the ghost's flows instead must fail
// the certificate on some instance: the contraction is what carries the
// proof.
func TestGhostDualCertifies(t *testing.T) {
	ctx := context.Background()
	set := &lp.Settings{Backend: lp.PureGo}
	carried, dropFailed := 0, 0
	for seed := range uint64(6) {
		q := noisyClasses(seed, 60)
		_, d, err := q.solveScaled(ctx, set, (*oefLP).solveCoopRowGen)
		if err != nil {
			t.Fatal(err)
		}
		// The anchor: most tight rows beyond its basic shares.
		surplus := make([]int, len(q.s))
		for _, r := range d.basis.rows {
			surplus[r[0]]++
			surplus[r[1]]++
		}
		for _, c := range d.basis.cols {
			surplus[c[0]]--
		}
		g := 0
		for c := range surplus {
			if surplus[c] > surplus[g] {
				g = c
			}
		}
		// The classes but g, then g as a ghost.
		n := len(q.s) - 1
		at := func(c int) int {
			switch {
			case c == g:
				return n
			case c > g:
				return c - 1
			}
			return c
		}
		q2 := &oefLP{count: q.count}
		for c := range q.s {
			if c != g {
				q2.s, q2.w = append(q2.s, q.s[c]), append(q2.w, q.w[c])
			}
		}
		q2.addGhosts([]ghost{{job: "gone", speed: q.s[g]}})
		hint := &classBasis{types: d.basis.types}
		for _, c := range d.basis.cols {
			hint.cols = append(hint.cols, [2]int{at(c[0]), c[1]})
		}
		for _, r := range d.basis.rows {
			hint.rows = append(hint.rows, envyPair{at(r[0]), at(r[1])})
		}
		q2.hint, q2.warm = hint, slices.Clone(hint.rows)

		y2, d2, err := q2.solveScaled(ctx, set, (*oefLP).solveCoopRowGen)
		if err != nil {
			t.Fatal(err)
		}
		through := slices.ContainsFunc(d2.flows, func(f envyFlow) bool { return f.c == n || f.d == n })
		r, yr, dr := q2.withoutGhosts(y2, d2)
		if len(r.s) != n || len(yr) != n || r.ghosts != 0 {
			t.Fatalf("seed %d: withoutGhosts left %d classes, %d bundles, %d ghosts", seed, len(r.s), len(yr), r.ghosts)
		}
		_, cert := certifiedSolve(t, r, func() ([][]float64, coopDual, error) { return yr, dr, nil })
		_, ref := certifiedSolve(t, r, func() ([][]float64, coopDual, error) {
			return r.solveScaled(ctx, set, (*oefLP).solveCoopRowGen)
		})
		if !cert.exact() || math.Abs(cert.Throughput-ref.Throughput) > 1e-9*ref.Throughput {
			t.Errorf("seed %d: with a ghost: throughput %.12g, envy %.3g, gap %.3g; cold: throughput %.12g",
				seed, cert.Throughput, cert.Envy, cert.Gap(), ref.Throughput)
		}
		if !through {
			continue
		}
		carried++
		dropped := d2
		dropped.flows = slices.DeleteFunc(slices.Clone(d2.flows), func(f envyFlow) bool { return f.c == n || f.d == n })
		naive, err := r.certify(ctx, yr, dropped)
		if err != nil {
			t.Fatal(err)
		}
		if !naive.exact() {
			dropFailed++
		}
	}
	if carried == 0 || dropFailed == 0 {
		t.Errorf("ghosts carried flows in %d instances, and dropping them failed the certificate in %d: the test needs both", carried, dropFailed)
	}
}

// noisyClasses returns n classes drawn from six job types, each speedup
// moved by up to 2%, with weights 1 or 2, over four GPU types.
func noisyClasses(seed uint64, n int) *oefLP {
	rng := rand.New(rand.NewPCG(seed, 5))
	base := make([][]float64, 6)
	for m := range base {
		base[m] = []float64{1, 1.5 + rng.Float64(), 2 + 2*rng.Float64(), 3 + 3*rng.Float64()}
	}
	q := &oefLP{s: make([][]float64, n), w: make([]float64, n), count: []float64{5, 9, 9, 9}}
	for c := range q.s {
		b := base[rng.IntN(len(base))]
		q.s[c] = make([]float64, 4)
		for k := range q.s[c] {
			q.s[c][k] = b[k] * (1 + 0.02*(2*rng.Float64()-1))
		}
		q.s[c][0] = 1
		q.w[c] = float64(1 + rng.IntN(2))
	}
	return q
}

// TestGhostsFor: the departed jobs a basis names become ghosts where they
// hold more tight rows than shares and the basis has their speedups, the
// basis's own ghosts first, speedups in the problem's order of GPU types,
// and at most maxOEFGhosts, the latest.
func TestGhostsFor(t *testing.T) {
	p, _, _ := warmTestInstance(t) // jobs a, b, c, a2 over GPU types A, B, C
	b := OEFBasis{
		Shares: []OEFShare{{"gone1", "A"}, {"gone2", "A"}, {"gone2", "B"}, {"a", "A"}, {"gone4", "C"}},
		Tight: []OEFEnvyRow{
			{"a", "gone1"}, {"gone1", "b"}, {"c", "gone1"}, // 3 rows, 1 share: a ghost
			{"a", "gone2"}, {"gone2", "c"}, // 2 rows, 2 shares: none
			{"b", "gone3"},                 // 1 row, no share, a ghost before: a ghost, first
			{"a", "gone4"}, {"b", "gone4"}, // no speedups: none
		},
		Types: []topology.GPUType{"C", "A", "B"},
		Speedups: map[JobID][]float64{
			"a": {3, 1, 2}, "gone1": {6, 1, 4}, "gone2": {2, 1, 1.5}, "gone3": {9, 1, 5},
		},
		Ghosts: []JobID{"gone3"},
	}
	got := ghostsFor(p, b)
	want := []ghost{{"gone3", []float64{1, 5, 9}}, {"gone1", []float64{1, 4, 6}}}
	if !slices.EqualFunc(got, want, func(x, y ghost) bool { return x.job == y.job && slices.Equal(x.speed, y.speed) }) {
		t.Errorf("ghostsFor() = %v, want %v", got, want)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1} {
		b.Speedups["gone1"] = []float64{6, bad, 4}
		if got := ghostsFor(p, b); len(got) != 1 || got[0].job != "gone3" {
			t.Errorf("speedup %v: ghostsFor() = %v, want gone3 alone", bad, got)
		}
	}
	b.Types = []topology.GPUType{"C", "A", "Z"}
	if got := ghostsFor(p, b); got != nil {
		t.Errorf("speedups on other GPU types: ghostsFor() = %v, want none", got)
	}
	var many OEFBasis
	many.Types = p.Capacity.Types
	many.Speedups = map[JobID][]float64{}
	for i := range maxOEFGhosts + 6 {
		j := JobID(fmt.Sprintf("gone%03d", i))
		many.Tight = append(many.Tight, OEFEnvyRow{"a", j})
		many.Speedups[j] = []float64{1, 2, 3}
	}
	got = ghostsFor(p, many)
	if len(got) != maxOEFGhosts || got[0].job != "gone006" || got[len(got)-1].job != JobID(fmt.Sprintf("gone%03d", maxOEFGhosts+5)) {
		t.Errorf("%d ghosts named: kept %d, from %v to %v", maxOEFGhosts+6, len(got), got[0].job, got[len(got)-1].job)
	}
}
