package alloc

import (
	"encoding/binary"
	"math"
)

// rowClasses partitions rows into classes of interchangeable rows (equal
// rates, weights, gangs, ...). Symmetric policies give every member of a class
// the same bundle, so an LP over one representative per class, weighted by the
// class size, has the same optimum as the LP over every row and is far
// smaller on real workloads (Gavel's data has 26 job types × 4 scale factors).
type rowClasses struct {
	rep  []int // rep[c] is the first row of class c
	size []int // size[c] is the number of rows in class c
	of   []int // of[i] is the class of row i
}

// groupRows groups n rows by the exact bits of the values key(i) returns
// (NaN-free input is assumed), in order of first appearance, so the result is
// deterministic.
func groupRows(n int, key func(i int) []float64) rowClasses {
	rc := rowClasses{of: make([]int, n)}
	index := make(map[string]int, n)
	var buf []byte
	for i := 0; i < n; i++ {
		buf = buf[:0]
		for _, x := range key(i) {
			if x == 0 {
				x = 0 // fold -0 into +0
			}
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
		}
		c, ok := index[string(buf)]
		if !ok {
			c = len(rc.rep)
			index[string(buf)] = c
			rc.rep = append(rc.rep, i)
			rc.size = append(rc.size, 0)
		}
		rc.of[i] = c
		rc.size[c]++
	}
	return rc
}

// numClasses returns the number of classes.
func (rc rowClasses) numClasses() int { return len(rc.rep) }

// split returns one row per member from one row per class, each class's
// row divided evenly among its members.
func (rc rowClasses) split(perClass [][]float64) [][]float64 {
	out := make([][]float64, len(rc.of))
	for i, c := range rc.of {
		out[i] = make([]float64, len(perClass[c]))
		for k, x := range perClass[c] {
			out[i][k] = x / float64(rc.size[c])
		}
	}
	return out
}
