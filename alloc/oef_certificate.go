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
	// value), that a certified cooperative allocation may carry. CLP
	// solves to a primal tolerance of 1e-7 on rows that lp has scaled by
	// powers of two, so an envy row can be left short by a few times 1e-7
	// in the caller's units: 1.4e-7 was seen on random instances of 16
	// users (full model and row generation alike, after a warm re-solve).
	// At scale the measured envy is 1e-11 to 1e-14 (docs/benchmarks/oef.md).
	// A class valuing its bundle below one slowest-GPU equivalent is held
	// to it absolutely (envyVerifyTol's convention).
	certEnvyTol = 1e-6
	// certGapTol is the duality gap, relative to the throughput, that a
	// certified cooperative allocation may leave: CLP's dual tolerance
	// (1e-7), carried into the bound over K types by the repair that
	// raises each price until every dual constraint holds. 1.37e-6 was
	// seen on 16 users whose rows differ in the second digit (a rapid
	// case of TestOEFEnvyToleranceBound kept under testdata), so 1e-6
	// failed results that were optimal.
	certGapTol = 1e-5
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
	// Binding lists the envy rows with a positive multiplier in the dual
	// solution that proves Bound, in the order of the solve (nil where
	// no bound is proved, and with the Gonum backend, which gives no
	// duals): the envy-freeness constraints that hold the
	// throughput down. Passed back as OEFSettings.WarmRows, they seed the
	// next solve of a similar problem.
	Binding []OEFEnvyRow
	// Basis names the basis of the LP that proved Bound, where the
	// backend reports one (the pure-Go simplex, by default) and a bound is
	// proved; passed back as OEFSettings.WarmBasis, it starts the next
	// solve of a similar problem there.
	Basis OEFBasis
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
// exact result (the default) is envy-free to 1e-6 relative (see
// OEFCertificate.Envy) and optimal to a duality gap of 1e-5 relative, or
// Allocate fails (with the Gonum backend, which gives no duals, only envy
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
// price per GPU type (capacity rows), a multiplier per envy row (zero for
// the rows not listed) and, with caps (addCaps), one per class on its cap
// row and on its sharing floor (zero where it has none).
type coopDual struct {
	price []float64
	flows []envyFlow
	cap   []float64
	floor []float64
	// basis is the basis of the solve the dual came from, where the
	// backend reports one (the pure-Go simplex).
	basis *classBasis
}

// envyFlow is the multiplier v ≥ 0 of class c's envy row against class d.
type envyFlow struct {
	c, d int
	v    float64
}

// rowDuals reads a coopDual from a solution of a model whose first
// len(q.count) rows are the capacity rows (addCapacity), with the rows of
// row generation rows[i] at ids[i]: envy rows, cap rows and sharing
// floors (addRow). lp reports duals as ∂objective/∂rhs: an envy row
// s_c·y_c − s_c·y_d ≥ 0 has a dual ≤ 0, the negated multiplier, and so
// does a floor.
func (q *oefLP) rowDuals(sol *lp.Solution, rows []envyPair, ids []lp.Row) coopDual {
	if sol.RowDuals == nil {
		return coopDual{} // the Gonum backend gives none
	}
	d := coopDual{price: append([]float64(nil), sol.RowDuals[:len(q.count)]...)}
	if q.cap != nil {
		d.cap, d.floor = make([]float64, len(q.s)), make([]float64, len(q.s))
	}
	for i, r := range rows {
		dual := sol.RowDuals[ids[i]]
		switch r[1] {
		case capRow:
			d.cap[r[0]] = dual
		case floorRow:
			d.floor[r[0]] = -dual
		default:
			if v := -dual; v > 0 {
				d.flows = append(d.flows, envyFlow{r[0], r[1], v})
			}
		}
	}
	return d
}

