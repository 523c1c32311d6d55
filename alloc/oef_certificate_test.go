package alloc_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
)

// genOEFCaseUpTo draws an instance as genOEFCase does, with up to n users.
func genOEFCaseUpTo(n int) *rapid.Generator[oefCase] {
	return rapid.Custom(func(t *rapid.T) oefCase {
		c := genOEFCase(true).Draw(t, "case")
		extra := rapid.IntRange(0, n-len(c.rates)).Draw(t, "extra")
		for range extra {
			K := len(c.count)
			base := rapid.Float64Range(0.5, 10).Draw(t, "base")
			r := []float64{base}
			for k := 1; k < K; k++ {
				r = append(r, base*rapid.Float64Range(1, 10).Draw(t, "speedup"))
			}
			c.rates = append(c.rates, r)
			c.weights = append(c.weights, rapid.SampledFrom([]float64{0.5, 1, 2, 3}).Draw(t, "weight"))
		}
		return c
	})
}

// TestOEFCertificateAgainstFullModel: the structured method's certificate
// holds (envy within 1e-6, gap within the 1e-5 that AllocateCertified
// promises: CLP has left 1.37e-6 on an optimal result), its throughput is the
// allocation's and the full model's optimum, and its bound is not below
// that optimum; the full model's own certificate holds too.
func TestOEFCertificateAgainstFullModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCaseUpTo(24).Draw(rt, "case")
		p := c.problem(rt)
		certified := func(m alloc.OEFMethod) (*alloc.Allocation, alloc.OEFCertificate) {
			a, cert, err := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{Method: m}}.AllocateCertified(context.Background(), p)
			if err != nil {
				rt.Fatalf("AllocateCertified(%v) error = %v", m, err)
			}
			if cert.Envy > 1e-6 || cert.Gap() > 1e-5 || math.IsInf(cert.Bound, 1) {
				rt.Fatalf("%v: certificate %+v (gap %v) is not exact", m, cert, cert.Gap())
			}
			return a, cert
		}
		_, full := certified(alloc.OEFFullModel)
		a, cert := certified(alloc.OEFStructured)
		if got := oefTotal(rt, p, a); math.Abs(got-cert.Throughput) > oefTol*max(1, got) {
			rt.Fatalf("certificate throughput %v, allocation's %v", cert.Throughput, got)
		}
		if math.Abs(cert.Throughput-full.Throughput) > oefTol*max(1, full.Throughput) {
			rt.Fatalf("structured throughput %v, full model %v", cert.Throughput, full.Throughput)
		}
		if cert.Bound < full.Throughput-oefTol*max(1, full.Throughput) {
			rt.Fatalf("bound %v below the full model's optimum %v", cert.Bound, full.Throughput)
		}
		oefEnvyFree(rt, p, a, c)
	})
}

// TestOEFCertificateNoisyAgainstFullModel: on noisy profiles, where
// the structured method seeds its rows from cells of near-identical rows
// (cellSeedRows: three types or more, 2% noise, so the cells at least
// halve the users), its certified throughput is the full model's optimum
// within the certificates' gap.
func TestOEFCertificateNoisyAgainstFullModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		checkStructuredAgainstFull(rt, genNoisyOEFCaseOf(3, 0.02).Draw(rt, "case"))
	})
}

// TestOEFCertificateNearTies: rates equal to 1e-9 in most places (a case
// TestOEFCertificateNoisyAgainstFullModel found) left the pure-Go
// simplex's bases accurate to 1e-5 only, and a cold solve of the cells'
// LP ran 111,000 iterations without an end; it now repeats such a run
// with strict pivots.
func TestOEFCertificateNearTies(t *testing.T) {
	const a, b, c = 0.62640380859375, 1.841953863173984, 5.812546248707349
	checkStructuredAgainstFull(t, oefCase{
		count:   []float64{7, 7, 1},
		weights: []float64{3, 0.5, 1, 0.5, 1, 2, 2, 0.5, 0.5, 3, 0.5, 2, 2, 1, 1, 1, 3, 3, 1, 0.5, 1, 1, 2, 1},
		rates: [][]float64{
			{0.6264038105233609, b, c}, {0.6264038085954591, b, 5.812470928086717},
			{0.6316673698020168, 1.830994669729794, c}, {0.6283931192569521, 1.859324025120966, c},
			{0.6279220631404314, 1.841953863464453, c}, {0.6242995653815334, 1.8787929404374637, 5.812546260934194},
			{0.6338064763773489, 1.8419538632486896, c}, {0.6184419610044642, 1.8419538631739827, c},
			{a, 1.8051147859105043, c}, {a, b, c},
			{0.6263976581683229, b, 5.81275204283146}, {a, 1.8419538631739845, 5.876111318958236},
			{a, b, c}, {a, 1.833519620922036, c},
			{0.6250038621210632, b, c}, {0.6169119832290288, b, c},
			{a, 1.8164275368010063, c}, {0.6264026663805613, 1.8687699365884092, 5.812485996528943},
			{a, b, 5.888818590611899}, {0.6265051005106083, 1.8435559043452627, c},
			{0.6264037882486589, b, c}, {0.6264038085937504, b, c},
			{0.6345978899320617, b, c}, {a, 1.8464958495574066, c},
		},
	})
}

