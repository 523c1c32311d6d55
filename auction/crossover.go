package auction

import (
	"math"
)

// crossover turns an approximate Eisenberg-Gale optimum of an all-linear
// problem (normalised units: capacity 1 per type) into an exact one, as a
// simplex crossover does after an interior point. The interior point's
// utilities are only accurate to about the square root of its gap (Σ log v
// is flat along the optimal face), so prices and the support are read off it
// and then solved exactly:
//
//  1. edges (i,k) where k is within ε of bidder i's best bang per buck
//     a_ik/p_k form the candidate equality graph;
//  2. along a spanning forest of it, p_l/p_k = a_il/a_ik and u_i = a_ik/p_k
//     fix prices up to one factor per component, which makes the
//     component's spending Σ p_k equal its number of bidders (budgets 1);
//  3. the prices must leave no bidder a better bang per buck elsewhere, and
//     a max-flow of budgets over the tight edges must sell every good.
//
// Success is an exact market equilibrium, hence the optimum; several ε are
// tried from the loosest plausible. It returns false when none works (the
// caller keeps the interior point).
func (p *problem) crossover(y [][]float64) bool {
	n, m := p.n, p.m
	u := make([]float64, n)
	price := make([]float64, m)
	for i := range y {
		for k, a := range p.lin[i] {
			u[i] += a * y[i][k]
		}
	}
	for k := 0; k < m; k++ {
		for i := 0; i < n; i++ {
			price[k] = max(price[k], p.lin[i][k]/u[i])
		}
	}
	for _, eps := range []float64{1e-4, 1e-3, 1e-5, 1e-2, 1e-6, 1e-7} {
		if x, ok := p.tryEquilibrium(u, price, eps); ok {
			for i := range y {
				copy(y[i], x[i])
			}
			return true
		}
	}
	return false
}

// exactTol is the relative slack of floating-point equalities in the exact
// equilibrium: bang-per-buck ties and budget sums.
const exactTol = 1e-11

func (p *problem) tryEquilibrium(u0, p0 []float64, eps float64) ([][]float64, bool) {
	n, m := p.n, p.m
	a := p.lin
	edge := func(i, k int) bool { return a[i][k] > 0 && p0[k] > 0 && a[i][k]/p0[k] >= (1-eps)*u0[i] }
	price := make([]float64, m)
	u := make([]float64, n)
	doneB := make([]bool, n)
	doneG := make([]bool, m)
	for start := 0; start < m; start++ {
		if doneG[start] {
			continue
		}
		// BFS over the component of good start, pricing along tree edges
		// (log scale first, to avoid overflow along long chains).
		logp := map[int]float64{start: 0}
		goods, buyers := []int{start}, []int{}
		doneG[start] = true
		for q := 0; q < len(goods); q++ {
			k := goods[q]
			for i := 0; i < n; i++ {
				if doneB[i] || !edge(i, k) {
					continue
				}
				doneB[i] = true
				buyers = append(buyers, i)
				lu := math.Log(a[i][k]) - logp[k]
				u[i] = lu // log for now
				for l := 0; l < m; l++ {
					if !doneG[l] && edge(i, l) {
						doneG[l] = true
						logp[l] = math.Log(a[i][l]) - lu
						goods = append(goods, l)
					}
				}
			}
		}
		if len(buyers) == 0 {
			price[start] = 0 // nobody's best buy: unsold, worth nothing
			continue
		}
		var spend float64
		ref := logp[goods[0]]
		for _, k := range goods {
			spend += math.Exp(logp[k] - ref)
		}
		// λ·Σ p_k = |buyers| with p_k = exp(logp_k - ref)·λ.
		lam := float64(len(buyers)) / spend
		for _, k := range goods {
			price[k] = math.Exp(logp[k]-ref) * lam
		}
		for _, i := range buyers {
			u[i] = math.Exp(u[i]-ref) / lam
		}
	}
	for i := 0; i < n; i++ {
		if !doneB[i] {
			return nil, false
		}
	}
	// No bidder may find a better bang per buck than its tree says.
	tight := make([][]bool, n)
	for i := 0; i < n; i++ {
		tight[i] = make([]bool, m)
		for k := 0; k < m; k++ {
			if a[i][k] == 0 {
				continue
			}
			if price[k] == 0 {
				return nil, false
			}
			r := a[i][k] / price[k]
			if r > u[i]*(1+exactTol) {
				return nil, false
			}
			tight[i][k] = r >= u[i]*(1-exactTol)
		}
	}
	// Max-flow of budgets (1 each) over tight edges into goods (worth p_k).
	flow, ok := budgetFlow(n, m, tight, price)
	if !ok {
		return nil, false
	}
	// Every priced good is sold whole (the budgets, n in all, equal the
	// prices' sum): each good's shares are scaled to sum to exactly 1, so
	// that rounding in flow/price never grants more than the capacity.
	x := make([][]float64, n)
	for i := range x {
		x[i] = make([]float64, m)
	}
	for k := 0; k < m; k++ {
		var sold float64
		for i := range x {
			if flow[i][k] > 0 {
				x[i][k] = flow[i][k] / price[k]
				sold += x[i][k]
			}
		}
		for i := range x {
			if sold > 0 {
				x[i][k] /= sold
			}
		}
	}
	return x, true
}

// budgetFlow sends each bidder's budget of 1 along tight edges to goods of
// capacity price[k] (Edmonds-Karp on the small bipartite network). It
// reports whether every budget is spent, and so every priced good sold.
func budgetFlow(n, m int, tight [][]bool, price []float64) ([][]float64, bool) {
	N := n + m + 2
	src, snk := n+m, n+m+1
	capa := make([][]float64, N)
	for v := range capa {
		capa[v] = make([]float64, N)
	}
	inf := float64(n) + 1
	for i := 0; i < n; i++ {
		capa[src][i] = 1
		for k := 0; k < m; k++ {
			if tight[i][k] {
				capa[i][n+k] = inf
			}
		}
	}
	for k := 0; k < m; k++ {
		capa[n+k][snk] = price[k]
	}
	// The flow on each edge is kept apart from the residual capacities: as
	// their difference it would lose the digits of a tiny price next to
	// the large capacity of a tight edge.
	net := make([][]float64, N)
	for v := range net {
		net[v] = make([]float64, N)
	}
	const resid = 1e-15
	var total float64
	prev := make([]int, N)
	for {
		for v := range prev {
			prev[v] = -1
		}
		prev[src] = src
		queue := []int{src}
		for q := 0; q < len(queue) && prev[snk] < 0; q++ {
			v := queue[q]
			for w := 0; w < N; w++ {
				if prev[w] < 0 && capa[v][w] > resid {
					prev[w] = v
					queue = append(queue, w)
				}
			}
		}
		if prev[snk] < 0 {
			break
		}
		f := math.Inf(1)
		for w := snk; w != src; w = prev[w] {
			f = min(f, capa[prev[w]][w])
		}
		for w := snk; w != src; w = prev[w] {
			capa[prev[w]][w] -= f
			capa[w][prev[w]] += f
			net[prev[w]][w] += f
			net[w][prev[w]] -= f
		}
		total += f
	}
	if total < float64(n)*(1-exactTol*10) {
		return nil, false
	}
	flow := make([][]float64, n)
	for i := range flow {
		flow[i] = make([]float64, m)
		for k := 0; k < m; k++ {
			if f := net[i][n+k]; f > 0 {
				flow[i][k] = f
			}
		}
	}
	return flow, true
}