// certify returns the certificate of bundles y (per unit of weight, per
// class) with dual d: the envy over all pairs and the bound of the repaired
// dual.
//
// The dual constraint of y_ck (maximise Σ_c w_c·s_c·y_c subject to
// r_cd·s_c·y_d − s_c·y_c ≤ 0 with multiplier λ_cd, Σ_c w_c·y_ck ≤ m_k with
// price p_k, and with caps Σ_k y_ck ≤ b_c with σ_c and −s_c·y_c ≤ −f_c
// with φ_c; r_cd is envyScale, 1 without caps) is
//
//	w_c·p_k − s_ck·Σ_d λ_cd + Σ_e λ_ec·r_ec·s_ek + σ_c − φ_c·s_ck ≥ w_c·s_ck,
//
// and raising p_k by the shortfall over w_c mends it without breaking any
// other, so Σ_k m_k·p_k + Σ_c (b_c·σ_c − f_c·φ_c) over the mended prices
// (and multipliers clipped to be non-negative) bounds the optimum.
func (q *oefLP) certify(ctx context.Context, y [][]float64, d coopDual) (OEFCertificate, error) {
	envy, err := q.maxEnvy(ctx, y)
	if err != nil {
		return OEFCertificate{}, err
	}
	cert := OEFCertificate{Envy: envy, Bound: math.Inf(1)}
	for c, s := range q.s {
		cert.Throughput += q.w[c] * dot(s, y[c])
	}
	if d.price == nil {
		return cert, nil
	}
	var extra float64 // Σ_c b_c·σ_c − f_c·φ_c
	for c := range q.s {
		sigma, phi := d.capDuals(c)
		if sigma > 0 {
			extra += q.cap[c] * sigma
		}
		if phi > 0 {
			extra -= q.floor[c] * phi
		}
	}
	price := make([]float64, len(q.count))
	for k, p := range d.price {
		price[k] = max(p, 0)
	}
	mended := append([]float64(nil), price...)
	for c, short := range q.dualShortfall(d) {
		for k, sh := range short {
			if sh > 0 {
				mended[k] = max(mended[k], price[k]+sh/q.w[c])
			}
		}
	}
	cert.Bound = dot(mended, q.count) + extra
	return cert, nil
}

// capDuals returns class c's multipliers on its cap row and its sharing
// floor, clipped to be non-negative (zero without caps).
func (d coopDual) capDuals(c int) (sigma, phi float64) {
	if d.cap == nil {
		return 0, 0
	}
	return max(d.cap[c], 0), max(d.floor[c], 0)
}

// dualShortfall returns, for each class c and GPU type k, by how much d
// (prices and multipliers clipped to be non-negative) falls short of the
// dual constraint of y_ck (see certify): w_c·s_ck minus its left-hand
// side. Positive means d is not dual feasible there: y_ck has a positive
// reduced cost, and raising it from zero would raise the objective.
func (q *oefLP) dualShortfall(d coopDual) [][]float64 {
	nk := len(q.count)
	out := make([]float64, len(q.s))
	in := make([]float64, len(q.s)*nk)
	for _, f := range d.flows {
		out[f.c] += f.v
		scale := q.envyScale(f.c, f.d)
		for k, r := range q.s[f.c] {
			in[f.d*nk+k] += f.v * scale * r
		}
	}
	short := make([][]float64, len(q.s))
	for c, s := range q.s {
		sigma, phi := d.capDuals(c)
		short[c] = make([]float64, nk)
		for k, r := range s {
			short[c][k] = q.w[c]*r - (q.w[c]*max(d.price[k], 0) - r*out[c] + in[c*nk+k] + sigma - phi*r)
		}
	}
	return short
}

// maxEnvy returns the largest envy of a class for another's bundle,
// relative to max(1, its own value), with caps scaled as in the LP
// (envyScale). Without caps it checks each class against each distinct
// bundle (envy then depends on the bundle only): O(C·B·K) for B bundles;
// with caps, against every class: O(C²·K).
func (q *oefLP) maxEnvy(ctx context.Context, y [][]float64) (float64, error) {
	others := q.envyTargets(y)
	worst := math.Inf(-1)
	for c, s := range q.s {
		if err := checkEvery(ctx, c); err != nil {
			return 0, err
		}
		own := dot(s, y[c])
		for _, d := range others {
			worst = max(worst, (q.envyScale(c, d)*dot(s, y[d])-own)/max(1, own))
		}
	}
	return worst, nil
}

// repairUniform clips y to be non-negative and, where a type is used
// beyond its count (a simplex vertex may overshoot by ~1e-7), scales every
// bundle down by the same factor. Unlike repair, which scales the
// overused type only and so changes how classes value each other's
// bundles (envy of 1.3e-7 from 1.6e-8 on a random instance of 21 users),
// a common factor keeps every envy ratio: envy-freeness is a cone.
func (q *oefLP) repairUniform(y [][]float64) {
	scale := 1.0
	for k, m := range q.count {
		var used float64
		for c := range y {
			y[c][k] = max(y[c][k], 0)
			used += q.w[c] * y[c][k]
		}
		if used > m {
			scale = min(scale, m/used)
		}
	}
	if scale < 1 {
		for _, b := range y {
			for k := range b {
				b[k] *= scale
			}
		}
	}
}

// solveWarmTwice solves m cold, then once more warm from the basis it
// ended at, which computes the basic solution afresh: the presolved cold
// solve leaves values off their bounds by ~1e-8 (a bundle entry of
// -1.3e-8, which clipping at zero turns into envy of 1.3e-7 on a random
// instance of 21 users), and the warm solve puts them back. If CLP's
// point still breaks a row beyond the feasibility tolerance, the pure-Go
// simplex solves m instead: on 16 users whose rows agree to 1e-3 and
// less (a rapid case of TestOEFCertificateNoisyAgainstFullModel, kept
// under testdata), both CLP solves left an envy row broken by 2.7e-6.
func solveWarmTwice(ctx context.Context, m *lp.Model, set *lp.Settings) (*lp.Solution, error) {
	sol, err := solveWarmTwiceWith(ctx, m, set)
	if errors.Is(err, lp.ErrViolation) && backendOf(set) == lp.CLP {
		var pure lp.Settings
		if set != nil {
			pure = *set
		}
		pure.Backend = lp.PureGo
		return solveWarmTwiceWith(ctx, m, &pure)
	}
	return sol, err
}

