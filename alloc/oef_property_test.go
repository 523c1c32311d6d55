package alloc_test

import (
	"context"
	"math"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/internal/gen"
	"pgregory.net/rapid"
)

// oefCase is a random OEF instance with one job per user: rates[i] is user
// i's throughput row, positive, with type 0 the slowest for every user (OEF
// §2.3, footnote 1), so that speedups are relative to type 0.
type oefCase struct {
	count   []float64
	weights []float64
	rates   [][]float64
}

// oefMaxUsers bounds the users of a random instance: the full cooperative
// model has n² rows.
const oefMaxUsers = 12

// genOEFCase draws an instance. Rows repeat now and then, so that classes of
// interchangeable users occur; weighted adds weights in {0.5, 1, 2, 3}.
func genOEFCase(weighted bool) *rapid.Generator[oefCase] {
	return rapid.Custom(func(t *rapid.T) oefCase {
		n := rapid.IntRange(2, oefMaxUsers).Draw(t, "users")
		K := rapid.IntRange(2, 4).Draw(t, "types")
		c := oefCase{count: make([]float64, K), rates: make([][]float64, n)}
		for k := range K {
			c.count[k] = float64(rapid.IntRange(1, 8).Draw(t, "count"))
		}
		for i := range n {
			if i > 0 && rapid.IntRange(0, 4).Draw(t, "repeat") == 0 {
				c.rates[i] = c.rates[rapid.IntRange(0, i-1).Draw(t, "of")]
				continue
			}
			base := rapid.Float64Range(0.5, 10).Draw(t, "base")
			c.rates[i] = make([]float64, K)
			c.rates[i][0] = base
			for k := 1; k < K; k++ {
				c.rates[i][k] = base * rapid.Float64Range(1, 10).Draw(t, "speedup")
			}
		}
		if weighted {
			c.weights = make([]float64, n)
			for i := range n {
				c.weights[i] = rapid.SampledFrom([]float64{0.5, 1, 2, 3}).Draw(t, "weight")
			}
		}
		return c
	})
}

func (c oefCase) problem(t oefT) *alloc.Problem {
	return oefUsersProblem(t, c.count, c.weights, c.rates)
}

func (c oefCase) weight(i int) float64 {
	if c.weights == nil {
		return 1
	}
	return c.weights[i]
}

// TestOEFStructuredMatchesFullModel checks that the structured methods (the
// dual cutting planes of non-cooperative OEF, envy-row generation over
// classes of cooperative OEF) reach the full model's optimal total. The
// optimal vertex need not be unique, so the allocations themselves are
// checked for feasibility by the other properties, not compared.
func TestOEFStructuredMatchesFullModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		for _, mode := range []alloc.OEFMode{alloc.NonCooperative, alloc.Cooperative} {
			ref, err := alloc.OEF{Mode: mode, Settings: &alloc.OEFSettings{Method: alloc.OEFFullModel}}.Allocate(context.Background(), p)
			if err != nil {
				rt.Fatal(err)
			}
			full := oefTotal(rt, p, ref)
			fast := oefTotal(rt, p, allocateOEF(rt, p, mode, alloc.OEFStructured))
			if math.Abs(full-fast) > oefTol*max(1, full) {
				rt.Fatalf("OEF %v: structured total %v, full model %v", mode, fast, full)
			}
		}
	})
}

// TestOEFNonCooperativeEqualThroughput: every unit of weight gets the same
// normalised throughput.
func TestOEFNonCooperativeEqualThroughput(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		v := oefJobValues(rt, p, allocateOEF(rt, p, alloc.NonCooperative, alloc.OEFStructured))
		for i := range v {
			if a, b := v[i]/c.weight(i), v[0]/c.weight(0); math.Abs(a-b) > oefTol*max(1, b) {
				rt.Fatalf("throughput per weight of user %d = %v, user 1's = %v", i+1, a, b)
			}
		}
	})
}

// oefLinear returns the speedup valuations OEF allocates by, one per job
// (one per user in the one-job-per-user cases here).
func oefLinear(t oefT, p *alloc.Problem) []alloc.Linear {
	s := oefSpeedups(t, p)
	v := make([]alloc.Linear, len(s))
	for i, r := range s {
		v[i] = alloc.Linear(r)
	}
	return v
}

