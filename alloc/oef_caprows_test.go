package alloc

import (
	"context"
	"math"
	"testing"

	"github.com/gpufair/gpufair/lp"
	"pgregory.net/rapid"
)

// genLadderLP draws capped cooperative OEF over classes that share job
// types: 1 to 3 job types (speedup rows) over 2 to 4 GPU types, each split
// into classes of caps per unit of weight drawn from a few values (so that
// caps repeat within and across job types, and some are 0 or +Inf),
// weights in {0.5, 1, 2}, with the capped sharing floors set.
func genLadderLP() *rapid.Generator[*oefLP] {
	return rapid.Custom(func(t *rapid.T) *oefLP {
		K := rapid.IntRange(2, 4).Draw(t, "gpu types")
		q := &oefLP{count: make([]float64, K)}
		for k := range K {
			q.count[k] = float64(rapid.IntRange(1, 8).Draw(t, "count"))
		}
		for range rapid.IntRange(1, 3).Draw(t, "job types") {
			s := []float64{1}
			for k := 1; k < K; k++ {
				s = append(s, rapid.Float64Range(1, 10).Draw(t, "speedup"))
			}
			for range rapid.IntRange(1, 5).Draw(t, "classes") {
				q.s = append(q.s, s)
				q.w = append(q.w, rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(t, "weight"))
				q.cap = append(q.cap, rapid.SampledFrom([]float64{0, 0.5, 1, 1.5, 2, 4, math.Inf(1)}).Draw(t, "cap"))
			}
		}
		q.capLimit = sum(q.count) / 0.5
		q.setSharingFloors()
		return q
	})
}

// TestCapLadderRowsImplyAll checks impliedEnvy's lemma against the full
// model: the LP with the capacity, cap and floor rows and only the envy
// rows impliedEnvy keeps has an optimum that breaks none of the C·(C-1)
// capped envy rows, and the full model's optimal value.
func TestCapLadderRowsImplyAll(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		q := genLadderLP().Draw(rt, "lp")
		l := q.capLadders()
		rows := q.sideRows()
		kept := 0
		for c := range q.s {
			for d := range q.s {
				if c != d && l.impliedEnvy(c, d) {
					rows = append(rows, envyPair{c, d})
					kept++
				}
			}
		}
		if n := len(q.s); kept > 2*n*len(l.ladder) {
			rt.Fatalf("impliedEnvy kept %d rows, more than 2·C·T = %d", kept, 2*n*len(l.ladder))
		}
		m := lp.NewModel(lp.Maximize)
		y := q.addCapacity(m)
		q.setThroughputObjective(m, y)
		for _, r := range rows {
			q.addRow(m.AddConstraint, y, r)
		}
		sol, err := solveWarmTwice(context.Background(), m, coopSettings(nil))
		if err != nil {
			rt.Fatal(err)
		}
		checkAgainstFullModel(rt, q, y.Values(sol), sol.Objective, "basis-rows")
	})
}

// TestCapLadderRowsCount checks the basis's size where every job type has
// every cap: across ladders only the rows between classes of equal caps,
// T·(T−1)·caps of them, and 2·(caps−1) along each ladder.
func TestCapLadderRowsCount(t *testing.T) {
	caps := []float64{0.5, 1, 2}
	const T = 3
	q := &oefLP{count: []float64{4, 4}, capLimit: 16}
	for j := range T {
		for _, b := range caps {
			q.s = append(q.s, []float64{1, float64(2 + j)})
			q.w = append(q.w, 1)
			q.cap = append(q.cap, b)
		}
	}
	l := q.capLadders()
	var along, across int
	for c := range q.s {
		for d := range q.s {
			if c == d || !l.impliedEnvy(c, d) {
				continue
			}
			if l.typ[c] == l.typ[d] {
				along++
			} else if q.cap[c] != q.cap[d] {
				t.Errorf("impliedEnvy(%d, %d) keeps a row across ladders between caps %v and %v", c, d, q.cap[c], q.cap[d])
			} else {
				across++
			}
		}
	}
	if want := T * 2 * (len(caps) - 1); along != want {
		t.Errorf("rows along ladders = %d, want %d", along, want)
	}
	if want := T * (T - 1) * len(caps); across != want {
		t.Errorf("rows across ladders = %d, want %d", across, want)
	}
}
