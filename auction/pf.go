package auction

import (
	"context"
	"fmt"
	"math"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
)

// Homogeneous is a concave valuation homogeneous of degree one,
// v(t·x) = t·v(x), with a supergradient. Such valuations plug into
// ProportionalFair and PartialAllocation next to alloc.Linear (which is one,
// with gradient the rates). Gradient writes a supergradient of Value at
// bundle into grad (len(grad) == len(bundle)); by Euler's identity it
// satisfies Σ_k grad[k]·bundle[k] = Value(bundle), which the optimality
// certificate relies on. The solver differentiates Gradient numerically
// for curvature, so it should be continuous on the positive orthant.
type Homogeneous interface {
	alloc.Valuation
	Gradient(bundle, grad []float64)
}

// Settings tunes the proportionally fair solve. A nil *Settings and the zero
// value mean defaults.
type Settings struct {
	// GapTol is the largest accepted optimality gap of Σ_i log v_i (the
	// certificate in Result.Gap); 0 means DefaultGapTol. It must be
	// finite and not negative.
	GapTol float64
	// MaxNewton bounds Newton steps per solve; 0 means 400. It must not
	// be negative.
	MaxNewton int
}

// validate reports a GapTol that is NaN, infinite or negative and a
// negative MaxNewton.
func (s *Settings) validate() error {
	if s == nil {
		return nil
	}
	if !(s.GapTol >= 0) || math.IsInf(s.GapTol, 0) {
		return badInput("Settings.GapTol", "", gpufair.ErrValue, "%v is not finite and non-negative", s.GapTol)
	}
	if s.MaxNewton < 0 {
		return badInput("Settings.MaxNewton", "", gpufair.ErrValue, "%d is negative", s.MaxNewton)
	}
	return nil
}

// DefaultGapTol is the default Settings.GapTol: the product of valuations at
// the returned allocation is within a factor e^1e-8 of the optimum. An
// all-linear solve that crosses over is exact to rounding (gaps near 1e-15);
// a solve with other Homogeneous valuations stays an interior point, whose
// floor in double precision is a gap of a few 1e-9.
const DefaultGapTol = 1e-8

func (s *Settings) gapTol() float64 {
	if s == nil || s.GapTol <= 0 {
		return DefaultGapTol
	}
	return s.GapTol
}

func (s *Settings) maxNewton() int {
	if s == nil || s.MaxNewton <= 0 {
		return 400
	}
	return s.MaxNewton
}

// Result is a proportionally fair allocation of divisible goods.
type Result struct {
	Alloc     *alloc.Allocation // x*: GPUs of each type per bidder
	Utilities []float64         // v_i(x*_i)
	// Prices are the market-equilibrium prices per GPU of each type when
	// every bidder has a budget of 1: p_k = max_i ∂v_i/∂x_ik / v_i.
	Prices []float64
	// Gap = Σ_k capacity_k·p_k - n bounds how far Σ_i log v_i(x*) is below
	// the optimum: for concave v_i homogeneous of degree one,
	// log v_i(y) - log v_i(x*) ≤ Σ_k p_k·y_ik - 1 for every allocation y.
	Gap float64
	// Newton is the number of Newton steps taken.
	Newton int
	// Exact reports an all-linear solve finished by crossover to an exact
	// market equilibrium; otherwise Alloc is the interior point, whose
	// utilities are accurate to about the square root of Gap (relative).
	Exact bool
}

// crossoverGap is the interior-point gap at which an all-linear solve tries
// to read off the equilibrium's support and solve it exactly.
const crossoverGap = 1e-3

// ProportionalFair solves the Eisenberg-Gale program
//
//	maximise Σ_i log v_i(x_i)  subject to  Σ_i x_ik ≤ capacity_k, x ≥ 0,
//
// for valuations that are alloc.Linear or Homogeneous. Its optimum is the
// Fisher-market equilibrium with equal budgets. The method is a primal
// log-barrier interior point with Newton steps; the Newton system
// (block-diagonal per bidder plus a rank-m coupling per GPU type) is solved
// by the Woodbury identity in O(n·m³). When every valuation is linear the
// interior point is finished by a crossover to the exact market equilibrium
// (Result.Exact). The answer is certified by the price
// gap in Result.Gap; above Settings.GapTol the best point comes back with
// ErrNotConverged.
//
// Inputs are validated: a valuation that is neither Linear nor Homogeneous,
// a Linear of the wrong length or with a negative, NaN or infinite rate, a
// rate whose product with its type's count overflows (gpufair.ErrTooLarge),
// a bidder who values nothing in the cluster, a number of valuations other
// than of bidders, and Settings out of their domain are *gpufair.InputError.
func ProportionalFair(ctx context.Context, c alloc.Capacity, bidders []string, vals []alloc.Valuation, s *Settings) (*Result, error) {
	res, _, err := proportionalFair(ctx, c, bidders, vals, s)
	return res, err
}

