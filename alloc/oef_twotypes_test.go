package alloc

import (
	"context"
	"math"
	"testing"

	"github.com/gpufair/gpufair/lp"
	"pgregory.net/rapid"
)

// TestTwoTypeEnvyRowsImplyAll checks twoTypeEnvyRows' single-crossing
// argument: the LP with only the neighbour rows has an optimum that breaks
// none of the C·(C-1) envy rows, and the full model's optimal value.
func TestTwoTypeEnvyRowsImplyAll(t *testing.T) {
	const maxClasses = 30
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, maxClasses).Draw(rt, "classes")
		q := &oefLP{count: []float64{
			float64(rapid.IntRange(1, 8).Draw(rt, "count0")),
			float64(rapid.IntRange(1, 8).Draw(rt, "count1")),
		}}
		for range n {
			q.s = append(q.s, []float64{1, rapid.Float64Range(1, 10).Draw(rt, "speedup")})
			q.w = append(q.w, rapid.SampledFrom([]float64{0.5, 1, 2}).Draw(rt, "weight"))
		}
		if rapid.IntRange(0, 4).Draw(rt, "with parallel") == 0 {
			// a multiple of another row: the same angle
			c := rapid.IntRange(0, n-1).Draw(rt, "of")
			q.s = append(q.s, []float64{2, 2 * q.s[c][1]})
			q.w = append(q.w, 1)
		}
		parallel := false
		for c := range q.s {
			for d := range c {
				parallel = parallel || q.s[c][1]*q.s[d][0] == q.s[d][1]*q.s[c][0]
			}
		}
		rows := q.twoTypeEnvyRows()
		if parallel {
			if rows != nil {
				rt.Fatalf("twoTypeEnvyRows() = %v with parallel rows, want nil", rows)
			}
			return
		}
		if len(rows) != 2*(len(q.s)-1) {
			rt.Fatalf("twoTypeEnvyRows() gave %d rows, want %d", len(rows), 2*(len(q.s)-1))
		}
		m := lp.NewModel(lp.Maximize)
		y := q.addBundles(m)
		q.setThroughputObjective(m, y)
		for _, r := range rows {
			m.AddConstraint("envy", q.envyTerms(y, r[0], r[1]), lp.GE, 0)
		}
		// The property is the LP's, so the pure-Go simplex solves it
		// under either build: CLP's presolved cold solve broke an implied
		// row by more than envyVerifyTol (a chain of neighbour rows each
		// met within its tolerance; the failfile under testdata). The
		// library never relies on it: its row generation checks every
		// row before it returns (solveCoopRowGen).
		set := coopSettings(nil)
		set.Backend = lp.PureGo
		sol, err := lp.Solve(context.Background(), m, set)
		if err != nil {
			rt.Fatal(err)
		}
		checkAgainstFullModel(rt, q, y.Values(sol), sol.Objective, "neighbour-rows")
	})
}

// checkAgainstFullModel fails rt unless x, the optimum of a model with only
// some envy rows (what names them), is envy-free and its objective obj is
// the full model's.
func checkAgainstFullModel(rt *rapid.T, q *oefLP, x [][]float64, obj float64, what string) {
	if free, err := q.envyFree(context.Background(), x, envyVerifyTol); err != nil || !free {
		rt.Fatalf("the %s optimum %v breaks an envy row (caps %v)", what, x, q.cap)
	}
	full, _, err := q.solveCoopFull(context.Background(), nil)
	if err != nil {
		rt.Fatal(err)
	}
	var want float64
	for c := range full {
		want += q.w[c] * dot(q.s[c], full[c])
	}
	// Within 1e-6: on rates tied to 5e-5 (2.58899 and 2.58887) with CLP,
	// the two LPs, each met to the solver's tolerances, ended 1.1e-7
	// apart (TestCapLadderRowsImplyAll's case, kept); a missing row
	// shows first as a broken envy row above.
	if math.Abs(obj-want) > 1e-6*max(1, want) {
		rt.Fatalf("%s optimum %v, full model %v", what, obj, want)
	}
}
