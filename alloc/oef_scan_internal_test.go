package alloc

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// TestEnvyScansStop: the O(C²) scans between cooperative OEF's LP solves
// (the violated envy rows of a round, the final envy check and the
// certificate's envy) return context.Canceled on a done context. At 4,096
// classes × 10 types they took 1.6 s, 0.18 s and 0.18 s on a relaxation
// far from envy-free, past any deadline.
func TestEnvyScansStop(t *testing.T) {
	const classes, types = 300, 4
	r := rand.New(rand.NewPCG(1, 2))
	q := &oefLP{s: make([][]float64, classes), w: make([]float64, classes), count: make([]float64, types)}
	y := make([][]float64, classes)
	for c := range q.s {
		q.s[c], y[c], q.w[c] = make([]float64, types), make([]float64, types), 1
		for k := range types {
			q.s[c][k], y[c][k] = 1+9*r.Float64(), r.Float64()
		}
	}
	for k := range q.count {
		q.count[k] = classes
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.violatedEnvy(done, y, map[envyPair]bool{}, false, false, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("violatedEnvy() error = %v, want context.Canceled", err)
	}
	if _, err := q.envyFree(done, y, envyVerifyTol); !errors.Is(err, context.Canceled) {
		t.Errorf("envyFree() error = %v, want context.Canceled", err)
	}
	if _, err := q.certify(done, y, coopDual{}); !errors.Is(err, context.Canceled) {
		t.Errorf("certify() error = %v, want context.Canceled", err)
	}
	// Not done: the scans run to their end.
	rows, err := q.violatedEnvy(context.Background(), y, map[envyPair]bool{}, false, false, nil)
	if err != nil || len(rows) == 0 {
		t.Errorf("violatedEnvy() = %d rows, %v; want the rows of a random point", len(rows), err)
	}
}

// TestMostEnviedAsSorted: mostEnvied picks what sorting the envies and
// scanning them in order picks, ties and values within the gap included.
func TestMostEnviedAsSorted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 40).Draw(rt, "envies")
		worst := make([]envy, n)
		for i := range worst {
			// Few distinct values, some a hair apart, so that ties and
			// the gap both matter.
			v := float64(rapid.IntRange(1, 6).Draw(rt, "value")) + rapid.SampledFrom([]float64{0, 1e-12, 3e-10, 1e-3}).Draw(rt, "hair")
			worst[i] = envy{d: rapid.IntRange(0, 50).Draw(rt, "class"), v: v}
		}
		limit := rapid.IntRange(1, 5).Draw(rt, "n")
		gap := rapid.SampledFrom([]float64{0, 1e-9, 0.5}).Draw(rt, "gap")
		sorted := slices.Clone(worst)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].above(sorted[j]) })
		var want []envy
		for _, e := range sorted {
			if len(want) == limit {
				break
			}
			if len(want) == 0 || want[len(want)-1].v-e.v > gap {
				want = append(want, e)
			}
		}
		if got := mostEnvied(nil, worst, limit, gap); !slices.Equal(got, want) {
			rt.Fatalf("mostEnvied() = %v, want %v", got, want)
		}
	})
}
