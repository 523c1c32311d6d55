package alloc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/gen"
	"github.com/gpufair/gpufair/lp"
	"pgregory.net/rapid"
)

// propTol is the tolerance of identities between reports, computed in
// floating point from generated data of order 1 to 1000.
const propTol = 1e-9

// secondOpinionTol is how far the best single-row gain may exceed the Pareto
// LP's total: each LP may let a no-loss row lose within its feasibility
// tolerance (1e-7), and rows that value a type very differently turn that
// loss into a gain elsewhere amplified up to a few hundred times (see
// boughtGain).
const secondOpinionTol = 1e-4

// weightedSplit returns the allocation giving row i w_i/Σw of every type.
func weightedSplit(c alloc.Capacity, weights []float64) *alloc.Allocation {
	rows := make([]string, len(weights))
	var total float64
	for _, w := range weights {
		total += w
	}
	a := alloc.NewAllocation(rows, c)
	for i, w := range weights {
		for k, n := range c.Count {
			a.GPUs[i][k] = n * w / total
		}
	}
	return a
}

// TestPropertyWeightedSplitIsFairBaseline checks that the weighted equal
// split is sharing-incentive with every margin 0 (it is the baseline
// itself) and weighted-envy-free with no envy above 0 (i values j's split,
// scaled by w_i/w_j, exactly as its own).
func TestPropertyWeightedSplitIsFairBaseline(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := gen.Cluster(4).Draw(t, "cluster")
		n := rapid.IntRange(1, 6).Draw(t, "rows")
		weights := rapid.SliceOfN(gen.Weight(), n, n).Draw(t, "weights")
		vals := gen.Valuations(gen.Rates(n, len(c.Types), true).Draw(t, "rates"))
		a := weightedSplit(c, weights)
		r, err := alloc.Audit(context.Background(), a, c, vals, weights, &alloc.AuditSettings{SkipPareto: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range r.SharingIncentive.Margin {
			if math.Abs(m) > propTol {
				t.Fatalf("Margin[%d] = %v, want 0", i, m)
			}
		}
		if !r.SharingIncentive.Holds || !r.Envy.Holds || r.Envy.MaxEnvy > propTol {
			t.Fatalf("equal split: SI %v, EF %v with max envy %v", r.SharingIncentive.Holds, r.Envy.Holds, r.Envy.MaxEnvy)
		}
	})
}

// TestPropertySharingFromEnvy checks the identity that ties the two reports
// on a work-conserving allocation with additive valuations: since
// Σ_j u_i(x_j) = u_i(C) = (W/w_i)·u_i(share_i) and u_i(x_j) =
// (w_j/w_i)·u_i(x_i)·(1+Envy[i][j]),
//
//	1 + Margin[i] = W / Σ_j w_j·(1 + Envy[i][j]),
//
// so envy-freeness implies sharing incentive (every Envy ≤ 0 gives
// Margin ≥ 0), and a row short of its share envies someone.
func TestPropertySharingFromEnvy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := gen.Cluster(4).Draw(t, "cluster")
		n := rapid.IntRange(1, 6).Draw(t, "rows")
		a := gen.Allocation(c, n).Draw(t, "allocation")
		weights := rapid.SliceOfN(gen.Weight(), n, n).Draw(t, "weights")
		vals := gen.Valuations(gen.Rates(n, len(c.Types), false).Draw(t, "rates"))
		full := true
		for k, u := range a.Used() {
			full = full && math.Abs(u-c.Count[k]) <= propTol*c.Count[k]
		}
		si, err := alloc.SharingIncentive(a, c, vals, weights)
		if err != nil {
			t.Fatal(err)
		}
		ef, err := alloc.EnvyFreeness(a, vals, weights)
		if err != nil {
			t.Fatal(err)
		}
		if ef.Holds && full && !si.Holds {
			t.Fatalf("envy-free and work-conserving but not sharing-incentive: margins %v", si.Margin)
		}
		if !full {
			return
		}
		var W float64
		for _, w := range weights {
			W += w
		}
		for i := range n {
			if si.Own[i] == 0 {
				continue // relative envy is infinite or undefined
			}
			var s float64
			for j, e := range ef.Envy[i] {
				s += weights[j] * (1 + e)
			}
			if got, want := 1+si.Margin[i], W/s; math.Abs(got-want) > propTol*math.Max(1, want) {
				t.Fatalf("row %d: 1+Margin = %v, W/Σ w_j(1+Envy) = %v", i, got, want)
			}
		}
	})
}

