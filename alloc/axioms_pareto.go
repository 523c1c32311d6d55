package alloc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// ParetoSettings tunes ParetoEfficiency. A nil *ParetoSettings, and the zero
// value, mean no row caps and default LP settings.
type ParetoSettings struct {
	// RowCap, when not nil, bounds each row's GPUs of all types together:
	// Σ_k y_ik ≤ RowCap[i]. Gavel's one-time-fraction-per-job rule
	// Σ_k X_mk ≤ 1 is RowCap[m] = gang_m in GPUs. Without caps, a job may be
	// given more GPUs than it can use at once, and few allocations made
	// under Gavel's rule are then Pareto-efficient.
	RowCap []float64
	// LP tunes the solver; nil means lp's defaults.
	LP *lp.Settings
}

// ParetoReport is the verdict of ParetoEfficiency.
type ParetoReport struct {
	// Holds reports that Gain is at most AxiomTol, plus what the witness's
	// own losses within solver tolerance could buy (see ParetoEfficiency).
	Holds bool
	// Gain is the largest total relative gain Σ_i (u_i(y) − u_i(x_i))/s_i
	// over feasible allocations y that lower no row's utility, measured at
	// the validated Witness (0 when Holds and no witness is kept). s_i is the
	// larger of u_i(x_i) and u_i(C)/n, the value of a 1/n share of every
	// type (1 when both are 0): gains are relative to what the row has, or
	// to its equal share when it has less, so that a row holding almost
	// nothing neither dominates the objective nor ruins the LP's scaling.
	Gain float64
	// Gains[i] is row i's relative gain (u_i(y) − u_i(x_i))/s_i at the
	// witness; nil when Holds. Each is at least −AxiomTol.
	Gains []float64
	// Witness is the improving allocation, valid for the cluster (and its
	// row caps), or nil when Holds.
	Witness *Allocation
}

// ParetoEfficiency checks that no feasible allocation raises some row's
// utility without lowering another's, for linear valuations u_i(y) =
// Σ_k v_ik·y_ik. It solves one LP over y ≥ 0 with n·m columns:
//
//	maximise    Σ_i u_i(y)/s_i
//	subject to  u_i(y) ≥ u_i(x_i)        for every row i   (no one loses)
//	            Σ_i y_ik ≤ C_k           for every type k  (capacity)
//	            Σ_k y_ik ≤ RowCap[i]     for every row i   (when RowCap is set)
//
// x is Pareto-efficient exactly when the optimum equals Σ_i u_i(x_i)/s_i.
// To keep x itself feasible when it uses a type beyond its count within
// FeasTol, C_k is max(Count[k], Σ_i x_ik), and likewise each row cap is at
// least x's row sum. Columns are scaled to y_ik = C_k·z_ik with z_ik ∈ [0, 1]
// and each no-loss row is divided by s_i, so that the LP's data are of order
// one whatever the units: with s_i ≥ u_i(C)/n every coefficient is at most
// n and every right-hand side at most 1.
//
// The solver's solution is repaired (negatives clipped, any type or row cap
// exceeded by solver tolerance scaled back) and validated against c before
// it becomes the witness, and the reported gains are recomputed at it, so
// a witness may leave a row worse off by at most about the LP's feasibility
// tolerance; a witness that would lower a row by more than AxiomTol
// relative is an error wrapping lp.ErrNumerical, never a verdict. Such
// small losses can pay for a small gain elsewhere when rows value a type
// very differently, so the verdict discounts the most those losses could
// buy directly before comparing the gain with AxiomTol; a gain beyond that,
// at a witness with losses, is judged at a second solve in which each row
// that lost asks for its loss on top of what it has. That second LP is
// infeasible where a row that lost cannot gain at all (its only good type
// full), whatever the others could gain; the first LP is then asked of the
// other LP backends, and a witness of theirs that lowers no row decides.
// Where none does, the gain is taken to need the losses: the axiom holds.
//
// Errors: *gpufair.InputError for bad input (see SharingIncentive, plus a RowCap of
// the wrong length or with values that are negative or not finite), and an
// error wrapping the lp sentinel when the LP fails. The LP has a feasible
// point (x) and a bounded objective, so an lp error means a numerical
// failure or a time limit.
func ParetoEfficiency(ctx context.Context, a *Allocation, c Capacity, vals []Linear, s *ParetoSettings) (*ParetoReport, error) {
	if s == nil {
		s = &ParetoSettings{}
	}
	if err := checkAllocation(a, c); err != nil {
		return nil, err
	}
	if len(vals) != len(a.GPUs) {
		return nil, gpufair.Invalid("Valuations", "", gpufair.ErrShape, "%d valuations for %d rows", len(vals), len(a.GPUs))
	}
	for i, l := range vals {
		if err := checkLinear(a, "Valuations", i, l); err != nil {
			return nil, err
		}
	}
	if err := checkRowCaps(a, s.RowCap); err != nil {
		return nil, err
	}
	n, m := len(a.GPUs), len(c.Count)
	caps := make([]float64, m)
	for k, u := range a.Used() {
		caps[k] = math.Max(c.Count[k], u)
	}
	own := make([]float64, n)
	scale := make([]float64, n)
	for i, l := range vals {
		own[i] = l.Value(a.GPUs[i])
		scale[i] = paretoScale(own[i], l, c.Count, n)
	}

	w, gains, err := paretoWitness(ctx, a, c, vals, s, caps, own, scale, nil)
	if err != nil {
		return nil, err
	}
	holds := func(gains []float64) bool {
		return sum(gains) <= AxiomTol+boughtGain(vals, scale, gains)
	}
	if !holds(gains) && slices.ContainsFunc(gains, func(g float64) bool { return g < 0 }) {
		// The gain may rest on the losses: a loss of 2.4e-7 of a row's
		// only good, passed on through a row that values it 7.4 times its
		// other good, bought 1.5e-6 for a fourth row (CLP; found by
		// TestPropertyParetoAgreesWithSecondLP, testdata/rapid), beyond
		// what boughtGain, which counts direct transfers, allows. Asking
		// each row that lost for its loss on top of what it has, and
		// solving again, takes the tolerance's gift away; only a gain
		// that survives it is a verdict.
		raise := make([]float64, n)
		for i, g := range gains {
			raise[i] = max(-g, 0)
		}
		w2, gains2, err := paretoWitness(ctx, a, c, vals, s, caps, own, scale, raise)
		switch {
		case errors.Is(err, lp.ErrInfeasible):
			// A row at its most (CLP's witness took 1e-9 from one, and
			// the pure-Go simplex's gave 0.63 to others without a loss: a
			// rapid case of TestPropertyAuditEveryPolicy with CLP).
			if w3, gains3, ok := losslessWitness(ctx, a, c, vals, s, caps, own, scale, holds); ok {
				w, gains = w3, gains3
			} else {
				gains = make([]float64, n) // no allocation keeps every row whole and more
			}
		case err != nil:
			return nil, err
		default:
			w, gains = w2, gains2
		}
	}
	r := &ParetoReport{Holds: holds(gains), Gain: sum(gains), Gains: gains}
	if r.Holds {
		r.Gain, r.Gains = math.Max(r.Gain, 0), nil
	} else {
		r.Witness = w
	}
	return r, nil
}

