package alloc

import (
	"context"
	"encoding/binary"
	"errors"
	"math"

	"github.com/gpufair/gpufair/lp"
)

// Non-cooperative OEF through its dual. Relaxing capacity with prices p ≥ 0
// over the K GPU types, the cheapest way to give class c a level t costs
// w_c·t·min_k p_k/s_ck, so LP duality gives
//
//	t* = min { m·p : g(p) ≥ 1, p ≥ 0 },  g(p) = Σ_c w_c·min_{k: s_ck>0} p_k/s_ck.
//
// g is concave and piecewise linear, the minimum of the linear functions
// a_σ·p, (a_σ)_k = Σ_{c: σ(c)=k} w_c/s_ck, over assignments σ of classes to
// types. Kelley's cutting planes solve it in K dimensions: solve the LP over
// the cuts found so far (a lower bound on t*), evaluate g at its solution
// (m·p/g(p) is an upper bound) and add the cut of the cheapest assignment,
// until the bounds meet. Complementary slackness then says that class c
// holds only types k minimising p_k/s_ck; most classes have one such type
// and their bundle is t/s_ck, and a small LP splits the few tied classes.
// The recovered t is checked against the upper bound (a duality
// certificate); if the check fails, the full LP is solved instead.

const (
	// cutGapTol is the relative gap between the cutting-plane bounds at
	// which the dual is taken as solved.
	cutGapTol = 1e-10
	// maxCuts bounds the cutting-plane rounds before falling back to the
	// full LP.
	maxCuts = 300
	// tieTol is the relative slack within which a type counts as one of a
	// class's cheapest. Too large only makes the recovery LP larger.
	tieTol = 1e-7
	// certTol is the relative shortfall of the recovered level below the
	// dual bound that is accepted as optimal.
	certTol = 1e-8
)

// solveNonCoopDual solves non-cooperative OEF as described above.
func (q *oefLP) solveNonCoopDual(ctx context.Context, set *lp.Settings) ([][]float64, error) {
	p, bound, ok, err := q.cheapestLevelPrices(ctx, set)
	if err != nil && !errors.Is(err, lp.ErrNumerical) {
		return nil, err
	}
	if ok && err == nil {
		y, t, err := q.recoverLevel(ctx, set, p)
		if err != nil && !errors.Is(err, lp.ErrNumerical) {
			return nil, err
		}
		if err == nil && t >= bound*(1-certTol) {
			return y, nil
		}
	}
	// The bounds did not meet, the certificate failed, or the backend gave
	// up on a small LP (gonum's dense simplex does on near-parallel cuts).
	return q.solveNonCoopFull(ctx, set)
}

// cheapestLevelPrices runs the cutting planes, stabilised in the in-out
// manner: besides the cut at the LP's point it adds the cut at the midpoint
// of that point and the best prices so far, which moves the LP far less
// than plain Kelley rounds do. It returns the prices with the best upper
// bound found, that bound, and whether the bounds met.
func (q *oefLP) cheapestLevelPrices(ctx context.Context, set *lp.Settings) (best []float64, upper float64, ok bool, err error) {
	// The LP's variables are W·p, W the total weight, and its cuts a_σ/W:
	// prices are about 1/W, and unscaled cuts of coefficients about W break
	// the solver's absolute tolerances at thousands of users.
	K, W := len(q.count), q.totalWeight()
	m := lp.NewModel(lp.Minimize)
	price := make([]lp.Var, K)
	for k, n := range q.count {
		price[k] = m.AddVar("Wp", 0, lp.Inf, n/W)
	}
	in, err := lp.NewIncremental(m, set)
	if err != nil {
		return nil, 0, false, err
	}
	defer in.Close()
	seen := make(map[string]bool) // a repeated cut makes the LP singular for gonum
	var key []byte
	addCut := func(a []float64) {
		key = key[:0]
		for _, x := range a {
			key = binary.LittleEndian.AppendUint64(key, math.Float64bits(x))
		}
		if seen[string(key)] {
			return
		}
		seen[string(key)] = true
		terms := make([]lp.Term, 0, K)
		for k, x := range a {
			if x != 0 {
				terms = append(terms, lp.Term{Var: price[k], Coef: x / W})
			}
		}
		in.AddConstraint("cut", terms, lp.GE, 1)
	}
	inv := q.inverseSpeeds()
	upper = math.Inf(1)
	// evaluate returns the cut at p and keeps p if its bound is the best.
	evaluate := func(p []float64) []float64 {
		g, a := q.levelCost(inv, p)
		if g > 0 {
			if u := dot(q.count, p) / g; u < upper {
				upper, best = u, append(best[:0], p...)
			}
		}
		return a
	}
	// Seed with the cuts of uniform prices and of every class on each type
	// it can use, which bound p from every side.
	ones := allOnes(K)
	addCut(evaluate(ones))
	for k := range K {
		addCut(q.allOnType(k))
	}
	mid := make([]float64, K)
	for range maxCuts {
		sol, err := in.Solve(ctx)
		if err != nil {
			return nil, 0, false, err
		}
		p := sol.X[:K]
		for k := range p {
			p[k] /= W
			mid[k] = (p[k] + best[k]) / 2
		}
		addCut(evaluate(p))
		addCut(evaluate(mid))
		if upper-sol.Objective <= cutGapTol*upper {
			return best, upper, true, nil
		}
	}
	return best, upper, false, nil
}

