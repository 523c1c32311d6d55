package alloc

import (
	"math"

	"github.com/gpufair/gpufair/speedup"
)

// rateBits is the number of significant bits each rate keeps once it is
// taken relative to the largest rate of its problem. Rates multiplied by a
// common factor then give bit-identical LPs (the rounding of the product
// is far below the 2^-40 grid), so a policy whose LP has several optimal
// vertices returns the same one at every scale; the change to each rate,
// at most 2^-41 relative, is far below every tolerance of the package.
const rateBits = 40

// speedupBits is the number of significant bits a speedup (a ratio of two
// rates, exact to a few ulps at any scale) keeps: enough to absorb the
// rounding of the ratio, and fine enough that distinct speedups stay
// distinct. Rounded to rateBits, non-cooperative OEF's cutting planes at
// 4,096 users × 10 types took 3 s instead of 36 ms.
const speedupBits = 48

// canonical rounds x to rateBits significant bits.
func canonical(x float64) float64 { return roundBits(x, rateBits) }

// roundBits rounds x to bits significant bits.
func roundBits(x float64, bits int) float64 {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	frac, exp := math.Frexp(x)
	return math.Ldexp(math.Round(math.Ldexp(frac, bits)), exp-bits)
}

// validNormalised validates p and returns a copy whose throughputs are
// relative to ref, the largest rate of p (1 when every rate is zero), each
// rounded to rateBits bits; its jobs carry no Rates. Amounts of work that
// go with the rates (steps) convert with work(·, ref). Every policy solves
// the copy, so that its allocation does not depend on the unit of work.
func (p *Problem) validNormalised() (*Problem, float64, error) {
	if err := p.Validate(); err != nil {
		return nil, 0, err
	}
	rates := p.Throughputs.Values()
	ref := 0.0
	for _, row := range rates {
		for _, r := range row {
			ref = math.Max(ref, r)
		}
	}
	if ref == 0 {
		ref = 1
	}
	for _, row := range rates {
		for k, r := range row {
			row[k] = canonical(r / ref)
		}
	}
	tp, err := speedup.New(p.Throughputs.Rows(), p.Throughputs.Types(), rates)
	if err != nil {
		return nil, 0, err
	}
	q := *p
	q.Throughputs = tp
	q.Jobs = make([]Job, len(p.Jobs))
	for i, j := range p.Jobs {
		j.Rates = nil
		q.Jobs[i] = j
	}
	return &q, ref, nil
}

// work returns amounts of work v in the units of rates normalised by ref,
// rounded as they are. A nil v stays nil.
func work(v []float64, ref float64) []float64 {
	if v == nil {
		return nil
	}
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = canonical(x / ref)
	}
	return w
}

// canonicalMatrix returns m with every value rounded to speedupBits bits.
func canonicalMatrix(m *speedup.Matrix) (*speedup.Matrix, error) {
	v := m.Values()
	for _, row := range v {
		for k, x := range row {
			row[k] = roundBits(x, speedupBits)
		}
	}
	return speedup.New(m.Rows(), m.Types(), v)
}