// checkStructuredAgainstFull checks that cooperative OEF's structured
// method and its full model both return exact certificates, envy-free
// allocations, and the same throughput.
func checkStructuredAgainstFull(t oefT, c oefCase) {
	t.Helper()
	p := c.problem(t)
	var certs [2]alloc.OEFCertificate
	for i, m := range []alloc.OEFMethod{alloc.OEFFullModel, alloc.OEFStructured} {
		a, cert, err := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{Method: m}}.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatalf("AllocateCertified(%v) error = %v", m, err)
		}
		if cert.Envy > 1e-6 || cert.Gap() > 1e-5 {
			t.Fatalf("%v: certificate %+v (gap %v) is not exact", m, cert, cert.Gap())
		}
		oefEnvyFree(t, p, a, c)
		certs[i] = cert
	}
	// Each certificate proves its throughput optimal to a gap of 1e-5
	// (the full model's, too, may stop short by ~1e-7).
	if full, got := certs[0].Throughput, certs[1].Throughput; math.Abs(got-full) > 1e-5*max(1, full) {
		t.Fatalf("structured throughput %v, full model %v", got, full)
	}
}

// TestOEFCertifiedRefusesNonCooperative: there is no certificate for the
// non-cooperative mode.
func TestOEFCertifiedRefusesNonCooperative(t *testing.T) {
	p := oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {1, 3}})
	if _, _, err := (alloc.OEF{Mode: alloc.NonCooperative}).AllocateCertified(context.Background(), p); err == nil {
		t.Fatal("AllocateCertified(non-cooperative) error = nil, want an error")
	}
}

// genNoisyOEFCase draws users whose rows are a few job types' rows with up
// to 5% noise on every rate, the profiles EnvyTolerance is for.
func genNoisyOEFCase() *rapid.Generator[oefCase] { return genNoisyOEFCaseOf(2, 0.05) }

// genNoisyOEFCaseOf draws as genNoisyOEFCase does, with minTypes to 4 GPU
// types and noise up to the given fraction.
func genNoisyOEFCaseOf(minTypes int, noise float64) *rapid.Generator[oefCase] {
	return rapid.Custom(func(t *rapid.T) oefCase {
		K := rapid.IntRange(minTypes, 4).Draw(t, "types")
		types := rapid.IntRange(1, 4).Draw(t, "job types")
		n := rapid.IntRange(2, 24).Draw(t, "users")
		c := oefCase{count: make([]float64, K), rates: make([][]float64, n), weights: make([]float64, n)}
		for k := range K {
			c.count[k] = float64(rapid.IntRange(1, 8).Draw(t, "count"))
		}
		base := make([][]float64, types)
		for m := range base {
			b := rapid.Float64Range(0.5, 10).Draw(t, "base")
			base[m] = []float64{b}
			for k := 1; k < K; k++ {
				base[m] = append(base[m], b*rapid.Float64Range(1, 10).Draw(t, "speedup"))
			}
		}
		for i := range n {
			row := base[rapid.IntRange(0, types-1).Draw(t, "type")]
			c.rates[i] = make([]float64, K)
			for k, r := range row {
				c.rates[i][k] = r * (1 + rapid.Float64Range(-noise, noise).Draw(t, "noise"))
			}
			c.weights[i] = rapid.SampledFrom([]float64{0.5, 1, 2, 3}).Draw(t, "weight")
		}
		return c
	})
}

