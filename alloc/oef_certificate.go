package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gpufair/gpufair/lp"
)

const (
	// certEnvyTol is the envy, relative to max(1, the envious class's own
	// value), that a certified cooperative allocation may carry: CLP's
	// primal tolerance, which bounds the rows' slack in absolute terms
	// once lp has scaled them, so that a class valuing its bundle below
	// one slowest-GPU equivalent is held to it absolutely (envyVerifyTol's
	// convention).
	certEnvyTol = 1e-7
	// certGapTol is the duality gap, relative to the throughput, that a
	// certified cooperative allocation may leave: a few times CLP's dual
	// tolerance, which the prices carry into the bound over K types.
	certGapTol = 1e-6
)

// OEFCertificate is the evidence that a cooperative OEF allocation is what
// it claims, checked before Allocate returns it. Values are per unit of
// weight and in slowest-GPU equivalents, as in OEF's LP (see OEF).
//
// Envy is checked against every bundle handed out, so every one of the
// n·(n-1) envy rows is covered; Bound comes from a dual solution of the
// LP, repaired where the solver left it short (each price raised until
// every dual constraint holds), so Throughput ≤ optimum ≤ Bound holds by
// weak duality whatever the solver's accuracy.
type OEFCertificate struct {
	// Envy is the largest envy of one virtual user for another's bundle,
	// relative to its own value or 1, whichever is larger: max over v, u
	// of (s_v·y_u − s_v·y_v) / max(1, s_v·y_v). Zero or less means
	// envy-free.
	Envy float64
	// Throughput is the allocation's total normalised throughput,
	// Σ_v π_v·s_v·y_v, the LP's objective.
	Throughput float64
	// Bound is an upper bound on the optimal throughput proved by a dual
	// solution, or +Inf where none is proved (OEFSettings.EnvyTolerance).
	Bound float64
}

// Gap returns (Bound − Throughput)/Throughput: how far from optimal the
// allocation can be, relative to its throughput; +Inf without a bound.
func (c OEFCertificate) Gap() float64 {
	return (c.Bound - c.Throughput) / math.Max(c.Throughput, math.SmallestNonzeroFloat64)
}

// exact reports whether c certifies an exact result: envy within
// certEnvyTol and gap within certGapTol.
func (c OEFCertificate) exact() bool {
	return c.Envy <= certEnvyTol && c.Gap() <= certGapTol
}

// AllocateCertified returns cooperative OEF's allocation of p, as Allocate
// does, with the certificate that was checked before returning it: an
// exact result (the default) is envy-free to 1e-7 relative (see
// OEFCertificate.Envy) and optimal to a duality gap of 1e-6 relative, or
// Allocate fails (with the pure-Go backend, which gives no duals, only envy
// is checked and Bound is Throughput); with
// OEFSettings.EnvyTolerance ε > 0, envy is within ε (see there) and Bound
// is +Inf. Non-cooperative mode has no certificate and is refused.
func (o OEF) AllocateCertified(ctx context.Context, p *Problem) (*Allocation, OEFCertificate, error) {
	if o.Mode != Cooperative {
		return nil, OEFCertificate{}, fmt.Errorf("alloc: OEF: certificates are for cooperative mode, not %v", o.Mode)
	}
	return o.allocate(ctx, p)
}

// coopDual is a dual solution of cooperative OEF's LP over classes: a
// price per GPU type (capacity rows) and a multiplier per envy row, zero
// for the rows not listed.
type coopDual struct {
	price []float64
	flows []envyFlow
}

// envyFlow is the multiplier v ≥ 0 of class c's envy row against class d.
type envyFlow struct {
	c, d int
	v    float64
}

// rowDuals reads a coopDual from a solution of a model built by addBundles
// (whose first len(q.count) rows are the capacity rows) with envy rows
// rows[i] at ids[i]. lp reports duals as ∂objective/∂rhs: an envy row
// s_c·y_c − s_c·y_d ≥ 0 has a dual ≤ 0, the negated multiplier.
func (q *oefLP) rowDuals(sol *lp.Solution, rows []envyPair, ids []lp.Row) coopDual {
	if sol.RowDuals == nil {
		return coopDual{} // the pure-Go backend gives none
	}
	d := coopDual{price: append([]float64(nil), sol.RowDuals[:len(q.count)]...)}
	for i, r := range rows {
		if v := -sol.RowDuals[ids[i]]; v > 0 {
			d.flows = append(d.flows, envyFlow{r[0], r[1], v})
		}
	}
	return d
}

