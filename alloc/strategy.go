package alloc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/topology"
)

// A Mechanism maps a reported rate matrix to an allocation:
// reported[i][k] is row i's reported rate (throughput or speedup) on GPU
// type k, and the allocation must have one row per reported row, in order,
// over the same types. Any scheduler can be wrapped as a Mechanism,
// including ones outside this library. A mechanism must not modify
// reported.
type Mechanism func(ctx context.Context, reported [][]float64) (*Allocation, error)

// ProbeSettings tunes ProbeStrategyProofness. The zero value probes every
// row with inflations only, seed 0 and DefaultProbeTrials random trials.
//
// Inflation means a reported rate at least the true one on every type. A
// mechanism that, like OEF, sees a row only through its speedups (rates
// relative to the row's slowest type) reads an inflated rate on the
// slowest type as lower speedups everywhere else: such a report is not an
// inflated report in OEF's sense (each speedup at least the true one).
// HoldSlowest restricts the probe to reports of that kind.
type ProbeSettings struct {
	// Seed seeds the random misreports; the same seed gives the same probe.
	Seed int64
	// Trials is the number of random misreports per row, on top of the
	// deterministic grid; 0 means DefaultProbeTrials, negative means none.
	Trials int
	// AnyMisreport widens the search from inflations (every reported rate
	// at least the true one, OEF section 2.3.1) to any non-negative report:
	// deflations and zeroed rates as well.
	AnyMisreport bool
	// HoldSlowest keeps every row's report on its slowest type at the true
	// rate, so that a misreport changes the row's speedups only: with
	// inflations, every speedup is at least the true one, OEF's inflated
	// report; with AnyMisreport, any speedups. A row's slowest type is
	// the first of speedup.Matrix.TypeOrder of the truth on which its true
	// rate is positive (OEF's reference type).
	HoldSlowest bool
	// Factors are the scale factors of the deterministic grid; nil means
	// 1.05, 1.1, 1.25, 1.4, 1.5, 2, 3, 5 and 10, and with AnyMisreport also
	// 0.95, 0.9, 0.8, 0.5, 0.25, 0.1 and 0. Factors below 1 are used only
	// with AnyMisreport, and 1 (no misreport) is skipped; a negative or
	// non-finite factor is an *gpufair.InputError.
	Factors []float64
	// Rows restricts the probe to these rows; nil means every row.
	Rows []int
}

// DefaultProbeTrials is the number of random misreports per row when
// ProbeSettings.Trials is 0.
const DefaultProbeTrials = 16

// defaultFactors returns the default scale factors of the deterministic
// misreport grid: inflations 1.05, 1.1, 1.25, 1.4, 1.5, 2, 3, 5, 10, and with
// deflations also 0.95, 0.9, 0.8, 0.5, 0.25, 0.1, 0. They include the
// misreports of OEF section 2.4 (2 → 2.5 and 2 → 2.8 on the fast type).
func defaultFactors(deflations bool) []float64 {
	f := []float64{1.05, 1.1, 1.25, 1.4, 1.5, 2, 3, 5, 10}
	if deflations {
		f = append(f, 0.95, 0.9, 0.8, 0.5, 0.25, 0.1, 0)
	}
	return f
}

// StrategyReport is the verdict of ProbeStrategyProofness.
type StrategyReport struct {
	// Holds reports that no misreport tried gained more than AxiomTol. It is
	// evidence, not proof: only the misreports tried were tried.
	Holds bool
	// Gain is the largest true relative gain found, u_i(x'_i)/u_i(x_i) − 1
	// under row i's true rates, where x is the allocation under the truth
	// and x' the one under the misreport (+Inf when u_i(x_i) = 0 < u_i(x'_i));
	// Row is that row and Misreport its report (the witness), or −1 and nil
	// when no misreport gained anything. Ties keep the first found.
	Gain      float64
	Row       int
	Misreport []float64
	// RowGains[i] is the largest gain found for row i (0 when none gained,
	// and for rows not probed).
	RowGains []float64
	// Tried is the number of misreports evaluated; Failed the number the
	// mechanism returned an error for (a rejected report gains nothing).
	Tried, Failed int
	// Truthful is the allocation under the truth.
	Truthful *Allocation
}

