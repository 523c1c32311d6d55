package alloc

import "sort"

// twoTypeEnvyRows returns, for two GPU types, the envy rows between
// neighbours in the order of speedup angle (s_c2/s_c1, compared without
// division): 2·(C-1) rows that imply all C·(C-1), so that row generation
// seeded with them ends in one round. It returns nil for other K, with
// caps, or when
// two neighbours have parallel rows (the argument below needs a strict
// order; row generation then finds the missing rows).
//
// Why they suffice (single crossing). Write θ_c for the angle of s_c in the
// quadrant, sorted θ_1 < … < θ_C. For a pair of neighbours let d = y_m -
// y_{m+1} and f(θ) = s(θ)·d = |s||d|·cos(θ - φ). The neighbour rows say
// f(θ_m) ≥ 0 ≥ f(θ_{m+1}). If d ≠ 0, f has at most one zero on the
// quadrant (its zeros are π apart) and changes sign there; so f ≤ 0 for
// every θ ≥ θ_{m+1} (a positive value there would need a second zero) and
// f ≥ 0 for every θ ≤ θ_m. Then for j > i,
// s_j·(y_j - y_i) = Σ_{m=i}^{j-1} -f_m(θ_j) ≥ 0, as θ_j ≥ θ_{m+1}; and for
// j < i, s_j·(y_j - y_i) = Σ_{m=j}^{i-1} f_m(θ_j) ≥ 0, as θ_j ≤ θ_m. Every
// envy row holds.
func (q *oefLP) twoTypeEnvyRows() []envyPair {
	if len(q.count) != 2 || len(q.s) < 2 || q.cap != nil { // scaled envy rows break single crossing
		return nil
	}
	order := make([]int, len(q.s))
	for c := range order {
		order[c] = c
	}
	// a before b when s_a2/s_a1 < s_b2/s_b1; rows are non-negative and
	// not zero.
	less := func(a, b int) bool { return q.s[a][1]*q.s[b][0] < q.s[b][1]*q.s[a][0] }
	sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
	rows := make([]envyPair, 0, 2*(len(order)-1))
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if !less(a, b) {
			return nil
		}
		rows = append(rows, envyPair{a, b}, envyPair{b, a})
	}
	return rows
}
