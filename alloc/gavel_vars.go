package alloc

import (
	"github.com/gpufair/gpufair/lp"
)

// timeFractions are Gavel's allocation variables: X[m][k] is the fraction of
// wall time job m runs on GPUs of type k (on Gang GPUs at once), with
//
//	0 ≤ X_mk ≤ 1,
//	Σ_k X_mk ≤ 1                 (a job runs on one type at a time),
//	Σ_m Gang_m·X_mk ≤ Count_k    (no type is used beyond its count).
//
// Job m's effective throughput is Σ_k T_mk·X_mk, with T the problem's
// throughputs (the rate of the whole job at its gang size). Every Gavel
// policy is an objective and a few rows over these variables.
type timeFractions struct {
	p *Problem
	x lp.Grid
}

// addTimeFractions adds X and its time and capacity rows to m.
func addTimeFractions(m *lp.Model, p *Problem) timeFractions {
	jobs, types := len(p.Jobs), p.Capacity.NumTypes()
	x := m.AddGrid("X", jobs, types, 0, 1)
	ones := allOnes(types)
	for i := range jobs {
		m.AddConstraint("time", x.RowTerms(i, ones), lp.LE, 1)
	}
	gang := p.gangs()
	for k, n := range p.Capacity.Count {
		m.AddConstraint("capacity", x.ColTerms(k, gang), lp.LE, n)
	}
	return timeFractions{p: p, x: x}
}

// throughput returns job i's effective throughput Σ_k T_ik·X_ik, each rate
// multiplied by scale (for example 1/(weight·normaliser)).
func (v timeFractions) throughput(i int, scale float64) []lp.Term {
	r := v.p.Throughputs.Row(i)
	for k := range r {
		r[k] *= scale
	}
	return v.x.RowTerms(i, r)
}

// allocation converts a solution into an Allocation in GPUs (X·Gang), after
// repairing the small violations a simplex vertex may carry (LP-NOTES.md:
// up to a few 1e-6 without presolve): each X is clipped to [0, 1], a row
// whose time exceeds 1 is scaled down to 1, and a type used beyond its count
// is scaled down to it. Scaling down keeps every other row satisfied.
func (v timeFractions) allocation(s *lp.Solution) *Allocation {
	return timeFractionsToAllocation(v.p, v.x.Values(s))
}

// timeFractionsToAllocation repairs X as allocation describes and returns
// it in GPUs. It modifies x.
func timeFractionsToAllocation(p *Problem, x [][]float64) *Allocation {
	for _, row := range x {
		var sum float64
		for k, f := range row {
			row[k] = min(max(f, 0), 1)
			sum += row[k]
		}
		if sum > 1 {
			for k := range row {
				row[k] /= sum
			}
		}
	}
	a := NewAllocation(p.JobIDs(), p.Capacity)
	for i, row := range x {
		g := float64(p.Jobs[i].Gang)
		for k, f := range row {
			a.GPUs[i][k] = f * g
		}
	}
	for k, used := range a.Used() {
		if n := p.Capacity.Count[k]; used > n {
			for i := range a.GPUs {
				a.GPUs[i][k] *= n / used
			}
		}
	}
	return a
}

// gangs returns each job's gang size as a float64, in job order.
func (p *Problem) gangs() []float64 {
	g := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		g[i] = float64(j.Gang)
	}
	return g
}

// equalShareThroughputs returns each job's throughput when it runs an equal
// time share of every GPU type in proportion to the type's count (Gavel's
// normaliser: X_mk = Count_k / total GPUs; ERRATA.md in the design notes).
// A job with a zero entry cannot be normalised; its index is returned as
// zero, and -1 when there is none.
func (p *Problem) equalShareThroughputs() (rates []float64, zero int) {
	rates, err := p.Throughputs.EqualShareRates(p.Capacity.Count)
	if err != nil {
		// Problem.Validate has checked the shape and the counts.
		panic("alloc: " + err.Error())
	}
	for i, r := range rates {
		if r == 0 {
			return rates, i
		}
	}
	return rates, -1
}