// weightedSumMax returns an allocation maximising Σ_i λ_i·u_i(y) over the
// cluster: each type goes to a row with the largest λ_i·v_ik. With λ > 0 it
// is Pareto-efficient.
func weightedSumMax(c alloc.Capacity, lin []alloc.Linear, lambda []float64) *alloc.Allocation {
	a := alloc.NewAllocation(make([]string, len(lin)), c)
	for k, n := range c.Count {
		best := 0
		for i := range lin {
			if lambda[i]*lin[i][k] > lambda[best]*lin[best][k] {
				best = i
			}
		}
		a.GPUs[best][k] = n
	}
	return a
}

// secondOpinion decides Pareto efficiency with n other LPs: for each row
// j, maximise u_j(y) subject to u_i(y) ≥ u_i(x_i) for all i and capacity.
// It returns the largest relative gain max_j (u_j(y*) − u_j(x_j))/s_j.
func secondOpinion(t *rapid.T, a *alloc.Allocation, c alloc.Capacity, lin []alloc.Linear) float64 {
	n, m := len(lin), len(c.Count)
	best := 0.0
	for j := range n {
		model := lp.NewModel(lp.Maximize)
		y := model.AddGrid("y", n, m, 0, lp.Inf)
		for k := range m {
			model.AddConstraint("cap", y.ColTerms(k, nil), lp.LE, math.Max(c.Count[k], a.Used()[k]))
		}
		for i, l := range lin {
			keep := l.Value(a.GPUs[i])
			if keep < 1e-12*l.Value(c.Count) {
				keep = 0 // as ParetoEfficiency takes it: lp refuses a subnormal bound
			}
			model.AddConstraint("keep", y.RowTerms(i, l), lp.GE, keep)
		}
		for _, tm := range y.RowTerms(j, lin[j]) {
			model.SetObjective(tm.Var, tm.Coef)
		}
		sol, err := lp.Solve(context.Background(), model, nil)
		if err != nil {
			t.Fatalf("second LP for row %d: %v", j, err)
		}
		own := lin[j].Value(a.GPUs[j])
		var share float64
		for k, r := range lin[j] {
			share += r * c.Count[k] / float64(n)
		}
		s := math.Max(own, share)
		if s > 0 {
			best = math.Max(best, (sol.Objective-own)/s)
		}
	}
	return best
}

// TestPropertyParetoAgreesWithSecondLP checks ParetoEfficiency against n
// single-row LPs on tiny instances (a random allocation, or a weighted-sum
// maximiser, which is Pareto-efficient), and that every witness is feasible
// and dominates. Cases within 1e-5 of the boundary are not judged.
func TestPropertyParetoAgreesWithSecondLP(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := gen.Cluster(3).Draw(t, "cluster")
		n := rapid.IntRange(1, 4).Draw(t, "rows")
		lin := gen.Linear(gen.Rates(n, len(c.Types), true).Draw(t, "rates"))
		var a *alloc.Allocation
		if rapid.Bool().Draw(t, "efficient") {
			lambda := rapid.SliceOfN(rapid.Float64Range(0.1, 10), n, n).Draw(t, "lambda")
			a = weightedSumMax(c, lin, lambda)
		} else {
			a = gen.Allocation(c, n).Draw(t, "allocation")
		}
		r, err := alloc.ParetoEfficiency(context.Background(), a, c, lin, nil)
		if err != nil {
			t.Fatal(err)
		}
		other := secondOpinion(t, a, c, lin)
		switch {
		case other > 1e-5 && r.Holds:
			t.Fatalf("Holds, but row LPs find a relative gain of %v", other)
		case other < 1e-9 && !r.Holds:
			t.Fatalf("not Holds (gain %v), but row LPs find none (%v)", r.Gain, other)
		}
		if r.Holds {
			return
		}
		if err := r.Witness.Validate(c); err != nil {
			t.Fatalf("witness invalid: %v", err)
		}
		var sum float64
		for i, l := range lin {
			before, after := l.Value(a.GPUs[i]), l.Value(r.Witness.GPUs[i])
			if r.Gains[i] < -alloc.AxiomTol {
				t.Fatalf("witness lowers row %d from %v to %v (relative %v)", i, before, after, r.Gains[i])
			}
			sum += r.Gains[i]
		}
		if math.Abs(sum-r.Gain) > propTol*math.Max(1, r.Gain) || r.Gain < other-secondOpinionTol {
			t.Fatalf("Gain %v, Σ Gains %v, best single-row gain %v", r.Gain, sum, other)
		}
	})
}