// negligibleFloor is the no-loss bound, relative to the row's scale s_i,
// below which ParetoEfficiency's LP takes it as 0: far below the LP's
// feasibility tolerance and AxiomTol, so no verdict can turn on it.
const negligibleFloor = 1e-12

// paretoWitness solves ParetoEfficiency's LP, each row's no-loss bound
// raised by raise[i] of its scale (nil: none), and returns its repaired
// and validated witness with each row's relative gain over x there.
func paretoWitness(ctx context.Context, a *Allocation, c Capacity, vals []Linear, s *ParetoSettings, caps, own, scale, raise []float64) (*Allocation, []float64, error) {
	n, m := len(a.GPUs), len(c.Count)
	model := lp.NewModel(lp.Maximize)
	z := model.AddGrid("z", n, m, 0, 1)
	coef := make([]float64, m)
	for i, l := range vals {
		for k := range coef {
			coef[k] = l[k] * caps[k] / scale[i]
		}
		terms := z.RowTerms(i, coef)
		for _, t := range terms {
			model.SetObjective(t.Var, t.Coef)
		}
		if len(terms) > 0 {
			floor := own[i] / scale[i]
			if raise != nil {
				floor += raise[i]
			}
			if floor < negligibleFloor {
				// Below the LP's feasibility tolerance a floor is 0 to it,
				// and lp refuses one its scaling would lose (a row holding
				// 1e-308 GPUs: "beyond the range of the loaded model's
				// scaling").
				floor = 0
			}
			model.AddConstraint("no-loss", terms, lp.GE, floor)
		}
		if s.RowCap != nil {
			model.AddConstraint("row-cap", z.RowTerms(i, caps), lp.LE, math.Max(s.RowCap[i], sum(a.GPUs[i])))
		}
	}
	for k := range m {
		model.AddConstraint("capacity", z.ColTerms(k, nil), lp.LE, 1)
	}
	// x itself is feasible: starting from it spares the pure-Go simplex a
	// phase 1 that ill-conditioned rows (two rows valuing the types equally
	// to 8 digits) could end with a roundoff verdict of infeasibility.
	for i, row := range a.GPUs {
		for k, x := range row {
			model.SetStart(z.At(i, k), x/caps[k])
		}
	}
	sol, err := solveSecondOpinion(ctx, model, s.LP)
	if err != nil {
		return nil, nil, fmt.Errorf("alloc: Pareto LP: %w", err)
	}

	w := NewAllocation(a.Rows, c)
	for i, row := range z.Values(sol) {
		for k, v := range row {
			w.GPUs[i][k] = math.Max(0, v) * caps[k]
		}
	}
	repairWitness(w, caps, s.RowCap, a)
	if err := w.Validate(c); err != nil {
		return nil, nil, fmt.Errorf("alloc: Pareto LP: repaired witness is invalid: %w", err)
	}
	gains := make([]float64, n)
	for i, l := range vals {
		gains[i] = (l.Value(w.GPUs[i]) - own[i]) / scale[i]
		if gains[i] < -AxiomTol {
			return nil, nil, fmt.Errorf("alloc: Pareto LP: witness lowers row %q by %v relative: %w", a.Rows[i], -gains[i], lp.ErrNumerical)
		}
	}
	return w, gains, nil
}