// proportionalFair is ProportionalFair, inputs checked, with log v_i(x*_i)
// for each bidder i (logUtilities).
func proportionalFair(ctx context.Context, c alloc.Capacity, bidders []string, vals []alloc.Valuation, s *Settings) (*Result, []float64, error) {
	if len(vals) != len(bidders) {
		return nil, nil, badInput("vals", "", gpufair.ErrShape, "%d valuations for %d bidders", len(vals), len(bidders))
	}
	if err := s.validate(); err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	p, err := newProblem(c, bidders, vals)
	if err != nil {
		return nil, nil, err
	}
	res, err := p.solve(s)
	if res == nil {
		return nil, nil, err
	}
	return res, p.logUtilities(res), err
}

// logUtilities returns log v_i(x*_i) for each bidder: the log of its
// Utilities entry, or, where that entry underflowed to 0 or a subnormal
// or overflowed (rates near the ends of float64's range), the log of its
// normalised value plus the log of its scale, which neither underflows
// nor overflows.
func (p *problem) logUtilities(res *Result) []float64 {
	logs := make([]float64, p.n)
	for i, u := range res.Utilities {
		if normal(u) {
			logs[i] = math.Log(u)
		} else {
			logs[i] = math.Log(p.norm[i]) + math.Log(p.scale[i])
		}
	}
	return logs
}

// normal reports whether x is a positive, finite float64 of full
// precision: neither 0, nor subnormal, nor +Inf.
func normal(x float64) bool { return x >= 0x1p-1022 && !math.IsInf(x, 1) }

// problem is the Eisenberg-Gale program in normalised units: y_ik is the
// fraction of type k's capacity bidder i gets, and bidder i's valuation is
// divided by scale_i, which moves neither the optimum nor the prices.
type problem struct {
	c       alloc.Capacity
	bidders []string
	n, m    int
	lin     [][]float64   // normalised rates a_ik·cap_k/scale_i, nil for a non-linear bidder
	hom     []Homogeneous // non-linear bidders, nil for linear
	scale   []float64
	// scratch for non-linear bidders
	bundle, grad, grad2 []float64
	// norm[i] is bidder i's normalised value at the solution (its
	// Utilities entry over scale[i]), set by solve.
	norm []float64
}

func newProblem(c alloc.Capacity, bidders []string, vals []alloc.Valuation) (*problem, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(bidders) == 0 {
		return nil, badInput("bidders", "", gpufair.ErrEmpty, "no bidders")
	}
	m := len(c.Types)
	p := &problem{c: c, bidders: bidders, n: len(bidders), m: m,
		lin: make([][]float64, len(bidders)), hom: make([]Homogeneous, len(bidders)), scale: make([]float64, len(bidders)),
		bundle: make([]float64, m), grad: make([]float64, m), grad2: make([]float64, m)}
	seen := map[string]bool{}
	for i, v := range vals {
		id := bidders[i]
		if seen[id] {
			return nil, badInput("bidders", id, gpufair.ErrDuplicate, "listed twice")
		}
		seen[id] = true
		switch v := v.(type) {
		case alloc.Linear:
			if len(v) != m {
				return nil, badInput("vals", id, gpufair.ErrShape, "%d rates for %d GPU types", len(v), m)
			}
			row := make([]float64, m)
			var top float64
			for k, a := range v {
				if math.IsNaN(a) || math.IsInf(a, 0) || a < 0 {
					return nil, badInput("vals", id, gpufair.ErrValue, "rate %v for %q", a, c.Types[k])
				}
				row[k] = a * c.Count[k]
				if math.IsInf(row[k], 0) {
					return nil, badInput("vals", id, gpufair.ErrTooLarge, "rate %v for %q times its count %v overflows", a, c.Types[k], c.Count[k])
				}
				top = max(top, row[k])
			}
			if top == 0 {
				return nil, badInput("vals", id, gpufair.ErrValue, "values no GPU type of the cluster")
			}
			for k := range row {
				row[k] /= top
			}
			p.lin[i], p.scale[i] = row, top
		case Homogeneous:
			total := v.Value(c.Count)
			if math.IsNaN(total) || math.IsInf(total, 0) || total <= 0 {
				return nil, badInput("vals", id, gpufair.ErrValue, "value %v for the whole cluster is not positive and finite", total)
			}
			p.hom[i], p.scale[i] = v, total
		default:
			return nil, badInput("vals", id, gpufair.ErrValue, "valuation %T is neither alloc.Linear nor Homogeneous", v)
		}
	}
	return p, nil
}