// certify returns the certificate of bundles y (per unit of weight, per
// class) with dual d: the envy over all pairs and the bound of the repaired
// dual.
//
// The dual constraint of y_ck (maximise Σ_c w_c·s_c·y_c subject to
// s_c·y_d − s_c·y_c ≤ 0 with multiplier λ_cd and Σ_c w_c·y_ck ≤ m_k with
// price p_k) is
//
//	w_c·p_k − s_ck·Σ_d λ_cd + Σ_e λ_ec·s_ek ≥ w_c·s_ck,
//
// and raising p_k by the shortfall over w_c mends it without breaking any
// other, so Σ_k m_k·p_k over the mended prices bounds the optimum.
func (q *oefLP) certify(y [][]float64, d coopDual) OEFCertificate {
	cert := OEFCertificate{Envy: q.maxEnvy(y), Bound: math.Inf(1)}
	for c, s := range q.s {
		cert.Throughput += q.w[c] * dot(s, y[c])
	}
	if d.price == nil {
		return cert
	}
	nk := len(q.count)
	out := make([]float64, len(q.s))
	in := make([]float64, len(q.s)*nk)
	for _, f := range d.flows {
		out[f.c] += f.v
		for k, r := range q.s[f.c] {
			in[f.d*nk+k] += f.v * r
		}
	}
	price := make([]float64, nk)
	for k, p := range d.price {
		price[k] = max(p, 0)
	}
	mended := append([]float64(nil), price...)
	for c, s := range q.s {
		for k, r := range s {
			short := q.w[c]*r - (q.w[c]*price[k] - r*out[c] + in[c*nk+k])
			if short > 0 {
				mended[k] = max(mended[k], price[k]+short/q.w[c])
			}
		}
	}
	cert.Bound = dot(mended, q.count)
	return cert
}

// maxEnvy returns the largest envy of a class for another's bundle,
// relative to max(1, its own value), checking each class against each distinct
// bundle (envy depends on the bundle only): O(C·B·K) for B bundles.
func (q *oefLP) maxEnvy(y [][]float64) float64 {
	bundles := groupRows(len(y), func(c int) []float64 { return y[c] })
	worst := math.Inf(-1)
	for c, s := range q.s {
		own := dot(s, y[c])
		for _, b := range bundles.rep {
			worst = max(worst, (dot(s, y[b])-own)/max(1, own))
		}
	}
	return worst
}

// errUncertified reports a cooperative result whose certificate failed
// even from the full model.
var errUncertified = errors.New("result failed its certificate")

// solveCoopCertified solves cooperative OEF over q by method and returns
// repaired bundles with their certificate. A structured result that fails
// its certificate is replaced by the full model's; one that still fails is
// an error wrapping lp.ErrNumerical.
func (q *oefLP) solveCoopCertified(ctx context.Context, method OEFMethod, set *lp.Settings) ([][]float64, OEFCertificate, error) {
	solve := q.solveCoopFull
	if method == OEFStructured {
		solve = q.solveCoopRowGen
	}
	y, d, err := solve(ctx, set)
	if err != nil {
		return nil, OEFCertificate{}, err
	}
	q.repair(y)
	cert := q.certify(y, d)
	if d.price == nil {
		// Without duals (the pure-Go backend) only envy is checked.
		cert.Bound = cert.Throughput
	}
	if !cert.exact() && method == OEFStructured {
		if y, d, err = q.solveCoopFull(ctx, set); err != nil {
			return nil, OEFCertificate{}, err
		}
		q.repair(y)
		if cert = q.certify(y, d); d.price == nil {
			cert.Bound = cert.Throughput
		}
	}
	if !cert.exact() {
		return nil, cert, fmt.Errorf("%w: %w: envy %.3g (at most %g), duality gap %.3g (at most %g)",
			lp.ErrNumerical, errUncertified, cert.Envy, certEnvyTol, cert.Gap(), certGapTol)
	}
	return y, cert, nil
}
