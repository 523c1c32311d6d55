package alloc

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpufair/gpufair"
)

// AuditSettings tunes Audit. A nil *AuditSettings, and the zero value, run
// sharing incentive, envy-freeness and (for linear valuations) Pareto
// efficiency with default settings, and no strategy probe.
type AuditSettings struct {
	// Pareto tunes the Pareto check (row caps, LP settings).
	Pareto *ParetoSettings
	// SkipPareto leaves out the Pareto LP.
	SkipPareto bool
	// Mechanism, when not nil, is probed for strategy-proofness with the
	// rows' Linear valuations as the truth (every valuation must then be
	// Linear), and each allocation it returns is checked against the
	// capacity. The audited allocation is not used by the probe.
	//
	// The truth is the rows' valuations, in the units of Allocation: a
	// job's Linear valuation is its rate divided by its gang
	// (Problem.Valuations), not Job.Rates. A Mechanism that builds a
	// Problem from its reports takes them as per-GPU values; for jobs of
	// gang g it must multiply them by g to get the rates the policy
	// solves for (or audit rows of gang 1 only), or it solves another
	// problem than the one audited. Scaling a row does not change OEF's
	// speedups, so OEF is unaffected.
	Mechanism Mechanism
	// Probe tunes the strategy probe.
	Probe *ProbeSettings
}

// AuditReport gathers the verdicts of Audit. A nil report was not run:
// Pareto when a valuation is not Linear or SkipPareto is set, Strategy when
// no Mechanism was given.
type AuditReport struct {
	SharingIncentive *SharingIncentiveReport
	Envy             *EnvyReport
	Pareto           *ParetoReport
	Strategy         *StrategyReport
}

// Audit holds an allocation made by any scheduler to the fairness axioms:
// SharingIncentive and EnvyFreeness always, ParetoEfficiency when every
// valuation is Linear (and not skipped), and ProbeStrategyProofness when a
// Mechanism is given, with every allocation the Mechanism returns checked
// against c. Rows are whatever the caller audits: jobs, or users (see
// Allocation.ByOwner). weights, when not nil, weight sharing incentive
// and envy-freeness; each must lie in [MinWeight, MaxWeight].
//
// The level is the policy's. Cooperative OEF's envy-freeness and sharing
// incentive hold per virtual user and unit of weight: audit it on rows
// that are its virtual users (a tenant's jobs of one speedup row, their
// bundles summed, weight π_v = the tenant's weight over its number of job
// types), which are the tenants themselves when each has one job type
// (ByOwner, OwnerValuations, OwnerWeights). Per job, or per tenant of
// several job types, they need not hold: OEF splits a virtual user's
// bundle among its jobs by Weight·Gang and may give a job more GPUs than
// its gang uses at once.
//
// Errors are those of the checks run: *gpufair.InputError for bad input
// (checked before any LP runs), wrapped lp or mechanism errors, and an
// *gpufair.InputError naming "Mechanism" for an allocation of the
// Mechanism that does not fit c.
func Audit(ctx context.Context, a *Allocation, c Capacity, vals []Valuation, weights []float64, s *AuditSettings) (*AuditReport, error) {
	if s == nil {
		s = &AuditSettings{}
	}
	si, err := SharingIncentive(a, c, vals, weights)
	if err != nil {
		return nil, err
	}
	ef, err := EnvyFreeness(a, vals, weights)
	if err != nil {
		return nil, err
	}
	r := &AuditReport{SharingIncentive: si, Envy: ef}
	linear, ok := asLinear(vals)
	if !s.SkipPareto && ok {
		if r.Pareto, err = ParetoEfficiency(ctx, a, c, linear, s.Pareto); err != nil {
			return nil, err
		}
	}
	if s.Mechanism != nil {
		if !ok {
			return nil, gpufair.Invalid("Valuations", "", gpufair.ErrValue, "the strategy probe needs Linear valuations as the truth")
		}
		truth := make([][]float64, len(linear))
		for i, l := range linear {
			truth[i] = l
		}
		if r.Strategy, err = probeStrategy(ctx, s.Mechanism, truth, s.Probe, &c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// asLinear returns vals as Linear valuations when every one is.
func asLinear(vals []Valuation) ([]Linear, bool) {
	out := make([]Linear, len(vals))
	for i, v := range vals {
		l, ok := v.(Linear)
		if !ok {
			return nil, false
		}
		out[i] = l
	}
	return out, true
}

// String summarises the report in one line per axiom run, with the witness
// of each failure; a nil report is "<nil>".
func (r *AuditReport) String() string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	if si := r.SharingIncentive; si != nil {
		fmt.Fprintf(&b, "sharing incentive: %v (worst row %d, margin %.3g)\n", si.Holds, si.Worst, si.Margin[si.Worst])
	}
	switch ef := r.Envy; {
	case ef == nil:
	case ef.Holds:
		fmt.Fprintf(&b, "envy-freeness: true (largest envy %.3g, within tolerance)\n", max(ef.MaxEnvy, 0))
	default:
		fmt.Fprintf(&b, "envy-freeness: false (row %d envies row %d by %.3g)\n", ef.Envier, ef.Envied, ef.MaxEnvy)
	}
	if pe := r.Pareto; pe != nil {
		fmt.Fprintf(&b, "Pareto efficiency: %v (total relative gain available %.3g)\n", pe.Holds, pe.Gain)
	}
	switch sp := r.Strategy; {
	case sp == nil:
	case sp.Holds:
		fmt.Fprintf(&b, "strategy-proofness (probe): true (no gain beyond tolerance in %d misreports)\n", sp.Tried)
	default:
		fmt.Fprintf(&b, "strategy-proofness (probe): false (row %d gains %.3g by reporting %.3g)\n", sp.Row, sp.Gain, sp.Misreport)
	}
	return b.String()
}