// TestOEFEnvyToleranceBound: with EnvyTolerance ε, no user values another
// user's bundle (per unit of weight) more than its own by over ε of its
// own value (or of 1, whichever is larger) plus the solver's 1e-6, checked
// here from the allocation itself, and the certificate reports that envy.
func TestOEFEnvyToleranceBound(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := genNoisyOEFCase().Draw(rt, "case")
		eps := rapid.SampledFrom([]float64{0.01, 0.05, 0.2}).Draw(rt, "ε")
		p := c.problem(rt)
		pol := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{EnvyTolerance: eps}}
		a, cert, err := pol.AllocateCertified(context.Background(), p)
		if err != nil {
			rt.Fatalf("AllocateCertified(ε=%v) error = %v", eps, err)
		}
		if err := a.Validate(p.Capacity); err != nil {
			rt.Fatalf("invalid allocation: %v", err)
		}
		if !math.IsInf(cert.Bound, 1) {
			// No two distinct rows within ε: the exact solve, certified.
			_, want, err := alloc.OEF{Mode: alloc.Cooperative}.AllocateCertified(context.Background(), p)
			if err != nil {
				rt.Fatal(err)
			}
			// The gap within the certificate's 1e-5 (certGapTol): CLP left
			// 7.3e-7 at the exact throughput on five users of one row.
			if got, exact := cert.Throughput, want.Throughput; math.Abs(got-exact) > oefTol*max(1, exact) || cert.Gap() > 1e-5 {
				rt.Fatalf("certified with Bound %v: throughput %v, exact %v, gap %v", cert.Bound, got, exact, cert.Gap())
			}
		}
		s := oefSpeedups(rt, p)
		b := oefUserBundles(p, a)
		limit := eps + 1e-6*(1+eps)*(1+eps)
		var worst float64
		for u := range b {
			own := dot(s[u], b[u]) / c.weight(u)
			for v := range b {
				envy := (dot(s[u], b[v])/c.weight(v) - own) / max(1, own)
				if envy > limit {
					rt.Fatalf("user %d envies user %d by %v of its own value, beyond ε = %v", u+1, v+1, envy, eps)
				}
				worst = max(worst, envy)
			}
		}
		if math.Abs(worst-max(cert.Envy, 0)) > oefTol {
			rt.Fatalf("certificate envy %v, measured %v", cert.Envy, worst)
		}
	})
}

// TestOEFEnvyToleranceExactWhereNothingMerges: where no two users' rows
// lie within the tolerance of each other but identical ones, EnvyTolerance
// solves the exact classes, and the result is the exact one, certified,
// with its binding rows; where two distinct rows do, it is not certified.
func TestOEFEnvyToleranceExactWhereNothingMerges(t *testing.T) {
	count := []float64{2, 2, 2}
	distinct := [][]float64{{1, 2, 4}, {1, 4, 2}, {1, 2, 4}, {1, 3, 9}}
	near := append(slices.Clone(distinct), []float64{1, 2.02, 4.04})
	for _, tc := range []struct {
		rates     [][]float64
		eps       float64
		certified bool
	}{
		{distinct, 0.01, true},
		{distinct, 0.2, true},
		{near, 0.01, true},  // 1% apart on two types: beyond √1.01
		{near, 0.05, false}, // within √1.05: one cell with user 1
	} {
		p := oefUsersProblem(t, count, nil, tc.rates)
		_, want, err := alloc.OEF{Mode: alloc.Cooperative}.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		_, got, err := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{EnvyTolerance: tc.eps}}.AllocateCertified(context.Background(), p)
		if err != nil {
			t.Fatalf("%d users, ε = %v: %v", len(tc.rates), tc.eps, err)
		}
		switch {
		case !tc.certified && !math.IsInf(got.Bound, 1):
			t.Errorf("%d users, ε = %v: Bound %v, want +Inf (rows merged)", len(tc.rates), tc.eps, got.Bound)
		case tc.certified && (math.IsInf(got.Bound, 1) || got.Gap() > 1e-7 || math.Abs(got.Throughput-want.Throughput) > oefTol || len(got.Binding) != len(want.Binding)):
			t.Errorf("%d users, ε = %v: certificate %+v, want the exact one %+v", len(tc.rates), tc.eps, got, want)
		}
	}
}

// TestOEFEnvyToleranceRefused: ε outside [0, 1), or positive in
// non-cooperative mode, is an input error naming the setting.
func TestOEFEnvyToleranceRefused(t *testing.T) {
	p := oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {1, 3}})
	for _, tc := range []struct {
		mode alloc.OEFMode
		eps  float64
	}{{alloc.Cooperative, -0.1}, {alloc.Cooperative, 1}, {alloc.Cooperative, math.NaN()}, {alloc.NonCooperative, 0.1}} {
		_, err := alloc.OEF{Mode: tc.mode, Settings: &alloc.OEFSettings{EnvyTolerance: tc.eps}}.Allocate(context.Background(), p)
		var in *gpufair.InputError
		if !errors.As(err, &in) || !errors.Is(err, gpufair.ErrValue) || in.Field != "OEF.Settings.EnvyTolerance" {
			t.Errorf("OEF{%v, ε=%v}.Allocate() error = %v, want an input error on OEF.Settings.EnvyTolerance", tc.mode, tc.eps, err)
		}
	}
}