// TestPropertyByOwnerKeepsTotals checks that aggregating jobs by owner keeps
// every type's total and gives each user the sum of its jobs' bundles.
func TestPropertyByOwnerKeepsTotals(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := gen.Problem(gen.ProblemSizes{Types: 3, Users: 4, Jobs: 8}).Draw(t, "problem")
		a := gen.Allocation(p.Capacity, len(p.Jobs)).Draw(t, "allocation")
		a.Rows = p.JobIDs()
		owned, err := a.ByOwner(p.Jobs, p.Tenants)
		if err != nil {
			t.Fatal(err)
		}
		for k, u := range a.Used() {
			if math.Abs(owned.Used()[k]-u) > propTol*math.Max(1, u) {
				t.Fatalf("type %d: %v GPUs by job, %v by owner", k, u, owned.Used()[k])
			}
		}
		vals, err := alloc.OwnerValuations(p.Jobs, p.Tenants, jobLinear(p))
		if err != nil {
			t.Fatal(err)
		}
		// A user's best use of its jobs' GPUs is worth at least what its
		// jobs get from them as allocated.
		jv := p.Valuations()
		for u, user := range p.Tenants {
			var got float64
			for i, j := range p.Jobs {
				if j.Owner == user.ID {
					got += jv[i].Value(a.GPUs[i])
				}
			}
			if best := vals[u].Value(owned.GPUs[u]); best < got*(1-propTol) {
				t.Fatalf("user %s: best use %v below its jobs' value %v", user.ID, best, got)
			}
		}
	})
}

func jobLinear(p *alloc.Problem) []alloc.Linear {
	out := make([]alloc.Linear, len(p.Jobs))
	for i, v := range p.Valuations() {
		out[i] = v.(alloc.Linear)
	}
	return out
}