// losslessWitness solves ParetoEfficiency's first LP with each of the
// other LP backends (otherBackends) and returns the first
// witness that lowers no row (beyond roundoffLoss) and whose gain breaks
// holds.
func losslessWitness(ctx context.Context, a *Allocation, c Capacity, vals []Linear, s *ParetoSettings, caps, own, scale []float64, holds func([]float64) bool) (*Allocation, []float64, bool) {
	var set lp.Settings
	if s.LP != nil {
		set = *s.LP
	}
	for _, b := range otherBackends(set.Backend, len(a.GPUs)*len(c.Count)) {
		set.Backend = b
		next := *s
		next.LP = &set
		w, gains, err := paretoWitness(ctx, a, c, vals, &next, caps, own, scale, nil)
		if err == nil && slices.Min(gains) >= -roundoffLoss && !holds(gains) {
			return w, gains, true
		}
	}
	return nil, nil, false
}

// roundoffLoss is the relative loss that recomputing a row's value at a
// witness leaves by rounding alone (the pure-Go simplex's lossless witness
// read −2e-16).
const roundoffLoss = 1e-12

// boughtGain bounds the total relative gain that the witness's own losses
// could buy. Within the LP's feasibility tolerance a no-loss row may lose a
// little (relative δ_i), and that loss frees goods worth up to δ_i·A_i to
// the others, where A_i = max_k (s_i/v_ik)·max_j (v_jk/s_j) is the best
// rate at which row i's goods convert into another row's relative gain.
// When rows value a type very differently, A_i is large, and a gain no
// larger than Σ_i δ_i·A_i is solver tolerance, not evidence that x is
// inefficient. Found by TestPropertyParetoAgreesWithSecondLP (testdata/rapid).
func boughtGain(vals []Linear, scale, gains []float64) float64 {
	var bought float64
	for i, g := range gains {
		if g >= 0 {
			continue
		}
		var rate float64
		for k, v := range vals[i] {
			if v <= 0 {
				continue
			}
			for j, w := range vals {
				rate = max(rate, scale[i]/v*w[k]/scale[j])
			}
		}
		bought += -g * rate
	}
	return bought
}

// paretoScale returns s_i = max(own, u_i(C)/n), or 1 when both are 0.
func paretoScale(own float64, l Linear, count []float64, n int) float64 {
	var share float64
	for k, r := range l {
		share += r * count[k] / float64(n)
	}
	if s := max(own, share); s > 0 {
		return s
	}
	return 1
}

// repairWitness scales down any type used beyond caps[k] and any row beyond
// its cap (at least a's row sum), by the overshoot the LP's tolerance left.
func repairWitness(w *Allocation, caps, rowCap []float64, a *Allocation) {
	for k, u := range w.Used() {
		if u > caps[k] {
			for i := range w.GPUs {
				w.GPUs[i][k] *= caps[k] / u
			}
		}
	}
	if rowCap == nil {
		return
	}
	for i, b := range w.GPUs {
		limit := math.Max(rowCap[i], sum(a.GPUs[i]))
		if t := sum(b); t > limit {
			for k := range b {
				b[k] *= limit / t
			}
		}
	}
}

// checkRowCaps checks that caps is nil or holds one finite, non-negative
// cap per row of a.
func checkRowCaps(a *Allocation, caps []float64) error {
	if caps == nil {
		return nil
	}
	if len(caps) != len(a.GPUs) {
		return gpufair.Invalid("ParetoSettings.RowCap", "", gpufair.ErrShape, "%d caps for %d rows", len(caps), len(a.GPUs))
	}
	for i, x := range caps {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return gpufair.Invalid("ParetoSettings.RowCap", rowLabel(a, i), gpufair.ErrValue, "cap %v is not finite and non-negative", x)
		}
	}
	return nil
}