// solveWarmTwiceWith is solveWarmTwice with the backend of set alone.
func solveWarmTwiceWith(ctx context.Context, m *lp.Model, set *lp.Settings) (*lp.Solution, error) {
	in, err := lp.NewIncremental(m, set)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if _, err := in.Solve(ctx); err != nil && !errors.Is(err, lp.ErrViolation) {
		return nil, err
	}
	return in.Solve(ctx)
}

// errUncertified reports a cooperative result whose certificate failed
// even from the full model.
var errUncertified = errors.New("result failed its certificate")

// solveCoopCertified solves cooperative OEF over q by method and returns
// repaired bundles with their certificate and the dual that proves it.
// While the result is not certified, or a solve lost its way numerically,
// it is solved again, cold: the same method without q's warm start where
// it had one, then unscaled where it was scaled, then by the full model,
// scaled and not. One that still fails is an error wrapping
// lp.ErrNumerical.
func (q *oefLP) solveCoopCertified(ctx context.Context, method OEFMethod, set *lp.Settings) ([][]float64, OEFCertificate, coopDual, error) {
	solve := (*oefLP).solveCoopFull
	if method == OEFStructured {
		solve = (*oefLP).solveCoopRowGen
	}
	warm := q.ghosts > 0 || len(q.warm) > 0 || len(q.orphans) > 0 || q.hint != nil
	y, d, err := q.solveScaled(ctx, set, solve)
	var cert OEFCertificate
	switch {
	case err == nil:
		q, y, d = q.withoutGhosts(y, d)
		if cert, err = q.certifyRepaired(ctx, y, d); err != nil {
			return nil, OEFCertificate{}, coopDual{}, err
		}
	case !lostNumerically(err):
		return nil, OEFCertificate{}, coopDual{}, err
	}
	q = q.cold()
	scaledSolve := func(solve coopSolver) coopSolver {
		return func(q *oefLP, ctx context.Context, set *lp.Settings) ([][]float64, coopDual, error) {
			return q.solveScaled(ctx, set, solve)
		}
	}
	// Warm rows and a basis are hints, and a result is exact whatever they
	// are: where they lead the solve astray (a ghost's speedups of 7e10
	// made an LP's solution fail its check, one of 1e-76 an LP too wide to
	// solve), it solves again without them. The scale is for speed, and
	// under it one job with speedups of 1e6, 500 and 1 was left without the
	// two types it valued least.
	var again []coopSolver
	if warm {
		again = append(again, scaledSolve(solve))
	}
	scaled := q.scaled(set)
	if scaled {
		again = append(again, solve)
	}
	if method == OEFStructured {
		again = append(again, scaledSolve((*oefLP).solveCoopFull))
		if scaled {
			again = append(again, (*oefLP).solveCoopFull)
		}
	}
	for _, solve := range again {
		if err == nil && cert.exact() {
			break
		}
		switch y, d, err = solve(q, ctx, set); {
		case err == nil:
			if cert, err = q.certifyRepaired(ctx, y, d); err != nil {
				return nil, OEFCertificate{}, coopDual{}, err
			}
		case !lostNumerically(err):
			return nil, OEFCertificate{}, coopDual{}, err
		}
	}
	if err != nil {
		return nil, OEFCertificate{}, coopDual{}, err
	}
	if !cert.exact() {
		return nil, cert, d, fmt.Errorf("%w: %w: envy %.3g (at most %g), duality gap %.3g (at most %g)",
			lp.ErrNumerical, errUncertified, cert.Envy, certEnvyTol, cert.Gap(), certGapTol)
	}
	return y, cert, d, nil
}

// lostNumerically reports whether err is a solve's numerical failure (an
// LP too wide in scale among them), not a stop, a deadline or bad input.
func lostNumerically(err error) bool {
	return errors.Is(err, lp.ErrNumerical) || errors.Is(err, lp.ErrViolation) || errors.Is(err, lp.ErrIterationLimit) || errors.Is(err, lp.ErrInvalidModel)
}

// certifyRepaired repairs y (repairUniform) and returns its certificate;
// without duals (the Gonum backend) only envy is checked.
func (q *oefLP) certifyRepaired(ctx context.Context, y [][]float64, d coopDual) (OEFCertificate, error) {
	q.repairUniform(y)
	cert, err := q.certify(ctx, y, d)
	if err == nil && d.price == nil {
		cert.Bound = cert.Throughput
	}
	return cert, err
}
