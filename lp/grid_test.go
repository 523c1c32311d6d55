package lp

import "testing"

// TestGridCell: Cell inverts At on a grid that does not start at variable
// 0, and refuses the variables around it; Dims gives the grid's shape.
func TestGridCell(t *testing.T) {
	m := NewModel(Minimize)
	m.AddVar("before", 0, 1, 0)
	g := m.AddGrid("y", 3, 2, 0, Inf)
	m.AddVar("after", 0, 1, 0)
	if r, c := g.Dims(); r != 3 || c != 2 {
		t.Errorf("Dims() = %d, %d, want 3, 2", r, c)
	}
	if r, c := m.AddGrid("z", 0, 4, 0, 1).Dims(); r != 0 || c != 4 {
		t.Errorf("Dims() of an empty grid = %d, %d, want 0, 4", r, c)
	}
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
