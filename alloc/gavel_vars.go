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
	p    *Problem
	rc   rowClasses // the classes of jobs that share variables
	x    lp.Grid    // one row per class
	gang []float64  // each class's gang
}

// addTimeFractions adds X, one row per job, and its time and capacity rows
// to m.
func addTimeFractions(m *lp.Model, p *Problem) timeFractions {
	return addClassTimeFractions(m, p, identityClasses(len(p.Jobs)))
}

// addClassTimeFractions adds X over classes of interchangeable jobs (same
// rates, gang and whatever else the policy reads), with its time and
// capacity rows: X[c][k] is the total time fraction of class c's jobs on
// type k, so that Σ_k X_ck ≤ size_c and Σ_c Gang_c·X_ck ≤ Count_k. A
// policy whose objective and rows are symmetric within a class has an
// optimum that splits each class evenly, which allocation returns: the LP
// is as small as the number of classes (26 job types × 4 scale factors in
// Gavel's data) rather than of jobs.
func addClassTimeFractions(m *lp.Model, p *Problem, rc rowClasses) timeFractions {
	n, types := rc.numClasses(), p.Capacity.NumTypes()
	hi := 1.0
	if n < len(p.Jobs) {
		hi = lp.Inf // bounded by the class's time row
	}
	x := m.AddGrid("X", n, types, 0, hi)
	ones := allOnes(types)
	for c := range n {
		m.AddConstraint("time", x.RowTerms(c, ones), lp.LE, float64(rc.size[c]))
	}
	gang := p.classGangs(rc)
	for k, count := range p.Capacity.Count {
		m.AddConstraint("capacity", x.ColTerms(k, gang), lp.LE, count)
	}
	return timeFractions{p: p, rc: rc, x: x, gang: gang}
}

// throughput returns class c's effective throughput Σ_k T_ck·X_ck (job c's
// when X is per job), each rate multiplied by scale (for example
// 1/(weight·normaliser)).
func (v timeFractions) throughput(c int, scale float64) []lp.Term {
	r := v.p.Throughputs.Row(v.rc.rep[c])
	for k := range r {
		r[k] *= scale
	}
	return v.x.RowTerms(c, r)
}

// values returns X per job: each class's time split evenly among its jobs.
func (v timeFractions) values(s *lp.Solution) [][]float64 {
	return v.rc.split(v.x.Values(s))
}

// allocation converts a solution into an Allocation in GPUs (X·Gang), after
// repairing the small violations a simplex vertex may carry (LP-NOTES.md:
// up to a few 1e-6 without presolve): each X is clipped to [0, 1], a row
// whose time exceeds 1 is scaled down to 1, and a type used beyond its count
// is scaled down to it. Scaling down keeps every other row satisfied.
func (v timeFractions) allocation(s *lp.Solution) *Allocation {
	return timeFractionsToAllocation(v.p, v.values(s))
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

// rateClasses groups p's jobs by their rates, gang and, when extra is not
// nil, the values extra(i) returns (a policy's per-job inputs).
func (p *Problem) rateClasses(extra func(i int) []float64) rowClasses {
	return groupRows(len(p.Jobs), func(i int) []float64 {
		key := append(p.Throughputs.Row(i), float64(p.Jobs[i].Gang))
		if extra != nil {
			key = append(key, extra(i)...)
		}
		return key
	})
}

// classGangs returns the gang size of each class of rc's jobs, as a
// float64 (rc groups jobs of equal gang).
func (p *Problem) classGangs(rc rowClasses) []float64 {
	g := make([]float64, rc.numClasses())
	for c, i := range rc.rep {
		g[c] = float64(p.Jobs[i].Gang)
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