// ProbeStrategyProofness searches for profitable misreports. For each
// probed row i it replaces row i of truth by a misreport r, keeps the others
// truthful, runs mech, and measures row i's gain under its TRUE linear
// valuation. The misreports, in order, are deterministic first:
//
//   - single-coordinate: r_k scaled by each factor f, one type k at a time
//     (a true rate of 0 is inflated to (f−1)·max_k r_k instead);
//   - suffix and prefix: every rate from type k on (or up to type k) scaled
//     by f, for every k; k = 0 is uniform scaling;
//
// then Trials random ones: every rate scaled by exp(0.7·|g|) (exp(0.7·g)
// with AnyMisreport, where a rate is also zeroed with probability 0.1),
// with g standard normal drawn from a PCG seeded with Seed. Inflations keep
// every reported rate at least the true one; deflations need AnyMisreport.
// With HoldSlowest, the row's rate on its slowest type is left true in
// every misreport (the draws are made all the same).
//
// The probe knows no capacity: it trusts the amounts of mech's
// allocations, checking only their shape and that they are finite and
// non-negative. Audit, which has the capacity, also checks every
// allocation against it.
//
// Cost: about (3·len(Factors)·m + Trials) mechanism calls per row for m
// types; the misreports are made one at a time, in O(m) memory. ctx is
// checked before each call.
//
// Errors: *gpufair.InputError for a nil mechanism, a truth matrix that is
// empty, ragged, or has NaN, infinite or negative rates, a Rows index out
// of range, a negative or non-finite factor, or settings that leave no
// misreport to try (gpufair.ErrEmpty); an error wrapping the mechanism's when
// it fails on the truth (its errors on a misreport count in Failed); ctx's
// error when it is done; and an *gpufair.InputError naming "Mechanism" when
// it returns an allocation of the wrong shape or with a NaN, infinite or
// negative amount, under the truth or a misreport.
func ProbeStrategyProofness(ctx context.Context, mech Mechanism, truth [][]float64, s *ProbeSettings) (*StrategyReport, error) {
	return probeStrategy(ctx, mech, truth, s, nil)
}

// probeStrategy is ProbeStrategyProofness, with every allocation of mech
// checked against c when c is not nil.
func probeStrategy(ctx context.Context, mech Mechanism, truth [][]float64, s *ProbeSettings, c *Capacity) (*StrategyReport, error) {
	if s == nil {
		s = &ProbeSettings{}
	}
	if mech == nil {
		return nil, gpufair.Invalid("Mechanism", "", gpufair.ErrEmpty, "nil mechanism")
	}
	if err := checkTruth(truth); err != nil {
		return nil, err
	}
	rows, err := probeRows(s.Rows, len(truth))
	if err != nil {
		return nil, err
	}
	factors, err := probeFactors(s)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || len(factors) == 0 && s.Trials < 0 {
		// Holds would be vacuous.
		return nil, gpufair.Invalid("ProbeSettings", "", gpufair.ErrEmpty, "no misreport to try: %d rows, %d usable factors, %d trials", len(rows), len(factors), s.Trials)
	}
	slowest := make([]int, len(truth))
	for i := range slowest {
		slowest[i] = -1
	}
	if s.HoldSlowest {
		slowest = slowestRunnable(truth)
	}
	base, err := runMechanism(ctx, mech, truth, c)
	if err != nil {
		return nil, err
	}
	r := &StrategyReport{Row: -1, RowGains: make([]float64, len(truth)), Truthful: base}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x5851f42d4c957f2d))
	reported := make([][]float64, len(truth))
	copy(reported, truth)
	for _, i := range rows {
		own := Linear(truth[i]).Value(base.GPUs[i])
		// Misreports are made one at a time, drawing from rng in the
		// order the list of all of them once did, so a seed gives the
		// probe it always gave: a list of 10⁶ trials took 184 MB and
		// ran to its end before ctx was looked at.
		for lie := range misreports(truth[i], s.Trials, factors, s.AnyMisreport, slowest[i], rng) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			reported[i] = lie
			x, err := runMechanism(ctx, mech, reported, c)
			r.Tried++
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if isMechanismOutputError(err) {
					return nil, err
				}
				r.Failed++
				continue
			}
			g := relativeEnvy(own, Linear(truth[i]).Value(x.GPUs[i]))
			if g > r.RowGains[i] {
				r.RowGains[i] = g
			}
			if g > r.Gain {
				r.Gain, r.Row, r.Misreport = g, i, lie
			}
		}
		reported[i] = truth[i]
	}
	r.Holds = r.Gain <= AxiomTol
	return r, nil
}