// TestOEFNonCooperativeParetoEfficient holds when every user runs on every
// type (the generator's rates are positive); TestOEFNonCooperativeIdleGPUs
// shows the limit.
func TestOEFNonCooperativeParetoEfficient(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		a := allocateOEF(rt, p, alloc.NonCooperative, alloc.OEFStructured)
		if rep := oefPareto(rt, p, a); !rep.Holds {
			rt.Fatalf("a Pareto improvement gains %v: %v", rep.Gain, rep.Gains)
		}
	})
}

// TestOEFNonCooperativeInflationDoesNotPay probes strategy-proofness as OEF
// defines it (§2.3.1, ERRATA.md): a user who reports every speedup at least
// as high as the truth never gains true normalised throughput. Speedups are
// relative to the slowest type, so the lie keeps the throughput there and
// raises the others (raising the slowest type's throughput lowers every
// speedup).
func TestOEFNonCooperativeInflationDoesNotPay(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		liar := rapid.IntRange(0, len(c.rates)-1).Draw(rt, "liar")
		truth := oefSpeedups(rt, p)[liar]
		honest := alloc.Linear(truth).Value(allocateOEF(rt, p, alloc.NonCooperative, alloc.OEFStructured).GPUs[liar])
		lie := make([]float64, len(truth))
		lie[0] = c.rates[liar][0]
		for k := 1; k < len(lie); k++ {
			lie[k] = c.rates[liar][k] * rapid.Float64Range(1, 3).Draw(rt, "inflate")
		}
		rates := append([][]float64(nil), c.rates...)
		rates[liar] = lie
		lied := oefUsersProblem(rt, c.count, c.weights, rates)
		gained := alloc.Linear(truth).Value(allocateOEF(rt, lied, alloc.NonCooperative, alloc.OEFStructured).GPUs[liar])
		if gained > honest+oefTol*max(1, honest) {
			rt.Fatalf("user %d inflates %v to %v and gains: %v > %v", liar+1, c.rates[liar], lie, gained, honest)
		}
	})
}

// oefEnvyFree reports EnvyFreeness per unit of weight under the speedup
// valuations.
func oefEnvyFree(t oefT, p *alloc.Problem, a *alloc.Allocation, c oefCase) *alloc.EnvyReport {
	t.Helper()
	rep, err := alloc.EnvyFreeness(a, linearVals(oefLinear(t, p)), c.weights)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestOEFCooperativeFairAndEfficient: envy-free and sharing-incentive per
// unit of weight (Theorem 5.1), and at least as efficient as the envy-free
// allocations the test can build: the equal split per unit of weight, and
// the non-cooperative allocation whenever it happens to be envy-free.
func TestOEFCooperativeFairAndEfficient(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		p := c.problem(rt)
		a := allocateOEF(rt, p, alloc.Cooperative, alloc.OEFStructured)
		if env := oefEnvyFree(rt, p, a, c); !env.Holds {
			rt.Fatalf("user %d envies user %d by %v", env.Envier+1, env.Envied+1, env.MaxEnvy)
		}
		si, err := alloc.SharingIncentive(a, p.Capacity, linearVals(oefLinear(rt, p)), c.weights)
		if err != nil {
			rt.Fatal(err)
		}
		if !si.Holds {
			rt.Fatalf("user %d gets %v, below its equal share %v", si.Worst+1, si.Own[si.Worst], si.Share[si.Worst])
		}
		total := oefTotal(rt, p, a)
		var equalSplit float64
		for _, v := range si.Share {
			equalSplit += v
		}
		if total < equalSplit-oefTol*max(1, total) {
			rt.Fatalf("total %v below the equal split's %v", total, equalSplit)
		}
		nc := allocateOEF(rt, p, alloc.NonCooperative, alloc.OEFStructured)
		if oefEnvyFree(rt, p, nc, c).Holds && oefTotal(rt, p, nc) > total+oefTol*max(1, total) {
			rt.Fatalf("an envy-free allocation totals %v > %v", oefTotal(rt, p, nc), total)
		}
	})
}