// valGrad returns bidder i's normalised value at y and writes its gradient
// (with respect to y) into g.
func (p *problem) valGrad(i int, y, g []float64) float64 {
	if a := p.lin[i]; a != nil {
		var u float64
		for k, x := range y {
			u += a[k] * x
		}
		copy(g, a)
		return u
	}
	for k := range y {
		p.bundle[k] = y[k] * p.c.Count[k]
	}
	u := p.hom[i].Value(p.bundle) / p.scale[i]
	p.hom[i].Gradient(p.bundle, g)
	for k := range g {
		g[k] *= p.c.Count[k] / p.scale[i]
	}
	return u
}

// hessVal adds bidder i's Hessian of its normalised value at y, times
// factor, to the m×m block h (row-major). Linear bidders have none; for the
// others it is a forward difference of the gradient, symmetrised.
func (p *problem) hessVal(i int, y []float64, factor float64, h []float64) {
	if p.lin[i] != nil {
		return
	}
	m := p.m
	g0 := make([]float64, m)
	p.valGrad(i, y, g0)
	yy := append([]float64(nil), y...)
	for k := 0; k < m; k++ {
		step := 1e-7 * max(y[k], 1e-3)
		yy[k] = y[k] + step
		p.valGrad(i, yy, p.grad2)
		yy[k] = y[k]
		for l := 0; l < m; l++ {
			d := (p.grad2[l] - g0[l]) / step * factor / 2
			h[l*m+k] += d
			h[k*m+l] += d
		}
	}
}