// probeFactors returns the factors of s's grid that make a misreport, in
// order, and an *gpufair.InputError for a negative or non-finite one.
func probeFactors(s *ProbeSettings) ([]float64, error) {
	factors := s.Factors
	if factors == nil {
		factors = defaultFactors(s.AnyMisreport)
	}
	var out []float64
	for _, f := range factors {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, gpufair.Invalid("ProbeSettings.Factors", "", gpufair.ErrValue, "factor %v is not finite and non-negative", f)
		}
		if f < 1 && !s.AnyMisreport || f == 1 {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// slowestRunnable returns, per row of truth, the first type of
// speedup.Matrix.TypeOrder on which the row's rate is positive, or −1
// for a row of zeros.
func slowestRunnable(truth [][]float64) []int {
	order := make([]int, len(truth[0]))
	for k := range order {
		order[k] = k
	}
	rows := make([]string, len(truth))
	types := make([]topology.GPUType, len(truth[0]))
	for i := range rows {
		rows[i] = strconv.Itoa(i)
	}
	for k := range types {
		types[k] = topology.GPUType("t" + strconv.Itoa(k))
	}
	if m, err := speedup.New(rows, types, truth); err == nil {
		order = m.TypeOrder()
	}
	out := make([]int, len(truth))
	for i, row := range truth {
		out[i] = -1
		for _, k := range order {
			if row[k] > 0 {
				out[i] = k
				break
			}
		}
	}
	return out
}

// misreports yields row's deterministic misreport grid over factors
// followed by trials random ones (DefaultProbeTrials when 0), each a new
// slice; the rate on type hold (when not −1) stays true.
func misreports(row []float64, trials int, factors []float64, any bool, hold int, rng *rand.Rand) iter.Seq[[]float64] {
	top := 0.0
	for _, x := range row {
		top = max(top, x)
	}
	scale := func(x, f float64) float64 {
		if x == 0 && f > 1 {
			return (f - 1) * top
		}
		return x * f
	}
	m := len(row)
	return func(yield func([]float64) bool) {
		add := func(f float64, in func(k int) bool) bool {
			lie := make([]float64, m)
			for k, x := range row {
				lie[k] = x
				if in(k) && k != hold {
					lie[k] = scale(x, f)
				}
			}
			return yield(lie)
		}
		for _, f := range factors {
			for k := range m {
				if !add(f, func(j int) bool { return j == k }) {
					return
				}
			}
			for k := range m {
				if !add(f, func(j int) bool { return j >= k }) {
					return
				}
			}
			for k := 0; k+1 < m; k++ {
				if !add(f, func(j int) bool { return j <= k }) {
					return
				}
			}
		}
		if trials == 0 {
			trials = DefaultProbeTrials
		}
		for range trials {
			lie := make([]float64, m)
			for k, x := range row {
				g := rng.NormFloat64()
				if !any {
					g = math.Abs(g)
				}
				lie[k] = scale(x, math.Exp(0.7*g))
				if any && rng.Float64() < 0.1 {
					lie[k] = 0
				}
				if k == hold {
					lie[k] = x
				}
			}
			if !yield(lie) {
				return
			}
		}
	}
}

// mechanismOutputError marks the errors of runMechanism that are about what
// mech returned, not a refusal of the report: they end the probe.
type mechanismOutputError struct{ error }

func (e mechanismOutputError) Unwrap() error { return e.error }

func isMechanismOutputError(err error) bool {
	var m mechanismOutputError
	return errors.As(err, &m)
}

// runMechanism runs mech and checks the shape and amounts of its
// allocation, and, when c is not nil, the allocation against c. An error
// about the allocation is an *gpufair.InputError naming "Mechanism" inside a
// mechanismOutputError.
func runMechanism(ctx context.Context, mech Mechanism, reported [][]float64, c *Capacity) (*Allocation, error) {
	x, err := mech(ctx, reported)
	if err != nil {
		return nil, fmt.Errorf("alloc: mechanism: %w", err)
	}
	if err := checkBundles(x); err != nil {
		return nil, mechanismOutputError{gpufair.Invalid("Mechanism", "", gpufair.ErrShape, "bad allocation: %v", err)}
	}
	if len(x.GPUs) != len(reported) || len(x.Types) != len(reported[0]) {
		return nil, mechanismOutputError{gpufair.Invalid("Mechanism", "", gpufair.ErrShape, "allocation of %d×%d for %d×%d reports", len(x.GPUs), len(x.Types), len(reported), len(reported[0]))}
	}
	if c != nil {
		if err := x.Validate(*c); err != nil {
			return nil, mechanismOutputError{gpufair.Invalid("Mechanism", "", gpufair.ErrValue, "allocation does not fit the capacity: %v", err)}
		}
	}
	return x, nil
}

// checkTruth checks that truth is a non-empty rectangular matrix of finite,
// non-negative rates.
func checkTruth(truth [][]float64) error {
	if len(truth) == 0 || len(truth[0]) == 0 {
		return gpufair.Invalid("Truth", "", gpufair.ErrEmpty, "no rows or no GPU types")
	}
	for i, row := range truth {
		if len(row) != len(truth[0]) {
			return gpufair.Invalid("Truth", fmt.Sprint(i), gpufair.ErrShape, "%d rates, row 0 has %d", len(row), len(truth[0]))
		}
		for k, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return gpufair.Invalid("Truth", fmt.Sprint(i), gpufair.ErrValue, "rate %v on type %d", x, k)
			}
		}
	}
	return nil
}

// probeRows returns the rows to probe: rows, checked, or 0..n-1.
func probeRows(rows []int, n int) ([]int, error) {
	if rows == nil {
		rows = make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return rows, nil
	}
	for _, i := range rows {
		if i < 0 || i >= n {
			return nil, gpufair.Invalid("ProbeSettings.Rows", fmt.Sprint(i), gpufair.ErrValue, "row out of range [0, %d)", n)
		}
	}
	return rows, nil
}
