package lp

import (
	"math"
	"math/rand/v2"
)

// gavelInstance is a random heterogeneity-aware max-min fairness instance
// as LP-NOTES.md describes: lognormal base throughput, speedups from 1 to 10
// across GPU types, gang sizes 1 (70%), 2-4 (25%) or 8 (5%), weights 1 or 2,
// and about half as many GPUs as jobs.
type gavelInstance struct {
	tput   [][]float64 // jobs × types
	gang   []float64
	weight []float64
	count  []float64 // GPUs per type
}

func newGavelInstance(jobs, types int, seed uint64) gavelInstance {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	in := gavelInstance{
		tput:   make([][]float64, jobs),
		gang:   make([]float64, jobs),
		weight: make([]float64, jobs),
		count:  make([]float64, types),
	}
	for m := range jobs {
		base := math.Exp(r.NormFloat64())
		in.tput[m] = make([]float64, types)
		for k := range types {
			s := 1.0
			if k > 0 {
				s = 1 + 9*r.Float64()
			}
			in.tput[m][k] = base * s
		}
		switch p := r.Float64(); {
		case p < 0.70:
			in.gang[m] = 1
		case p < 0.95:
			in.gang[m] = float64(2 + r.IntN(3))
		default:
			in.gang[m] = 8
		}
		in.weight[m] = float64(1 + r.IntN(2))
	}
	total := max(types, jobs/2)
	for k := range types {
		in.count[k] = 1
	}
	for range total - types {
		in.count[r.IntN(types)]++
	}
	return in
}

// maxMinModel builds Gavel's max-min fairness LP: maximise N·t subject to
// Σ_k T[m][k]·x[m][k] / (w_m·E_m) ≥ t for each job m, Σ_k x[m][k] ≤ 1 and
// Σ_m gang_m·x[m][k] ≤ count_k, where E_m is job m's throughput with
// x[m][k] = count_k/total. With split, t is one column t_m per job chained
// by t_m = t_{m+1} and the objective is Σ_m t_m, which keeps every column
// short for barrier; the optimum is the same.
func (in gavelInstance) maxMinModel(split bool) (*Model, Grid) {
	jobs, types := len(in.tput), len(in.count)
	var total float64
	for _, c := range in.count {
		total += c
	}
	m := NewModel(Maximize)
	x := m.AddGrid("x", jobs, types, 0, 1)
	ts := make([]Var, jobs)
	if split {
		for i := range ts {
			ts[i] = m.AddVar("t", 0, Inf, 1)
		}
	} else {
		t := m.AddVar("t", 0, Inf, float64(jobs))
		for i := range ts {
			ts[i] = t
		}
	}
	coef := make([]float64, types)
	for i := range jobs {
		var eq float64
		for k := range types {
			eq += in.tput[i][k] * in.count[k] / total
		}
		for k := range types {
			coef[k] = in.tput[i][k] / (in.weight[i] * eq)
		}
		m.AddConstraint("fair", append(x.RowTerms(i, coef), Term{ts[i], -1}), GE, 0)
		for k := range coef {
			coef[k] = 1
		}
		m.AddConstraint("time", x.RowTerms(i, coef), LE, 1)
	}
	for k := range types {
		m.AddConstraint("cap", x.ColTerms(k, in.gang), LE, in.count[k])
	}
	if split {
		for i := 0; i+1 < jobs; i++ {
			m.AddConstraint("chain", []Term{{ts[i], 1}, {ts[i+1], -1}}, EQ, 0)
		}
	}
	return m, x
}
