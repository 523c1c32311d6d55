package lp

import "testing"

// TestGridCell: Cell inverts At on a grid that does not start at variable
// 0, and refuses the variables around it.
func TestGridCell(t *testing.T) {
	m := NewModel(Minimize)
	m.AddVar("before", 0, 1, 0)
	g := m.AddGrid("y", 3, 2, 0, Inf)
	m.AddVar("after", 0, 1, 0)
	for i := range 3 {
		for k := range 2 {
			if r, c, ok := g.Cell(g.At(i, k)); !ok || r != i || c != k {
				t.Errorf("Cell(At(%d, %d)) = %d, %d, %v", i, k, r, c, ok)
			}
		}
	}
	for _, v := range []Var{0, 7, -1} {
		if _, _, ok := g.Cell(v); ok {
			t.Errorf("Cell(%d) ok for a variable outside the grid", v)
		}
	}
}
