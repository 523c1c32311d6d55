package alloc_test

import (
	"context"
	"math"
	"testing"

	"pgregory.net/rapid"

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
// holds (envy within 1e-7, gap within 1e-6), its throughput is the
// allocation's and the full model's optimum, and its bound is not below
// that optimum; the full model's own certificate holds too.
func TestOEFCertificateAgainstFullModel(t *testing.T) {
	if !oefCLP() {
		t.Skip("the full-model reference and the dual bound need CLP (built with cgo)")
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := genOEFCaseUpTo(24).Draw(rt, "case")
		p := c.problem(rt)
		certified := func(m alloc.OEFMethod) (*alloc.Allocation, alloc.OEFCertificate) {
			a, cert, err := alloc.OEF{Mode: alloc.Cooperative, Settings: &alloc.OEFSettings{Method: m}}.AllocateCertified(context.Background(), p)
			if err != nil {
				rt.Fatalf("AllocateCertified(%v) error = %v", m, err)
			}
			if cert.Envy > 1e-7 || cert.Gap() > 1e-6 || math.IsInf(cert.Bound, 1) {
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

// TestOEFCertifiedRefusesNonCooperative: there is no certificate for the
// non-cooperative mode.
func TestOEFCertifiedRefusesNonCooperative(t *testing.T) {
	p := oefUsersProblem(t, []float64{1, 1}, nil, [][]float64{{1, 2}, {1, 3}})
	if _, _, err := (alloc.OEF{Mode: alloc.NonCooperative}).AllocateCertified(context.Background(), p); err == nil {
		t.Fatal("AllocateCertified(non-cooperative) error = nil, want an error")
	}
}