func (p *problem) solve(s *Settings) (*Result, error) {
	n, m := p.n, p.m
	y := make([][]float64, n)
	for i := range y {
		y[i] = make([]float64, m)
		for k := range y[i] {
			y[i][k] = 1 / float64(n+1)
		}
	}
	slack := make([]float64, m)
	u := make([]float64, n)
	g := make([][]float64, n)  // gradient of the barrier objective
	gv := make([][]float64, n) // gradient of v_i
	B := make([][]float64, n)  // Newton blocks: factored, or w, 1/d and α for linear bidders
	r := make([][]float64, n)
	d := make([][]float64, n)
	for i := range g {
		g[i], gv[i], B[i], r[i], d[i] = make([]float64, m), make([]float64, m), make([]float64, max(m*m, 2*m+1)), make([]float64, m), make([]float64, m)
	}
	M := make([]float64, m*m)
	tot := make([]float64, m)
	tvec := make([]float64, m)
	bi := make([]float64, m)

	objective := func(mu float64, yy [][]float64) float64 {
		f := 0.0
		for k := 0; k < m; k++ {
			sk := 1.0
			for i := 0; i < n; i++ {
				sk -= yy[i][k]
			}
			if sk <= 0 {
				return math.Inf(-1)
			}
			f += mu * math.Log(sk)
		}
		for i := 0; i < n; i++ {
			ui := p.valGrad(i, yy[i], p.grad)
			if !(ui > 0) {
				return math.Inf(-1)
			}
			f += math.Log(ui)
			for _, x := range yy[i] {
				if x <= 0 {
					return math.Inf(-1)
				}
				f += mu * math.Log(x)
			}
		}
		return f
	}
	trial := make([][]float64, n)
	for i := range trial {
		trial[i] = make([]float64, m)
	}

	allLinear := true
	for _, a := range p.lin {
		allLinear = allLinear && a != nil
	}
	steps := 0
	maxSteps := s.maxNewton()
	res := &Result{}
	stalled := false
	for mu := 1.0; !stalled; mu /= 8 {
		stalled = true // unless the inner loop converges normally
	newton:
		for ; steps < maxSteps; steps++ {
			for k := 0; k < m; k++ {
				slack[k] = 1
				for i := 0; i < n; i++ {
					slack[k] -= y[i][k]
				}
			}
			// Gradient and the blocks B_i = -(∇² of bidder i's terms). A
			// linear bidder's block is diag(μ/y²) + v·vᵀ with v = a/u, inverted
			// in closed form (Sherman-Morrison) when every bidder is linear
			// and the crossover will polish the result; otherwise blocks are
			// factored, which keeps more accuracy for the interior point.
			for k := range M {
				M[k] = 0
			}
			for k := 0; k < m; k++ {
				M[k*m+k] = slack[k] * slack[k] / mu
				tot[k] = 0
			}
			for i := 0; i < n; i++ {
				u[i] = p.valGrad(i, y[i], gv[i])
				for k := 0; k < m; k++ {
					g[i][k] = gv[i][k]/u[i] + mu/y[i][k] - mu/slack[k]
				}
				if allLinear {
					// w = D⁻¹v, α = 1/(1 + v·w); B⁻¹x = x/d - α·w·(w·x).
					w, dinv := B[i][:m], B[i][m:2*m]
					var vw float64
					for k := 0; k < m; k++ {
						dinv[k] = y[i][k] * y[i][k] / mu
						w[k] = dinv[k] * gv[i][k] / u[i]
						vw += gv[i][k] / u[i] * w[k]
					}
					alpha := 1 / (1 + vw)
					B[i][2*m] = alpha
					var wg float64
					for k := 0; k < m; k++ {
						wg += w[k] * g[i][k]
					}
					for k := 0; k < m; k++ {
						r[i][k] = g[i][k]*dinv[k] - alpha*w[k]*wg
						tot[k] += r[i][k]
						M[k*m+k] += dinv[k]
						for l := 0; l < m; l++ {
							M[k*m+l] -= alpha * w[k] * w[l]
						}
					}
					continue
				}
				for k := range B[i] {
					B[i][k] = 0
				}
				for k := 0; k < m; k++ {
					for l := 0; l < m; l++ {
						B[i][k*m+l] = gv[i][k] * gv[i][l] / (u[i] * u[i])
					}
					B[i][k*m+k] += mu / (y[i][k] * y[i][k])
				}
				p.hessVal(i, y[i], -1/u[i], B[i])
				if !cholesky(B[i], m) {
					if mu > 1e-6 {
						return nil, fmt.Errorf("%w: Newton block of bidder %q is not positive definite (is its valuation concave?)", ErrNotConverged, p.bidders[i])
					}
					break newton // rounding has caught up with μ
				}
				copy(r[i], g[i])
				cholSolve(B[i], m, r[i])
				for k := 0; k < m; k++ {
					tot[k] += r[i][k]
					for l := range bi {
						bi[l] = 0
					}
					bi[k] = 1
					cholSolve(B[i], m, bi)
					for l := 0; l < m; l++ {
						M[l*m+k] += bi[l]
					}
				}
			}
			// Woodbury: (A + U Λ Uᵀ)⁻¹ g with A = diag(B_i), Λ = μ/s²:
			// t = (Λ⁻¹ + Σ B_i⁻¹)⁻¹ Σ B_i⁻¹ g_i, d_i = B_i⁻¹ (g_i - t).
			if !cholesky(M, m) {
				break newton // rounding has caught up with μ
			}
			copy(tvec, tot)
			cholSolve(M, m, tvec)
			dec := 0.0
			for i := 0; i < n; i++ {
				if allLinear {
					w, dinv, alpha := B[i][:m], B[i][m:2*m], B[i][2*m]
					var wt float64
					for k := 0; k < m; k++ {
						wt += w[k] * tvec[k]
					}
					for k := 0; k < m; k++ {
						d[i][k] = tvec[k]*dinv[k] - alpha*w[k]*wt
					}
				} else {
					copy(d[i], tvec)
					cholSolve(B[i], m, d[i])
				}
				for k := 0; k < m; k++ {
					d[i][k] = r[i][k] - d[i][k]
					dec += d[i][k] * g[i][k]
				}
			}
			// Linear problems only need the path roughly, to read off the
			// support for the crossover; others are centred tightly.
			if (allLinear && dec < 1e-4*mu) || dec < 1e-13 {
				stalled = false
				break
			}
			// Step to stay strictly feasible, then backtrack (Armijo).
			t := 1.0
			for k := 0; k < m; k++ {
				var ds float64
				for i := 0; i < n; i++ {
					ds += d[i][k]
					if d[i][k] < 0 {
						t = min(t, -0.99*y[i][k]/d[i][k])
					}
				}
				if ds > 0 {
					t = min(t, 0.99*slack[k]/ds)
				}
			}
			f0 := objective(mu, y)
			for ; t > 1e-14; t /= 2 {
				for i := 0; i < n; i++ {
					for k := 0; k < m; k++ {
						trial[i][k] = y[i][k] + t*d[i][k]
					}
				}
				if objective(mu, trial) >= f0+0.25*t*dec {
					break
				}
			}
			if t <= 1e-14 {
				break // no progress at this μ: the numerical floor
			}
			for i := range y {
				copy(y[i], trial[i])
			}
		}
		res.Gap = p.gap(y, u, gv)
		if allLinear && res.Gap <= crossoverGap && p.crossover(y) {
			res.Exact = true
			break
		}
		if res.Gap <= s.gapTol()/10 || mu < 1e-16 || steps >= maxSteps {
			break
		}
	}
	res.Newton = steps
	res.Gap = p.gap(y, u, gv)
	res.Alloc = alloc.NewAllocation(p.bidders, p.c)
	res.Utilities = make([]float64, n)
	p.norm = make([]float64, n)
	for i := range y {
		for k := range y[i] {
			res.Alloc.GPUs[i][k] = y[i][k] * p.c.Count[k]
		}
		p.norm[i] = p.valGrad(i, y[i], gv[i])
		res.Utilities[i] = p.norm[i] * p.scale[i]
	}
	res.Prices = make([]float64, m)
	for k := range res.Prices {
		for i := range y {
			w := res.Utilities[i] / p.scale[i]
			if !normal(res.Utilities[i]) {
				// The utility underflowed (rates near the smallest
				// float64) or overflowed: a price of +Inf or 0.
				w = p.norm[i]
			}
			res.Prices[k] = max(res.Prices[k], gv[i][k]/w)
		}
		res.Prices[k] /= p.c.Count[k]
	}
	if !(res.Gap <= s.gapTol()) {
		return res, fmt.Errorf("%w: gap %.3g after %d Newton steps", ErrNotConverged, res.Gap, steps)
	}
	return res, nil
}