// inverseSpeeds returns 1/s_ck, +Inf where s_ck is zero: p_k·(1/s_ck) is
// then +Inf, or NaN when p_k is 0, and either loses every comparison in
// levelCost, so a class never picks a type it cannot use.
func (q *oefLP) inverseSpeeds() [][]float64 {
	inv := make([][]float64, len(q.s))
	for c, s := range q.s {
		inv[c] = make([]float64, len(s))
		for k, r := range s {
			inv[c][k] = 1 / r
		}
	}
	return inv
}

// levelCost returns g(p) and the cut a_σ of the cheapest assignment σ at p.
// Every class can use its slowest type (its speedup there is 1), so σ is
// always defined.
func (q *oefLP) levelCost(inv [][]float64, p []float64) (float64, []float64) {
	a := make([]float64, len(p))
	var g float64
	for c, iv := range inv {
		best, at := math.Inf(1), -1
		for k, x := range iv {
			if v := p[k] * x; v < best {
				best, at = v, k
			}
		}
		g += q.w[c] * best
		a[at] += q.w[c] * iv[at]
	}
	return g, a
}

// allOnType returns the cut of the assignment of every class to type k,
// or, for a class that cannot use k, to its fastest type.
func (q *oefLP) allOnType(k int) []float64 {
	a := make([]float64, len(q.count))
	for c, s := range q.s {
		at := k
		if s[k] == 0 {
			at = argMax(s)
		}
		a[at] += q.w[c] / s[at]
	}
	return a
}

// recoverLevel returns the allocation of the highest common level t that
// gives each class only its cheapest types at prices p, and t.
func (q *oefLP) recoverLevel(ctx context.Context, set *lp.Settings, p []float64) ([][]float64, float64, error) {
	K := len(q.count)
	pmax := 0.0
	for _, x := range p {
		pmax = max(pmax, x)
	}
	cheapest := make([][]int, len(q.s))
	for c, s := range q.s {
		best := math.Inf(1)
		for k, r := range s {
			if r > 0 {
				best = min(best, p[k]/r)
			}
		}
		for k, r := range s {
			if r > 0 && p[k]/r <= best*(1+tieTol)+1e-12*pmax/r {
				cheapest[c] = append(cheapest[c], k)
			}
		}
	}
	m := lp.NewModel(lp.Maximize)
	t := m.AddVar("t", 0, lp.Inf, q.totalWeight())
	capacity := make([][]lp.Term, K)
	split := make([][]lp.Var, len(q.s)) // split[c][j]: y for type cheapest[c][j]
	for c, ks := range cheapest {
		if len(ks) == 1 {
			k := ks[0]
			capacity[k] = append(capacity[k], lp.Term{Var: t, Coef: q.w[c] / q.s[c][k]})
			continue
		}
		level := []lp.Term{{Var: t, Coef: -1}}
		for _, k := range ks {
			v := m.AddVar("y", 0, lp.Inf, 0)
			split[c] = append(split[c], v)
			level = append(level, lp.Term{Var: v, Coef: q.s[c][k]})
			capacity[k] = append(capacity[k], lp.Term{Var: v, Coef: q.w[c]})
		}
		m.AddConstraint("level", level, lp.EQ, 0)
	}
	for k, terms := range capacity {
		m.AddConstraint("capacity", terms, lp.LE, q.count[k])
	}
	sol, err := lp.Solve(ctx, m, set)
	if err != nil {
		return nil, 0, err
	}
	level := sol.Value(t)
	y := make([][]float64, len(q.s))
	for c, ks := range cheapest {
		y[c] = make([]float64, K)
		if len(ks) == 1 {
			y[c][ks[0]] = level / q.s[c][ks[0]]
			continue
		}
		for j, k := range ks {
			y[c][k] = sol.Value(split[c][j])
		}
	}
	return y, level, nil
}

func argMax(xs []float64) int {
	at := 0
	for i, x := range xs {
		if x > xs[at] {
			at = i
		}
	}
	return at
}