// TestOEFNonCooperativeAdjacentTypes is Theorem 5.2 where it holds: when
// speedup ratios are consistently ordered across users (user i's
// s_{k+1}/s_k ≤ user j's for every k when i < j), every user's types form an
// interval of the types sorted slowest to fastest. The order must be
// strict: with equal ratios, trading between the two types is neutral and
// non-adjacent optima exist.
func TestOEFNonCooperativeAdjacentTypes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 3*oefMaxUsers).Draw(rt, "users")
		K := rapid.IntRange(2, 5).Draw(rt, "types")
		ratio := make([][]float64, K-1) // ratio[k]: ascending over users
		for k := range ratio {
			ratio[k] = make([]float64, n)
			for i := range n {
				ratio[k][i] = rapid.Float64Range(1.01, 3).Draw(rt, "ratio")
			}
			sort.Float64s(ratio[k])
			for i := range n {
				ratio[k][i] += 0.01 * float64(i)
			}
		}
		rates := make([][]float64, n)
		for i := range n {
			rates[i] = make([]float64, K)
			rates[i][0] = 1
			for k := 1; k < K; k++ {
				rates[i][k] = rates[i][k-1] * ratio[k-1][i]
			}
		}
		count := make([]float64, K)
		for k := range K {
			count[k] = float64(rapid.IntRange(1, 8).Draw(rt, "count"))
		}
		p := oefUsersProblem(rt, count, nil, rates)
		a := allocateOEF(rt, p, alloc.NonCooperative, alloc.OEFStructured)
		for i, b := range a.GPUs {
			first, last, held := -1, -1, 0
			for k, x := range b {
				if x > oefTol {
					if first < 0 {
						first = k
					}
					last = k
					held++
				}
			}
			if held > 0 && last-first+1 != held {
				rt.Fatalf("user %d holds non-adjacent types: %v", i+1, b)
			}
		}
	})
}

// TestOEFDeterministic: the same input gives a bit-identical allocation.
func TestOEFDeterministic(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCase(true).Draw(rt, "case")
		for _, mode := range []alloc.OEFMode{alloc.NonCooperative, alloc.Cooperative} {
			a := allocateOEF(rt, c.problem(rt), mode, alloc.OEFStructured)
			b := allocateOEF(rt, c.problem(rt), mode, alloc.OEFStructured)
			if diff := cmp.Diff(a, b); diff != "" {
				rt.Fatalf("OEF %v: two runs differ (-first +second):\n%s", mode, diff)
			}
		}
	})
}

// TestOEFNonCooperativeProbe runs ProbeStrategyProofness, inflations only,
// against non-cooperative OEF on random speedups: it finds no profitable
// report (OEF §2.3.1, §5; ERRATA.md: under-reports can pay, see
// TestOEFNonCooperativeUnderReportingPays). A report is a speedup row
// relative to type 0, whose speedup is 1 by definition, so the mechanism
// keeps type 0 at 1 and reads the others: the probe's scalings of type 0
// are then no-ops, not disguised deflations of every other type.
func TestOEFNonCooperativeProbe(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, oefMaxUsers).Draw(rt, "users")
		K := rapid.IntRange(2, 3).Draw(rt, "types")
		rates := gen.Rates(n, K, false).Draw(rt, "rates")
		truth := make([][]float64, n)
		for i, r := range rates {
			truth[i] = make([]float64, K)
			truth[i][0] = 1
			for k := 1; k < K; k++ {
				truth[i][k] = 1 + r[k] // type 0 is the slowest for every user
			}
		}
		count := make([]float64, K)
		for k := range count {
			count[k] = float64(rapid.IntRange(1, 8).Draw(rt, "count"))
		}
		mech := func(ctx context.Context, reported [][]float64) (*alloc.Allocation, error) {
			rows := make([][]float64, len(reported))
			for i, r := range reported {
				rows[i] = append([]float64{1}, r[1:]...)
			}
			return alloc.OEF{Mode: alloc.NonCooperative}.Allocate(ctx, oefUsersProblem(rt, count, nil, rows))
		}
		set := &alloc.ProbeSettings{Seed: rapid.Int64().Draw(rt, "seed"), Trials: 4, Factors: []float64{1.25, 2, 5},
			Rows: []int{rapid.IntRange(0, n-1).Draw(rt, "row")}}
		r, err := alloc.ProbeStrategyProofness(context.Background(), mech, truth, set)
		if err != nil {
			rt.Fatal(err)
		}
		if !r.Holds {
			rt.Fatalf("row %d gains %v reporting %v instead of %v", r.Row, r.Gain, r.Misreport, truth[r.Row])
		}
	})
}