// gap returns Σ_k p_k - n with p_k = max_i ∂w_i/∂y_ik / w_i(y_i) in
// normalised units (capacity 1); u and gv are scratch.
func (p *problem) gap(y [][]float64, u []float64, gv [][]float64) float64 {
	for i := range y {
		u[i] = p.valGrad(i, y[i], gv[i])
	}
	var total float64
	for k := 0; k < p.m; k++ {
		var pk float64
		for i := range y {
			pk = max(pk, gv[i][k]/u[i])
		}
		total += pk
	}
	return total - float64(p.n)
}

// cholesky factors the m×m symmetric positive definite a (row-major) in
// place into L with a = L·Lᵀ (lower triangle). It reports failure.
func cholesky(a []float64, m int) bool {
	for j := 0; j < m; j++ {
		s := a[j*m+j]
		for k := 0; k < j; k++ {
			s -= a[j*m+k] * a[j*m+k]
		}
		if !(s > 0) {
			return false
		}
		ljj := math.Sqrt(s)
		a[j*m+j] = ljj
		for i := j + 1; i < m; i++ {
			s := a[i*m+j]
			for k := 0; k < j; k++ {
				s -= a[i*m+k] * a[j*m+k]
			}
			a[i*m+j] = s / ljj
		}
	}
	return true
}

// cholSolve overwrites b with the solution of L·Lᵀ·x = b.
func cholSolve(l []float64, m int, b []float64) {
	for i := 0; i < m; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i*m+k] * b[k]
		}
		b[i] = s / l[i*m+i]
	}
	for i := m - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < m; k++ {
			s -= l[k*m+i] * b[k]
		}
		b[i] = s / l[i*m+i]
	}
}
