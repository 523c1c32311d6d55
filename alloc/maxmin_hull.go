package alloc

// hull is the lower convex hull of (0, 0) and the points (rate_k, p_k) of
// one class, the cheapest way to buy value per unit of time at prices p
// (see the decomposition in maxmin_decomp.go). v[0] is idle (no type); the
// slopes increase along v.
type hull struct{ v []vertex }

// vertex is one vertex of a hull: type typ (-1 when idle), worth a per unit
// of time at cost q; slope is the hull's slope from the previous vertex.
type vertex struct {
	a, q, slope float64
	typ         int
}

// typeRate is a usable type of a class and its rate.
type typeRate struct {
	k int
	x float64
}

// buildHull computes the hull of one class's types at prices p, visiting
// them in order (rates ascending). It reuses h's vertices: the oracle
// builds every class's hull at every point, the decomposition's inner loop.
func buildHull(h *hull, order []typeRate, p []float64) {
	v := append(h.v[:0], vertex{typ: -1})
	for _, tr := range order {
		x, c := tr.x, p[tr.k]
		n := len(v)
		// A type no denser than the last vertex and no cheaper is useless.
		for ; n > 1; n-- {
			last, prev := &v[n-1], &v[n-2]
			if x == last.a {
				if c >= last.q {
					goto next
				}
			} else if (c-last.q)*(last.a-prev.a) > (last.q-prev.q)*(x-last.a) {
				break // convex turn: keep the last vertex
			}
		}
		v = append(v[:n], vertex{a: x, q: c, typ: tr.k})
	next:
	}
	// Slopes of the vertices kept only: a division costs more than the
	// rest of a step.
	for i := 1; i < len(v); i++ {
		v[i].slope = (v[i].q - v[i-1].q) / (v[i].a - v[i-1].a)
	}
	h.v = v
}

// snapTol is the fraction of a hull segment below which a point counts as
// at the segment's end.
const snapTol = 1e-12

// at returns the hull's cost at value u per unit of time (u ≤ the last
// vertex's value) and the segment u lies on: u is between vertices i-1 and i,
// at fraction f from i-1 (f = 1 at a vertex).
func (h *hull) at(u float64) (cost float64, i int, f float64) {
	v := h.v
	i = 1
	for i < len(v)-1 && u > v[i].a {
		i++
	}
	f = 1
	if d := v[i].a - v[i-1].a; d > 0 {
		f = min(1, max(0, (u-v[i-1].a)/d))
		// Snap rounding noise to the vertices: a share of 1e-16 of a
		// type becomes a coefficient CLP mishandles (it returned a
		// non-optimal vertex of the master with one).
		if f < snapTol {
			f = 0
		} else if f > 1-snapTol {
			f = 1
		}
	}
	return v[i-1].q + f*(v[i].q-v[i-1].q), i, f
}
