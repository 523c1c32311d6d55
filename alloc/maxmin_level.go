package alloc

import (
	"context"
	"fmt"

	"github.com/gpufair/gpufair/lp"
)

// levelProblem is the LP that max-min fairness and every water-filling
// round solve, over classes of interchangeable jobs, in GPUs:
//
//	maximise t  subject to  Σ_k rate[c][k]·y[c][k] ≥ base[c] + slope[c]·t   (each class c)
//	                        Σ_k y[c][k] ≤ gang[c]                          (each class c)
//	                        Σ_c size[c]·y[c][k] ≤ count[k]                 (each type k)
//	                        y ≥ 0, t ≥ 0
//
// y[c][k] is the GPUs of type k that each job of class c holds on average
// (Gavel's X_mk·gang_m), rate[c][k] the job's normalised value per GPU of
// type k, and Σ_k rate[c][k]·y[c][k] its normalised effective throughput.
// Every member of a class receives the same bundle: the LP is convex and
// symmetric in interchangeable jobs, so averaging any optimum over their
// permutations gives an optimum of this form.
type levelProblem struct {
	rate  [][]float64
	gang  []float64
	size  []float64
	base  []float64
	slope []float64
	count []float64
}

// levelSolution is an optimum of a levelProblem.
type levelSolution struct {
	t float64
	y [][]float64 // per class, GPUs of each type per job
	// blocked[c] reports classes whose value cannot exceed its row's
	// right-hand side at t in any optimum: their dual is positive (see
	// WaterFilling). nil when the backend gives no duals.
	blocked []bool
	// dual[c] is class c's dual (per job, +Inf at its cap), from which
	// blocked is derived; nil when blocked is.
	dual []float64
	// cuts counts the decomposition's points (0 for the full LP).
	cuts int
}

// numClasses and numTypes are the problem's dimensions.
func (lv *levelProblem) numClasses() int { return len(lv.rate) }
func (lv *levelProblem) numTypes() int   { return len(lv.count) }

// value returns class c's normalised throughput with bundle y.
func (lv *levelProblem) value(c int, y []float64) float64 {
	var v float64
	for k, r := range lv.rate[c] {
		v += r * y[k]
	}
	return v
}

// cap returns the most class c can reach: its gang on its best type.
func (lv *levelProblem) cap(c int) float64 {
	var best float64
	for _, r := range lv.rate[c] {
		best = max(best, r)
	}
	return lv.gang[c] * best
}

// solveLevelFull solves lv as one LP with every class's rows (the reference
// the decomposition is tested against). The objective is scaled by the
// number of classes (LP-NOTES.md: with the literal "maximise t" the fairness
// rows' duals are about 1/N and solvers stop on different vertices).
func solveLevelFull(ctx context.Context, lv *levelProblem, set *lp.Settings) (*levelSolution, error) {
	n, types := lv.numClasses(), lv.numTypes()
	m := lp.NewModel(lp.Maximize)
	y := m.AddGrid("y", n, types, 0, lp.Inf)
	t := m.AddVar("t", 0, lp.Inf, float64(n))
	ones := allOnes(types)
	fair := make([]lp.Row, n)
	for c := range n {
		fair[c] = m.AddConstraint("fair", append(y.RowTerms(c, lv.rate[c]), lp.Term{Var: t, Coef: -lv.slope[c]}), lp.GE, lv.base[c])
		m.AddConstraint("time", y.RowTerms(c, ones), lp.LE, lv.gang[c])
	}
	for k := range types {
		m.AddConstraint("capacity", y.ColTerms(k, lv.size), lp.LE, lv.count[k])
	}
	sol, err := solveSecondOpinion(ctx, m, set)
	if err != nil {
		return nil, fmt.Errorf("alloc: max-min LP: %w", err)
	}
	out := &levelSolution{t: sol.Value(t), y: y.Values(sol)}
	if sol.RowDuals != nil {
		out.blocked, out.dual = blockedByDuals(lv.size, sol.RowDuals, fair)
	}
	return out, nil
}