// TestParetoRegressions holds cases rapid found: rows holding almost
// nothing used to put coefficients of 1e13 into the LP (s_i was u_i(x_i)
// alone), which CLP then failed to satisfy; rows valuing two types equally
// to 8 digits made the pure-Go simplex cycle between phases for 100,000
// iterations (it now counts pivots that do not lower the phase's best
// measure as degenerate, and the LP starts from x). Each case runs with
// the default backend and with lp.PureGo.
func TestParetoRegressions(t *testing.T) {
	for _, tc := range []struct {
		reason    string
		wantHolds bool
		count     []float64
		rates     [][]float64
		gpus      [][]float64
		rowCap    []float64
	}{
		{"rapid: near-equal rates, pure-Go cycling", false, []float64{2, 15, 1},
			[][]float64{{4.942302266335172, 0.26228611048125505, 1}, {0.4096853182003504, 0.5, 0.5}, {7.461568337286036, 1.3587267904901144, 1}, {1.3852648229556876, 0.49999999841315307, 3.0359633089968483}, {1, 9.770265151499114, 1.0000695704953424}, {2.4040752530299008, 0.08840904828123296, 0.42132131218825536}, {0.0625823380438301, 0, 0}, {0.1849813999073043, 1, 0}, {2.829863187513662, 1, 3.4790151015109467}, {1, 0.9999999733990993, 0.2946807261509895}, {0.0421644120707922, 0.04313065107117726, 0}, {0.03493807113611209, 2.4935456137036796, 0.054325052270716635}},
			[][]float64{{0.3044243773664252, 0.5441975066585119, 0.15137811597506287}, {0, 2, 0}, {0.25871876496658885, 0.7412812350334111, 0}, {0, 0.9086244262413318, 0.2871824771786476}, {0, 1, 0}, {0.26725823318046227, 1.7327417668195377, 0}, {0.24275368832707636, 0, 0}, {0, 1, 0}, {0, 0, 0.5614394068462896}, {0.926844934855697, 0.07315506514430305, 0}, {0, 3, 0}, {0, 4, 0}},
			[]float64{1, 2, 1, 2, 1, 2, 2, 1, 1, 1, 3, 4}},
		{"rapid: tiny holding, 3 types, the idle types valued by no one", true, []float64{1, 1, 1}, [][]float64{{math.E, 0, 0}, {math.E, 0, 0}, {math.E, 0, 0}, {math.E, 0, 0}},
			[][]float64{{0, 0, 0}, {0.9999999999999432, 0, 0}, {5.6843418860804784e-14, 0, 0}, {0, 0, 0}}, nil},
		{"rapid: tiny holding, idle GPUs", false, []float64{33}, [][]float64{{1.0157477085866857}, {math.E}, {math.E}, {math.E}},
			[][]float64{{1.0258460747536415e-13}, {0}, {0}, {0}}, nil},
		{"rapid: 6e-8 GPUs, half idle", false, []float64{1}, [][]float64{{math.E}, {math.E}, {math.E}},
			[][]float64{{5.960464122267716e-08}, {0}, {0.4999999701976794}}, nil},
		// Space sharing's makespan then total, with CLP: CLP's witness took
		// 1e-9 from rows that cannot gain (a full type), so the second LP,
		// giving those rows their loss back, is infeasible, while the
		// pure-Go simplex finds a gain of 0.63 that lowers no row.
		{"rapid: rows at their most lost by roundoff", false, []float64{41, 3, 42},
			[][]float64{{0.645648526427892, 0.6872892787909722, 1}, {2.2535347872132085, 0, 8.372897488127265}, {7.38905609893065, 2.3988752939670976, 0.1849813999073043}, {7.865609273944892, 0, 0.645648526427892}, {1.5488302986341331, 0.15335496684492847, 2.893595944171761}, {1.1331484530668263, 0, 0.4723665527410147}, {2.2535347872132085, 6.1257426618819855, 0.9394130628134758}, {0.645648526427892, 0, 0.10539922456186433}, {0.11219689052034373, 1.5488302986341331, 0}, {1.0644944589178595, 0, 1.0644944589178595}, {0.8824969025845955, 0, 0.9394130628134758}, {5.405948925141167, 6.941375821197036, 1.7550546569602985}, {1.3668379411737963, 0.9394130628134758, 4.770733181967603}, {0.1353352832366127, 0.36787944117144233, 0}, {2.718281828459045, 2.893595944171761, 0.26914634872918386}, {0.8290291181804003, 4.770733181967603, 1.2062302494209807}, {3.4903429574618414, 2.2535347872132085, 0.3049827687110593}, {1.2840254166877414, 1.0644944589178595, 0}, {0.4723665527410147, 0.1737739434504451, 0.9394130628134758}, {0.6872892787909722, 0.8824969025845955, 0.645648526427892}, {1.7550546569602985, 0, 0.44374731008107987}},
			[][]float64{{0, 0, 0.49999999999999994}, {1.9809767899055407e-12, 0, 1.9999999999980191}, {4.4149355549352314e-13, 0, 0.49999999999977923}, {1.999999999998538, 7.310242126624838e-13, 0}, {1.876120090422319e-12, 0, 0.999999999998124}, {1.999999999998538, 7.310242126630182e-13, 0}, {0.9999995097890321, 4.902109677778403e-07, 0}, {4, 0, 0}, {1.8381860305006354, 0.16181396949936436, 0}, {0, 0, 4}, {0, 0, 3}, {1, 0, 0}, {0, 0, 2}, {0.1618144597117939, 2.838185540288206, 0}, {4, 0, 0}, {0, 0, 3}, {3, 0, 0}, {1, 0, 0}, {0, 0, 2}, {3, 0, 0}, {3.9999999999999996, 0, 0}},
			[]float64{1, 2, 1, 2, 1, 2, 1, 4, 2, 4, 3, 1, 2, 3, 4, 3, 3, 1, 2, 3, 4}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			c := alloc.Capacity{Count: tc.count}
			for k := range tc.count {
				c.Types = append(c.Types, gen.TypeName(k))
			}
			a := alloc.NewAllocation(make([]string, len(tc.gpus)), c)
			a.GPUs = tc.gpus
			for _, b := range []lp.Backend{lp.Default, lp.PureGo} {
				checkParetoRegression(t, a, c, gen.Linear(tc.rates), &alloc.ParetoSettings{RowCap: tc.rowCap, LP: &lp.Settings{Backend: b}}, tc.wantHolds)
			}
		})
	}
}

// checkParetoRegression runs ParetoEfficiency with s and checks the
// verdict, and a witness's validity and gains when it fails.
func checkParetoRegression(t *testing.T, a *alloc.Allocation, c alloc.Capacity, vals []alloc.Linear, s *alloc.ParetoSettings, wantHolds bool) {
	t.Helper()
	r, err := alloc.ParetoEfficiency(context.Background(), a, c, vals, s)
	if err != nil {
		t.Fatalf("%v: %v", s.LP.Backend, err)
	}
	if r.Holds != wantHolds {
		t.Fatalf("%v: Holds = %v, want %v (gain %v)", s.LP.Backend, r.Holds, wantHolds, r.Gain)
	}
	if r.Holds {
		return
	}
	if err := r.Witness.Validate(c); err != nil {
		t.Fatal(err)
	}
	for i, g := range r.Gains {
		if g < -alloc.AxiomTol {
			t.Errorf("%v: Gains[%d] = %v, below −AxiomTol", s.LP.Backend, i, g)
		}
	}
}
