package lp

import (
	"context"
	"math"
	"slices"
)

// The pure-Go backend is a sparse bounded simplex on
//
//	minimise cᵀx  subject to  A x + s = 0,  l ≤ x ≤ u,  -hi ≤ s ≤ -lo
//
// (scaled as for CLP) where s holds one logical variable per row
// (s_i = -a_i x), so that every variable, structural or logical, is simply
// bounded and the slack basis is the identity. Each run starts with a dual
// phase (dual.go), unless its basis is already primal feasible
// (startsFeasible), and ends with the primal simplex, which proves the
// result. Phase 1 minimises the sum of infeasibilities of the basic
// variables (a composite phase: the costs are recomputed every iteration),
// phase 2 the objective. Nonbasic variables sit anywhere in their bounds
// (usually at one), so a variable dropped from a singular basis simply
// stays where it is. The ratio test is Harris's two-pass test with bound
// flips and bound shifting; pricing is Devex (pricing.go). After a run of
// degenerate pivots in phase 2 the bounds of the basic variables that sit
// on one are widened a little (perturb), and once the perturbed LP is
// optimal they are restored and the dual simplex repairs what that leaves;
// past a few perturbations pricing falls back to Bland's smallest index,
// so that it cannot cycle. The basis inverse is kept as the bump's in
// product form (etaFile, ftran) and rebuilt every refactorEvery pivots, or
// sooner (refactorDue).

// Tolerances of the pure-Go simplex.
const (
	// spxPrimalTol is the violation of a bound, scaled by max(1, |bound|),
	// that still counts as feasible; the Harris ratio test moves bounds
	// by up to this much.
	spxPrimalTol = 1e-9
	// spxDualTol is the reduced cost, scaled by the column norm, below
	// which a nonbasic variable is not worth entering.
	spxDualTol = 1e-9
	// spxPivotTol is the smallest entry of B⁻¹a_q, relative to its
	// largest (or to 1, if that is smaller), that may be pivoted on: a
	// smaller one makes the next basis nearly singular. When the ratio
	// test can only pivot on a smaller entry, the entering column is
	// rejected until the basis changes.
	spxPivotTol = 1e-7
	// spxLooseTol is the scaled infeasibility below which phase 1 that
	// can make no progress is taken for roundoff rather than proof of
	// infeasibility; Solve's check against Settings.FeasibilityTol has
	// the last word.
	spxLooseTol = 1e-7
	// spxMinPivotTol is the smallest pivot tolerance the simplex falls
	// back to when every improving column offers only small pivots.
	spxMinPivotTol = 1e-11
	// spxZeroTol is the entry of B⁻¹a_q below which the ratio test treats
	// it as zero.
	spxZeroTol = 1e-11
	// spxSingularTol is the size, relative to the column's largest
	// coefficient, below which no pivot is taken in a refactorisation:
	// the column is dropped from the basis as dependent.
	spxSingularTol = 1e-12
	// spxMarkowitzTol is the fraction of the largest candidate that a
	// refactorisation pivot must reach; among those it takes the sparsest
	// row.
	spxMarkowitzTol = 0.1
	// spxStrictMarkowitzTol is spxMarkowitzTol for a run that repeats one
	// that got stuck: nearly partial pivoting, denser but more accurate.
	spxStrictMarkowitzTol = 0.9
)

const (
	// refactorEvery bounds the pivots kept as eta updates.
	refactorEvery = 64
	// ctxEvery is how many iterations pass between context checks.
	ctxEvery = 1
	// ctxColumns is how many columns a refactorisation pivots in between
	// context checks.
	ctxColumns = 64
	// devexReset is the weight beyond which Devex pricing starts a new
	// reference framework.
	devexReset = 1e6
	// steepMin is the floor of a dual steepest-edge weight, which the
	// update formula can lose to cancellation.
	steepMin = 1e-4
	// blandAfter is the run of pivots without progress (degenerate, or
	// raising the measure through roundoff) after which pricing switches
	// to Bland's rule until a pivot makes progress.
	blandAfter = 50
	// maxPerturbs bounds how often a run perturbs bounds (perturb) before
	// it leaves degeneracy to Bland's rule.
	maxPerturbs = 3
	// perturbScale is the size of a perturbation relative to
	// max(1, |bound|).
	perturbScale = 1e-6
)

// spxOutcome is how a simplex run ended.
type spxOutcome int

const (
	spxOptimal spxOutcome = iota
	spxInfeasible
	spxUnbounded
	spxIterationLimit
	spxStopped // the context ended
	spxStuck   // no progress within the iteration cap
	// spxPerturbed: optimal for bounds perturbed against degeneracy
	// (perturb), which run restores before going on.
	spxPerturbed
)

// spxEntry is one coefficient of a structural column.
type spxEntry struct {
	row int
	val float64
}

// simplex holds an LP in the form above with a basis, between solves: rows
// may be appended and bounds changed, and the next run starts from the
// last basis (a warm start).
type simplex struct {
	m, n int // rows; structural columns
	// loaded is the number of the model's rows loaded; internal row i is
	// the model's row modelRow[i] (nil: i), as dropped rows are removed.
	loaded   int
	modelRow []int
	sc       *scaling // the model's scaling: every value below is scaled
	sense    float64  // 1 when minimising, -1 when maximising
	// A by column: column j is colEnt[colStart[j]:colStart[j+1]].
	colStart []int
	colEnt   []spxEntry
	cnorm    []float64 // 1 + ‖a_j‖² for structurals, 1 for logicals: pricing weights
	cost     []float64 // minimisation costs, n+m (logicals 0)
	lo, up   []float64 // bounds, n+m
	x        []float64 // values, n+m
	head     []int     // basic variable at each position (row)
	where    []int     // position of a basic variable, -1 if nonbasic
	eta      etaFile
	upper    etaFile // a refactorisation's U columns, until they join eta
	fresh    bool    // no pivot since the last refactorisation
	iters    int

	// work arrays of length m; wNZ lists the nonzeros of w in the primal
	// simplex's ratio test and step
	y, w, cb []float64
	wNZ      []int
	cand     []blocker // the ratio test's
	// refactorisation work
	etaOf  []int
	mark   []bool
	rcount []int
	heap   intHeap
	// rejected[j] == rejectEpoch marks a column that gave no usable pivot
	// since the last basis change.
	rejected    []int
	rejectEpoch int
	// factorLen and factorNNZ are the eta count and their nonzeros right
	// after the last refactorisation.
	factorLen, factorNNZ int
	// inBump marks the rows of the bump, listed in bumpRows (see ftran);
	// lowerOf[p] holds the entries off the bump of the column basic at
	// bump position p (setLower), in lowerEnt; rowBuf is bumpEntries'.
	inBump   []bool
	bumpRows []int
	lowerOf  [][]spxEntry
	lowerEnt []spxEntry
	rowBuf   []spxEntry
	// pivotTol is spxPivotTol, lowered step by step while every improving
	// column offers only smaller pivots.
	pivotTol float64
	// strict makes refactorisations pivot with spxStrictMarkowitzTol.
	strict bool
	// devex holds the Devex pricing weights of the nonbasic variables,
	// dualWeights the dual phase's of the basic ones (steepest-edge or
	// Devex: see dual.go); steepest is SteepestEdgePricing.
	devex, dualWeights []float64
	steepest           bool
	// weightsKept records that dualWeights are the steepest-edge weights
	// of the basis the last dual phase ended on, at iteration weightsAt;
	// a weight of 0 is one not known yet (a row added since).
	weightsKept bool
	weightsAt   int
	// repaired records that the last refactorisation replaced a dependent
	// basic column by a logical.
	repaired bool
	// rho is the pivot row's ρ = B⁻ᵀe_r, tau is B⁻¹ρ (the dual phase's
	// steepest-edge update); alpha holds ρᵀa_j for the
	// nonbasic variables listed in alphaNZ (pivotRow), rhoNZ the rows
	// where ρ is nonzero, inRow marks columns while the row is summed.
	rho, tau       []float64
	alpha          []float64
	alphaNZ, rhoNZ []int
	inRow          []bool
	// isBasic[j] is where[j] >= 0 while basicOK (syncBasic): the pivot
	// row's test of each entry's column, in a byte rather than an int.
	isBasic []bool
	basicOK bool
	// checkBasic makes pivotRow compare isBasic with where whenever it
	// relies on it, counting the checks and the variables that disagree
	// (verifyBasic; for tests).
	checkBasic              bool
	basicChecks, basicWrong int
	// A by row, for the pivot row (buildRows): row i is
	// rowEnt[rowStart[i]:rowStart[i+1]], each entry naming its column.
	rowStart []int
	rowEnt   []spxEntry
	// d holds phase 2's reduced costs, valid while dOK: kept up to date
	// along the pivot row between refactorisations.
	d   []float64
	dOK bool
	// obj is the objective cᵀx, valid while objOK: kept up to date along
	// each step (progressMeasure).
	obj   float64
	objOK bool
	// Phase 2's pricing candidates (price): while listOK, every nonbasic
	// variable outside list (inList marks those in it) scores at most
	// threshold.
	list      []int
	inList    []bool
	threshold float64
	listOK    bool
	topHeap   []scored
	// shifting allows bound shifts; shifts holds the original bounds of
	// the shifted variables (isShifted marks them), all restored before
	// a run returns.
	shifting  bool
	shifts    []shift
	isShifted []bool
	// maybeInfeasible marks, one bit a row, the rows the dual phase must
	// look at again for its leaving variable, infeasible those it found
	// infeasible, with the square of the infeasibility and the row's
	// weight in violSq and violWeight (leavingRow).
	maybeInfeasible, infeasible []uint64
	violSq, violWeight          []float64
	// moves holds, during the dual phase, the directions each variable
	// may move in (setMoves).
	moves []uint8
	// perturbs counts the perturbations of this run (perturb); -1 when
	// it may perturb no more.
	perturbs int
	hinted   bool // nonbasic values come from SetStart; see startsFeasible
	// crashCols are the columns SetBasisHint offers the next
	// refactorisation (crash); crashed marks a basis from a hint that
	// startsFeasible has not checked yet.
	crashCols []int
	crashed   bool
	warm      bool // the basis is the last run's optimum; see startsFeasible
	// flipHeap, flips and rest are boundFlips' buffers.
	flipHeap    []int
	flips, rest []blocker
}

// setObjective loads m's objective, scaled anew, in place of the one
// loaded. The basis stays, and with it primal feasibility: the next run
// goes on from the last optimum with the primal simplex (startsFeasible)
// where bounds and rows have not broken it.
func (s *simplex) setObjective(m *Model) error {
	if err := s.sc.scaleObjective(m); err != nil {
		return err
	}
	for j := range s.n {
		s.cost[j] = s.sense * s.sc.objective(m, j)
	}
	s.dOK, s.objOK, s.listOK = false, false, false
	return nil
}

// newSimplex loads m, scaled as for CLP (scale.go), with the slack basis;
// every structural column starts at the bound its cost favours (or at the
// finite one, or at zero). It refuses the models that CLP's path refuses,
// with the same errors.
func newSimplex(ctx context.Context, m *Model) (*simplex, error) {
	sc, err := newScaling(ctx, m)
	if err != nil {
		return nil, err
	}
	n := len(m.obj)
	s := &simplex{n: n, sc: sc, colStart: make([]int, n+1), rejectEpoch: 1, pivotTol: spxPivotTol}
	s.sense = 1
	if m.sense == Maximize {
		s.sense = -1
	}
	s.cost = make([]float64, n, n+len(m.rows))
	s.lo = make([]float64, n, n+len(m.rows))
	s.up = make([]float64, n, n+len(m.rows))
	s.x = make([]float64, n)
	s.where = make([]int, n)
	for j := range n {
		s.cost[j] = s.sense * sc.objective(m, j)
		s.lo[j], s.up[j] = sc.colBounds(m, j)
		s.where[j] = -1
		s.x[j] = restingValue(s.lo[j], s.up[j], s.cost[j])
		if j < len(m.start) && !math.IsNaN(m.start[j]) {
			lo, up := s.lo[j], s.up[j]
			s.x[j] = min(max(ldexp(m.start[j], 1/sc.bound, 1/sc.col[j]), lo), up)
			s.hinted = true
		}
	}
	s.rejected = make([]int, n)
	if err := s.addRows(ctx, m); err != nil {
		return nil, err
	}
	s.crash(m.basis)
	return s, nil
}

// crash has the next refactorisation offer the structural columns of
// b.Vars the rows of b.Tight, their logicals taken out of the basis and
// set at the bound nearer to their value (the row's activity at the
// start), and has the next run start from the basis it makes
// (startsFeasible). The refactorisation places the columns by its own
// pivot rule; those left without a row stay nonbasic, and the rows left
// without a column take their logicals back.
func (s *simplex) crash(b Basis) {
	s.basicOK = false
	if len(b.Vars) == 0 || len(b.Tight) == 0 {
		return
	}
	for _, r := range b.Tight {
		i, l := int(r), s.n+int(r)
		if s.head[i] != l || math.IsInf(s.lo[l], -1) && math.IsInf(s.up[l], 1) {
			continue // named twice, or free
		}
		switch {
		case math.IsInf(s.lo[l], -1):
			s.x[l] = s.up[l]
		case math.IsInf(s.up[l], 1) || s.x[l]-s.lo[l] <= s.up[l]-s.x[l]:
			s.x[l] = s.lo[l]
		default:
			s.x[l] = s.up[l]
		}
		s.head[i], s.where[l] = -1, -1
	}
	for _, v := range b.Vars {
		if j := int(v); s.where[j] < 0 {
			s.where[j] = -2 // offered once
			s.crashCols = append(s.crashCols, j)
		}
	}
	s.hinted, s.crashed = true, true
}

// crashMaxGrowth bounds ‖B⁻¹v‖∞ (see illConditioned) of a basis made
// from a hint (its entries scaled to about 1), beyond which startsFeasible
// takes the basis for ill-conditioned and starts from the slack basis
// instead. Cooperative OEF's optimal basis, mapped to the model left after
// jobs departed, can lose the rows that tied a pool to a departed job:
// the refactorisation then replaces the columns left without a pivot by
// logicals, and the basis may be nearly singular. With 20 of the noisy
// 2,000 jobs gone the estimate was 1e18; from a basis of that kind the
// primal simplex stalled for minutes, its basic values reaching 1e21.
// Where one job departed, bases with columns replaced estimated 6e3 to
// 5e4 (one 5e7), and starting from them took the scheduler's rounds from
// 0.70–0.79 s to 0.50–0.57 s (docs/benchmarks/oef.md); the optimal bases
// of the same models estimate 6e3 to 3e5.
const crashMaxGrowth = 1e6

// illConditioned reports whether the basis, just refactorised, amplifies
// a vector v of entries in ±[1, 2) by more than crashMaxGrowth: a cheap
// lower bound on ‖B⁻¹‖∞. The entries differ from row to row (a golden-ratio
// sequence, with signs from another), so that two nearly dependent columns
// do not cancel as they would on equal entries.
func (s *simplex) illConditioned() bool {
	v := s.w
	for i := range v {
		_, f := math.Modf(float64(i) * 0.6180339887498949)
		v[i] = float64(1-2*(i*7919%5&1)) * (1 + f)
	}
	s.ftran(v)
	var big float64
	for i, x := range v {
		big = max(big, math.Abs(x))
		v[i] = 0
	}
	return !(big <= crashMaxGrowth)
}

// restartFromSlacks makes every logical basic, and puts every structural
// column that was basic at the bound its cost favours; the next run
// refactorises.
func (s *simplex) restartFromSlacks() {
	s.basicOK = false
	for i, j := range s.head {
		if j < s.n {
			s.where[j] = -1
			s.x[j] = restingValue(s.lo[j], s.up[j], s.cost[j])
		}
		s.head[i], s.where[s.n+i] = s.n+i, i
	}
	s.fresh = false
}

// restingValue is where a nonbasic variable with bounds [lo, up] and cost c
// starts: at the bound that the cost favours when finite, else at a finite
// bound, else at zero.
func restingValue(lo, up, c float64) float64 {
	switch {
	case c < 0 && !math.IsInf(up, 1):
		return up
	case !math.IsInf(lo, -1):
		return lo
	case !math.IsInf(up, 1):
		return up
	}
	return 0
}

// addRows appends the rows of m not yet loaded, scaled, each with its
// logical variable basic; the next run refactorises.
func (s *simplex) addRows(ctx context.Context, m *Model) error {
	s.basicOK = false
	if s.cnorm != nil && len(m.rows) == s.loaded {
		return nil
	}
	if err := s.sc.addRows(m, s.loaded); err != nil {
		return err
	}
	if s.cnorm == nil {
		s.cnorm = make([]float64, s.n, s.n+len(m.rows))
		for j := range s.cnorm {
			s.cnorm[j] = 1
		}
	}
	// Merge the new rows' entries into the columns.
	count := make([]int, s.n)
	for i := s.loaded; i < len(m.rows); i++ {
		for _, t := range m.rows[i] {
			if t.Coef != 0 {
				count[t.Var]++
			}
		}
	}
	start := make([]int, s.n+1)
	for j := range s.n {
		start[j+1] = start[j] + s.colStart[j+1] - s.colStart[j] + count[j]
	}
	ent := make([]spxEntry, start[s.n])
	next := make([]int, s.n)
	for j := range s.n {
		next[j] = start[j] + copy(ent[start[j]:], s.col(j))
	}
	s.colStart, s.colEnt = start, ent
	for i := s.loaded; i < len(m.rows); i++ {
		if i%ctxRows == ctxRows-1 && ctx.Err() != nil {
			return ctx.Err()
		}
		r := s.m + i - s.loaded // its internal row
		var act float64
		for _, t := range m.rows[i] {
			if t.Coef != 0 {
				a := s.sc.coef(i, t)
				ent[next[t.Var]] = spxEntry{r, a}
				next[t.Var]++
				s.cnorm[t.Var] += a * a
				act += a * s.x[t.Var]
			}
		}
		lo, hi := s.sc.rowBounds(m, i)
		s.cost = append(s.cost, 0)
		s.lo = append(s.lo, -hi)
		s.up = append(s.up, -lo)
		s.x = append(s.x, -act)
		s.cnorm = append(s.cnorm, 1)
		s.where = append(s.where, r)
		s.head = append(s.head, s.n+r)
		s.rejected = append(s.rejected, 0)
		if s.modelRow != nil {
			s.modelRow = append(s.modelRow, i)
		}
	}
	if s.weightsKept {
		// A row added with its logical basic leaves every other row of
		// B⁻¹ as it was, and so their weights; its own is not known yet.
		s.dualWeights = append(s.dualWeights, make([]float64, len(m.rows)-s.loaded)...)
	}
	s.m += len(m.rows) - s.loaded
	s.loaded = len(m.rows)
	s.rowStart = nil
	s.y = make([]float64, s.m)
	s.w = make([]float64, s.m)
	s.cb = make([]float64, s.m)
	s.fresh = false
	s.eta.reset()
	return nil
}

// setBounds copies m's variable bounds and row ranges, scaled with the
// factors the model was loaded with (refused, as for CLP, when they leave
// them far out of range); nonbasic variables move to the nearest point of
// their new bounds, and the basic values follow.
func (s *simplex) setBounds(m *Model) error {
	if err := s.sc.checkBounds(m, s.loaded); err != nil {
		return err
	}
	set := func(j int, lo, up float64) {
		if s.lo[j] == lo && s.up[j] == up {
			return
		}
		atLo, atUp := s.x[j] == s.lo[j], s.x[j] == s.up[j]
		s.lo[j], s.up[j] = lo, up
		if s.where[j] >= 0 {
			return
		}
		switch {
		case atLo && !math.IsInf(lo, -1):
			s.x[j] = lo
		case atUp && !math.IsInf(up, 1):
			s.x[j] = up
		}
		s.x[j] = min(max(s.x[j], lo), up)
		if math.IsInf(s.x[j], 0) {
			s.x[j] = restingValue(lo, up, s.cost[j])
		}
	}
	for j := range s.n {
		lo, hi := s.sc.colBounds(m, j)
		set(j, lo, hi)
	}
	for i := range s.m {
		lo, hi := s.sc.rowBounds(m, s.rowOf(i))
		set(s.n+i, -hi, -lo)
	}
	if s.fresh {
		// New bounds leave B as it was: a fresh factor (a solve ends on
		// one) still holds, and only the basic values move. Refactoring
		// it again took 6% of hierarchical water filling, which sets
		// bounds before each of its warm rounds.
		s.computeBasic()
		s.dOK, s.objOK, s.listOK = false, false, false
		return nil
	}
	s.eta.reset()
	return nil
}

// col returns the entries of structural column j.
func (s *simplex) col(j int) []spxEntry { return s.colEnt[s.colStart[j]:s.colStart[j+1]] }

// rowOf returns the model's row that internal row i holds.
func (s *simplex) rowOf(i int) int {
	if s.modelRow == nil {
		return i
	}
	return s.modelRow[i]
}

// dropRows removes the model's rows among rows whose logical variable is
// basic, and returns them; rows already removed are left out. The basis
// keeps its other variables, so the next run starts from the same point,
// after a refactorisation. Kept in the simplex, even freed, an idle row
// cost every pivot: the capacity rows couple every column, so B⁻¹a_q is
// dense on cooperative OEF's envy rows, and its logical changed with each
// pivot (2.5 ms a pivot at 30,000 rows); emptied of its entries, it still
// cost its place in every vector.
func (s *simplex) dropRows(rows []Row) []Row {
	at := make([]int, s.loaded) // the internal row of each model row, or -1
	for r := range at {
		at[r] = -1
	}
	for i := range s.m {
		at[s.rowOf(i)] = i
	}
	gone := make([]bool, s.m)
	var out []Row
	for _, r := range rows {
		i := at[r]
		if i < 0 || gone[i] || s.where[s.n+i] < 0 {
			continue
		}
		gone[i] = true
		out = append(out, r)
	}
	if len(out) > 0 {
		s.removeRows(gone)
	}
	return out
}

// removeRows removes the internal rows marked in gone, whose logicals are
// basic, with their logicals; the other variables keep their values and
// basic or nonbasic status, and the next run refactorises.
func (s *simplex) removeRows(gone []bool) {
	s.basicOK = false
	n := s.n
	newRow := make([]int, s.m)
	m := 0
	for i := range s.m {
		newRow[i] = -1
		if !gone[i] {
			newRow[i] = m
			m++
		}
	}
	k := 0
	for j := range n {
		from, to := s.colStart[j], s.colStart[j+1]
		s.colStart[j] = k
		norm := 1.0
		for _, e := range s.colEnt[from:to] {
			if r := newRow[e.row]; r >= 0 {
				s.colEnt[k] = spxEntry{r, e.val}
				k++
				norm += e.val * e.val
			}
		}
		s.cnorm[j] = norm
	}
	s.colStart[n] = k
	s.colEnt = s.colEnt[:k]
	if s.modelRow == nil {
		s.modelRow = make([]int, s.m)
		for i := range s.modelRow {
			s.modelRow[i] = i
		}
	}
	for i := range s.m {
		if r := newRow[i]; r >= 0 {
			s.cost[n+r], s.lo[n+r], s.up[n+r], s.x[n+r] = s.cost[n+i], s.lo[n+i], s.up[n+i], s.x[n+i]
			s.cnorm[n+r], s.rejected[n+r] = s.cnorm[n+i], s.rejected[n+i]
			s.modelRow[r] = s.modelRow[i]
		}
	}
	s.cost, s.lo, s.up, s.x = s.cost[:n+m], s.lo[:n+m], s.up[:n+m], s.x[:n+m]
	s.cnorm, s.rejected, s.modelRow = s.cnorm[:n+m], s.rejected[:n+m], s.modelRow[:m]
	basic := s.head[:0]
	for _, v := range s.head {
		if v >= n {
			if newRow[v-n] < 0 {
				continue
			}
			v = n + newRow[v-n]
		}
		basic = append(basic, v)
	}
	s.head = basic
	s.where = s.where[:n+m]
	for j := range s.where {
		s.where[j] = -1
	}
	for p, v := range s.head {
		s.where[v] = p
	}
	s.m = m
	s.y, s.w, s.cb, s.rho = make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	// Work arrays indexed by variable are sized again on their next use.
	s.alpha, s.inRow, s.alphaNZ, s.rhoNZ = nil, nil, nil, nil
	if s.weightsKept {
		// The rows left keep their weights: a removed row's logical is
		// basic, B⁻¹'s column of its position is the unit vector, and
		// the other rows of B⁻¹ are zero there.
		for i := range gone {
			if r := newRow[i]; r >= 0 {
				s.dualWeights[n+r] = s.dualWeights[n+i]
			}
		}
		s.dualWeights = s.dualWeights[:n+m]
	} else {
		s.dualWeights = nil
	}
	s.d, s.devex, s.isShifted = nil, nil, nil
	s.list, s.inList = nil, nil
	s.dOK, s.objOK, s.listOK = false, false, false
	s.rowStart = nil
	s.fresh = false
	s.eta.reset()
}

// tol is the feasibility tolerance at bound b.
func tol(b float64) float64 { return spxPrimalTol * max(1, math.Abs(b)) }

// column scatters the column of variable j into w, which must be zero.
func (s *simplex) column(j int, w []float64) {
	if j >= s.n {
		w[j-s.n] = 1
		return
	}
	for _, e := range s.col(j) {
		w[e.row] = e.val
	}
}

// refactor rebuilds the eta file from the identity: basic logicals keep
// their own rows, basic structural columns are pivoted in sparsest first,
// each on the sparsest remaining row among those with a large enough
// entry. A column without one depends on the others: it leaves the basis
// (keeping its value, within its bounds) and its row's logical takes its
// place. The basic values are then recomputed from the nonbasic ones.
//
// Only the rows whose logical is not basic (the bump) take part in the
// elimination. With the basis permuted to B = [B₁₁ 0; B₂₁ I], B₁₁ the
// structural columns on the bump, the file holds the factor of B₁₁ only,
// and B₂₁'s part is taken from the columns themselves in each solve
// (simplex.ftran, simplex.btran). Pivoting whole columns in instead
// filled the logicals' rows in from every earlier eta: in cooperative
// OEF's warm rounds (1,669 rows, 200 basic structurals) 87% of the
// factor's 47,000 nonzeros, which every FTRAN and BTRAN then walked.
//
// B₁₁ is factored as L·U (left-looking: each column is solved with the L
// columns so far, its entries on rows already pivoted are U's column and
// those on the rows still free, over the pivot, L's), and the file holds
// L's etas in pivot order, then U's last first, which FTRAN applies as
// forward then back substitution. The product form of the inverse that it
// replaced (each eta the column solved with all etas so far) fills in U⁻¹:
// chains of envy rows make U bidiagonal and U⁻¹ a full triangle. In capped
// cooperative OEF's warm rounds (650 rows) the factor fell from 15,800
// nonzeros to 7,700.
func (s *simplex) refactor(ctx context.Context) error {
	s.basicOK = false
	m, n := s.m, s.n
	s.eta.reset()
	s.upper.reset()
	s.repaired = false
	if cap(s.etaOf) < m {
		s.etaOf, s.mark, s.rcount = make([]int, m), make([]bool, m), make([]int, m)
	}
	s.etaOf, s.mark, s.rcount = s.etaOf[:m], s.mark[:m], s.rcount[:m]
	var structs []int
	free := make([]bool, m) // rows not yet holding a basic variable
	for i := range m {
		s.etaOf[i] = -1
		s.rcount[i] = 0
		free[i] = true
	}
	offer := func(v int) {
		structs = append(structs, v)
		for _, e := range s.col(v) {
			s.rcount[e.row]++
		}
	}
	for _, v := range s.head {
		switch {
		case v >= n:
			free[v-n] = false
		case v >= 0: // -1: a row whose logical crash took out
			offer(v)
		}
	}
	for _, v := range s.crashCols {
		offer(v)
	}
	s.crashCols = s.crashCols[:0]
	bump := slices.Clone(free)
	slices.SortStableFunc(structs, func(a, b int) int { return len(s.col(a)) - len(s.col(b)) })
	for i := range s.head {
		s.head[i] = -1
	}
	for j := range s.where {
		if j >= n && !free[j-n] {
			s.where[j] = j - n
			s.head[j-n] = j
		} else {
			s.where[j] = -1
		}
	}
	v := s.w
	clear(v)
	var nz []int
	for k, q := range structs {
		if k%ctxColumns == ctxColumns-1 {
			if err := ctx.Err(); err != nil {
				// Leave a basis the next solve can refactor: the columns
				// not placed yet become nonbasic at their values and
				// logicals fill the rows left (a cancelled refactor left
				// rows with no basic variable, and the next solve of an
				// Incremental indexed column -1).
				for _, q := range structs[k:] {
					s.x[q] = min(max(s.x[q], s.lo[q]), s.up[q])
				}
				s.eta.appendReversed(&s.upper)
				s.setBump(bump)
				s.fillLogicals(free)
				s.fresh = false
				// That is another basis: the steepest-edge weights kept
				// were those of the one before.
				s.weightsKept = false
				return err
			}
		}
		nz = nz[:0]
		var amax float64
		for _, e := range s.col(q) {
			amax = math.Max(amax, math.Abs(e.val))
			s.rcount[e.row]--
			if bump[e.row] {
				v[e.row] = e.val
				nz = append(nz, e.row)
			}
		}
		nz = s.eta.sparseFtran(v, nz, s.mark, s.etaOf, &s.heap)
		var big float64
		for _, i := range nz {
			if free[i] {
				big = math.Max(big, math.Abs(v[i]))
			}
		}
		r := -1
		if big > spxSingularTol*amax && big > 0 {
			for _, i := range nz {
				if !free[i] || math.Abs(v[i]) < s.markowitz()*big {
					continue
				}
				if r < 0 || s.rcount[i] < s.rcount[r] || (s.rcount[i] == s.rcount[r] && math.Abs(v[i]) > math.Abs(v[r])) {
					r = i
				}
			}
		}
		if r >= 0 {
			s.upper.pushUColumn(r, v, nz, free)
			if s.eta.pushLColumn(r, v, nz, free) {
				s.etaOf[r] = s.eta.len() - 1
			}
			free[r] = false
			s.head[r] = q
			s.where[q] = r
		} else {
			// Dependent: q leaves the basis where it stands.
			s.x[q] = min(max(s.x[q], s.lo[q]), s.up[q])
			s.repaired = true
		}
		for _, i := range nz {
			v[i] = 0
			s.mark[i] = false
		}
	}
	s.eta.appendReversed(&s.upper)
	s.setBump(bump)
	s.fillLogicals(free)
	s.fresh = true
	s.dOK, s.objOK = false, false
	s.factorLen = s.eta.len()
	s.factorNNZ = s.eta.nnz()
	s.computeBasic()
	return nil
}

// markowitz returns the threshold of refactorisation pivots.
func (s *simplex) markowitz() float64 {
	if s.strict {
		return spxStrictMarkowitzTol
	}
	return spxMarkowitzTol
}

// setBump records the rows of the bump, where bump is true.
func (s *simplex) setBump(bump []bool) {
	s.inBump = bump
	s.bumpRows = s.bumpRows[:0]
	if len(s.lowerOf) != s.m {
		s.lowerOf = make([][]spxEntry, s.m)
	}
	clear(s.lowerOf)
	s.lowerEnt = s.lowerEnt[:0]
	for i, b := range bump {
		if b {
			s.bumpRows = append(s.bumpRows, i)
			s.setLower(i)
		}
	}
}

// setLower lists the entries off the bump of the column basic at position
// p, none for a logical. A row that joins the bump later is taken out of
// the lists (grow), so that the solves need not test each entry's row.
func (s *simplex) setLower(p int) {
	j := s.head[p]
	if j < 0 || j >= s.n {
		s.lowerOf[p] = nil
		return
	}
	from := len(s.lowerEnt)
	for _, e := range s.col(j) {
		if !s.inBump[e.row] {
			s.lowerEnt = append(s.lowerEnt, e)
		}
	}
	s.lowerOf[p] = s.lowerEnt[from:len(s.lowerEnt):len(s.lowerEnt)]
}

// The basis is kept as B = [B₁₁ 0; B₂₁ I] permuted: off the bump every row
// holds its own logical, and B₂₁ holds the bump's basic structural
// columns' entries on those rows. The eta file is B₁₁'s factor and its
// updates, all on the bump's rows; a pivot on a row off the bump brings
// the row into it (grow). The solves take B₂₁ from the columns: its
// nonzeros are those of the lower etas of an earlier layout, and the
// updates no longer carry B⁻¹a_q's entries off the bump, which were four
// in five of them in cooperative OEF (7,900 a pivot at 12,776 rows, of
// which about 1,500 on the bump), so that the file grew by a factor's
// worth every 13 pivots.

// ftran overwrites v with B⁻¹v: x₁ = B₁₁⁻¹v₁, then x₂ = v₂ − B₂₁x₁.
func (s *simplex) ftran(v []float64) {
	s.eta.ftran(v)
	s.lower(v)
}

// ftran2 is ftran for v and u, in one pass over the file.
func (s *simplex) ftran2(v, u []float64) {
	s.eta.ftran2(v, u)
	for _, p := range s.bumpRows {
		a, b := v[p], u[p]
		switch {
		case a != 0 && b != 0:
			for _, e := range s.lowerOf[p] {
				v[e.row] -= e.val * a
				u[e.row] -= e.val * b
			}
		case a != 0:
			s.lowerStep(v, p, a)
		case b != 0:
			s.lowerStep(u, p, b)
		}
	}
}

// lower subtracts B₂₁x₁ from v's rows off the bump.
func (s *simplex) lower(v []float64) {
	for _, p := range s.bumpRows {
		if a := v[p]; a != 0 {
			s.lowerStep(v, p, a)
		}
	}
}

// lowerStep takes a times the column basic at bump position p, off the
// bump, from v.
func (s *simplex) lowerStep(v []float64, p int, a float64) {
	for _, e := range s.lowerOf[p] {
		v[e.row] -= e.val * a
	}
}

// btran overwrites v with B⁻ᵀv: y₂ = v₂, then y₁ = B₁₁⁻ᵀ(v₁ − B₂₁ᵀv₂).
func (s *simplex) btran(v []float64) {
	for _, p := range s.bumpRows {
		sum := v[p]
		for _, e := range s.lowerOf[p] {
			sum -= e.val * v[e.row]
		}
		v[p] = sum
	}
	s.eta.btran(v)
}

// btranUnit sets v, which must be zero, to B⁻ᵀeᵣ (the pivot row's ρ). Off
// the bump, B₂₁ᵀeᵣ is r's own entries in the bump's basic columns.
func (s *simplex) btranUnit(r int, v []float64) {
	v[r] = 1
	if !s.inBump[r] {
		for _, e := range s.bumpEntries(r) {
			v[e.row] -= e.val
		}
	}
	s.eta.btran(v)
}

// bumpEntries returns dᵣ, the entries of row r, off the bump, in the
// bump's basic columns, each named by the column's position; the slice is
// reused by the next call.
func (s *simplex) bumpEntries(r int) []spxEntry {
	s.buildRows()
	d := s.rowBuf[:0]
	for _, e := range s.rowEnt[s.rowStart[r]:s.rowStart[r+1]] {
		if p := s.where[e.row]; p >= 0 {
			d = append(d, spxEntry{p, e.val})
		}
	}
	s.rowBuf = d
	return d
}

// grow brings row r, off the bump, into it, before a pivot on it: with d
// r's entries in the bump's basic columns, B₁₁ gains the row dᵀ and the
// entering column, [B₁₁ c; dᵀ e] = [B₁₁ 0; dᵀ 1]·[I w; 0 σ] with
// w = B₁₁⁻¹c and σ = e − dᵀw = (B⁻¹a_q)ᵣ: the row eta of d, then the
// pivot's column eta as on any bump row.
func (s *simplex) grow(r int) {
	d := s.bumpEntries(r)
	s.eta.pushRow(r, d)
	s.inBump[r] = true
	s.bumpRows = append(s.bumpRows, r)
	for _, e := range d {
		s.lowerOf[e.row] = dropRow(s.lowerOf[e.row], r)
	}
}

// dropRow removes row r's entry from es, keeping the others' order (the
// order of btran's sums).
func dropRow(es []spxEntry, r int) []spxEntry {
	for i, e := range es {
		if e.row == r {
			return append(es[:i], es[i+1:]...)
		}
	}
	return es
}

// fillLogicals makes each free row's logical variable basic in it.
func (s *simplex) fillLogicals(free []bool) {
	s.basicOK = false
	for i, f := range free {
		if f {
			s.head[i] = s.n + i
			s.where[s.n+i] = i
		}
	}
}

// computeBasic sets the basic values from the nonbasic ones: x_B = -B⁻¹ N x_N.
func (s *simplex) computeBasic() {
	v := s.w
	clear(v)
	for j := range s.n {
		if s.where[j] < 0 && s.x[j] != 0 {
			for _, e := range s.col(j) {
				v[e.row] -= e.val * s.x[j]
			}
		}
	}
	for i := range s.m {
		if j := s.n + i; s.where[j] < 0 {
			v[i] -= s.x[j]
		}
	}
	s.ftran(v)
	for i, j := range s.head {
		s.x[j] = v[i]
	}
	clear(v)
}

// infeasibility returns the phase-1 cost of basic variable j: -1 below its
// lower bound, +1 above its upper bound, 0 within them.
func (s *simplex) infeasibility(j int) float64 {
	if x := s.x[j]; x >= s.lo[j] && x <= s.up[j] {
		return 0 // most basic variables; no tolerance to compute
	}
	switch {
	case s.x[j] < s.lo[j]-tol(s.lo[j]):
		return -1
	case s.x[j] > s.up[j]+tol(s.up[j]):
		return 1
	}
	return 0
}

// duals reports whether the basis is infeasible (phase 1). In phase 1 it
// sets s.y to B⁻ᵀ c_B for the phase's costs; in phase 2 it makes the
// reduced costs s.d valid, recomputing them (and s.y) when they are not.
func (s *simplex) duals() (phase1 bool) {
	for i, j := range s.head {
		c := s.infeasibility(j)
		s.cb[i] = c
		if c != 0 {
			phase1 = true
		}
	}
	if !phase1 {
		if !s.dOK {
			s.computeReducedCosts()
		}
		return false
	}
	s.dOK = false
	copy(s.y, s.cb)
	s.btran(s.y)
	return true
}

// reducedCost returns d_j = c_j − a_jᵀy for nonbasic j (c_j is 0 in phase 1).
func (s *simplex) reducedCost(j int, phase1 bool) float64 {
	if j >= s.n {
		return -s.y[j-s.n]
	}
	d := 0.0
	if !phase1 {
		d = s.cost[j]
	}
	for _, e := range s.col(j) {
		d -= e.val * s.y[e.row]
	}
	return d
}

// devexPivot prepares a basis change in which q enters at position r, with
// s.w = B⁻¹a_q for the basis before it: it takes the pivot row
// (ρ = B⁻ᵀe_r, before the eta file changes), grows the other nonbasic
// Devex weights along it, gives the leaving variable its own weight and,
// while they are kept (phase 2), updates the reduced costs.
func (s *simplex) devexPivot(q, r int) {
	clear(s.rho)
	s.btranUnit(r, s.rho)
	s.pivotRow()
	alpha, weight := s.w[r], s.devex[q]
	for _, j := range s.alphaNZ {
		if a := s.alpha[j] / alpha; a != 0 && j != q {
			s.devex[j] = max(s.devex[j], a*a*weight)
		}
	}
	s.devex[s.head[r]] = max(weight/(alpha*alpha), 1)
	if s.dOK {
		s.updateReducedCosts(q, r)
	}
	if weight > devexReset {
		s.resetDevex()
	}
}

// resetDevex starts a new Devex reference framework: every weight 1.
func (s *simplex) resetDevex() {
	if len(s.devex) != s.n+s.m {
		s.devex = make([]float64, s.n+s.m)
		s.rho = make([]float64, s.m)
	}
	for j := range s.devex {
		s.devex[j] = 1
	}
	s.listOK = false
}

// ratio is the Harris two-pass ratio test for entering variable q moving
// in direction dir, with s.w = B⁻¹a_q. It returns the leaving position (-1
// for a bound flip of q itself, or when nothing blocks), the step, and the
// value the leaving variable takes; a NaN step means that the only pivot
// is too small. With bland set it takes the textbook test, ties to the
// smallest variable index.
//
// While bounds may be shifted, entries below the pivot tolerance do not
// block: the variables they move past a bound have that bound shifted
// (shiftBeyond). Only when nothing else blocks are they considered.
func (s *simplex) ratio(q int, dir float64, bland bool) (r int, step, leaveAt float64) {
	var wmax float64
	s.wNZ = s.wNZ[:0]
	for i, wi := range s.w {
		if wi != 0 {
			s.wNZ = append(s.wNZ, i)
			wmax = max(wmax, math.Abs(wi))
		}
	}
	ptol := s.pivotTol * max(1, wmax)
	if s.shifting {
		r, step, leaveAt = s.ratioAbove(q, dir, bland, ptol)
		if r >= 0 || !math.IsInf(step, 1) {
			return r, step, leaveAt
		}
	}
	r, step, leaveAt = s.ratioAbove(q, dir, bland, spxZeroTol)
	if r >= 0 && math.Abs(s.w[r]) < ptol {
		return r, math.NaN(), 0
	}
	return r, step, leaveAt
}

// ratioAbove is the ratio test over the entries of s.w larger than zero.
func (s *simplex) ratioAbove(q int, dir float64, bland bool, zero float64) (r int, step, leaveAt float64) {
	room := math.Inf(1)
	if dir > 0 {
		room = s.up[q] - s.x[q]
	} else if dir < 0 {
		room = s.x[q] - s.lo[q]
	}
	// Pass 1: the blocking variables, and the smallest step to a bound
	// relaxed by its tolerance.
	s.cand = s.cand[:0]
	bound := math.Inf(1)
	for _, i := range s.wNZ {
		wi := s.w[i]
		if math.Abs(wi) <= zero {
			continue
		}
		j := s.head[i]
		delta := -dir * wi
		b := s.target(j, delta)
		if math.IsNaN(b) {
			continue
		}
		s.cand = append(s.cand, blocker{pos: i, bound: b, delta: delta})
		relaxed := b + math.Copysign(tol(b), delta)
		bound = min(bound, (relaxed-s.x[j])/delta)
	}
	// Pass 2: the largest pivot among those blocking within that step.
	r, step = -1, math.Inf(1)
	var pivot float64
	for _, c := range s.cand {
		j := s.head[c.pos]
		t := max(0, (c.bound-s.x[j])/c.delta)
		if bland {
			if t < step || (t == step && r >= 0 && j < s.head[r]) {
				r, step, leaveAt = c.pos, t, c.bound
			}
			continue
		}
		if t <= bound && math.Abs(c.delta) > pivot {
			r, step, leaveAt, pivot = c.pos, t, c.bound, math.Abs(c.delta)
		}
	}
	if room <= step || (r < 0 && !math.IsInf(room, 1)) {
		return -1, room, 0
	}
	return r, step, leaveAt
}

// blocker is a basic variable that blocks the entering one: its position,
// the bound it runs into and its change per unit step (the dual phase
// stores a nonbasic variable, |d_j| and α_rj, and their ratio).
type blocker struct {
	pos          int
	bound, delta float64
	ratio        float64
}

// target returns the bound that basic variable j runs into when it moves
// by delta per unit step, or NaN when none: an infeasible variable blocks
// where it becomes feasible, a feasible one at the bound ahead.
func (s *simplex) target(j int, delta float64) float64 {
	x, lo, up := s.x[j], s.lo[j], s.up[j]
	if delta > 0 {
		switch {
		case x < lo-tol(lo):
			return lo
		case x > up+tol(up) || math.IsInf(up, 1):
			return math.NaN()
		}
		return up
	}
	switch {
	case x > up+tol(up):
		return up
	case x < lo-tol(lo) || math.IsInf(lo, -1):
		return math.NaN()
	}
	return lo
}

// shift records a variable's bounds before a shift.
type shift struct {
	j      int
	lo, up float64
}

// shiftBeyond moves a bound of basic variable j, feasible before the last
// step, to its value when the step took it past that bound (through an
// entry too small to pivot on).
func (s *simplex) shiftBeyond(j int) {
	x := s.x[j]
	below, above := x < s.lo[j]-tol(s.lo[j]), x > s.up[j]+tol(s.up[j])
	if !below && !above {
		return
	}
	if !s.isShifted[j] {
		s.isShifted[j] = true
		s.shifts = append(s.shifts, shift{j, s.lo[j], s.up[j]})
	}
	if below {
		s.lo[j] = x
	} else {
		s.up[j] = x
	}
}

// maxInfeasibility returns the largest violation of a bound by a basic
// variable, scaled by max(1, |bound|).
func (s *simplex) maxInfeasibility() float64 {
	var worst float64
	for _, j := range s.head {
		if v := s.lo[j] - s.x[j]; v > 0 {
			worst = max(worst, v/max(1, math.Abs(s.lo[j])))
		}
		if v := s.x[j] - s.up[j]; v > 0 {
			worst = max(worst, v/max(1, math.Abs(s.up[j])))
		}
	}
	return worst
}

// shiftInfeasible shifts the bounds of every infeasible basic variable to
// its value.
func (s *simplex) shiftInfeasible() {
	for _, j := range s.head {
		if s.infeasibility(j) != 0 {
			s.shiftBeyond(j)
		}
	}
}

// perturb widens the bounds of every basic variable that sits on a
// finite bound by a small amount that differs from variable to variable,
// and reports whether it widened any. A long run of degenerate pivots
// (basic variables on their bounds, so every step is zero) then turns into
// steps that make progress.
func (s *simplex) perturb() bool {
	widened := false
	for _, j := range s.head {
		if s.isShifted[j] {
			continue
		}
		x, lo, up := s.x[j], s.lo[j], s.up[j]
		atLo := !math.IsInf(lo, -1) && math.Abs(x-lo) <= tol(lo)
		atUp := !math.IsInf(up, 1) && math.Abs(x-up) <= tol(up)
		if !atLo && !atUp {
			continue
		}
		s.isShifted[j] = true
		s.shifts = append(s.shifts, shift{j, lo, up})
		u := perturbFactor(j)
		if atLo {
			s.lo[j] = lo - perturbScale*(1+math.Abs(lo))*u
		}
		if atUp {
			s.up[j] = up + perturbScale*(1+math.Abs(up))*u
		}
		widened = true
	}
	return widened
}

// perturbFactor returns a number in [1, 2) fixed by j, so that perturbed
// bounds differ between variables and a solve stays deterministic.
func perturbFactor(j int) float64 {
	z := uint64(j)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return 1 + float64(z>>11)/(1<<53)
}

// unshift restores every shifted bound; nonbasic variables move inside
// them, so the basic values must be recomputed. It reports whether there
// was a shift.
func (s *simplex) unshift() bool {
	if len(s.shifts) == 0 {
		return false
	}
	for _, sh := range s.shifts {
		j := sh.j
		s.lo[j], s.up[j] = sh.lo, sh.up
		s.isShifted[j] = false
		if s.where[j] < 0 {
			s.x[j] = min(max(s.x[j], sh.lo), sh.up)
		}
	}
	s.shifts = s.shifts[:0]
	s.fresh = false
	s.listOK, s.objOK = false, false // nonbasic variables moved inside their bounds
	return true
}

// run iterates from the current basis until optimal, infeasible or
// unbounded, or until ctx ends or maxIter (0: no bound) iterations pass.
func (s *simplex) run(ctx context.Context, maxIter int) (spxOutcome, error) {
	if len(s.isShifted) < s.n+s.m {
		s.isShifted = make([]bool, s.n+s.m)
	}
	s.shifting = true
	s.resetDevex()
	feasible, err := s.startsFeasible(ctx)
	if err != nil {
		return spxStopped, err
	}
	if !feasible {
		if _, err := s.dualPhase(ctx, maxIter); err != nil {
			return spxStopped, err
		}
	}
	s.resetDevex()
	s.perturbs = 0
	out, err := s.iterate(ctx, maxIter)
	if out == spxPerturbed {
		// Optimal for perturbed bounds: restore them, and let the dual
		// simplex repair the small infeasibilities that leaves (the
		// basis stays dual feasible), then confirm.
		s.unshift()
		if _, err := s.dualPhase(ctx, maxIter); err != nil {
			return spxStopped, err
		}
		s.resetDevex()
		s.perturbs = -1 // no more perturbations in this run
		out, err = s.iterate(ctx, maxIter)
	}
	s.unshift()
	s.warm = out == spxOptimal
	return out, err
}

// farkasTol is the margin, relative to the sum of the terms, by which
// farkas's bound must exclude 0.
const farkasTol = 1e-9

// farkas reports whether the phase-1 duals s.y prove the LP infeasible.
// With r_j = yᵀa_j over every column of [A I], Σ_j r_j v_j = 0 for every v
// that meets the rows, so if the box bounds keep Σ_j r_j v_j away from 0
// by more than roundoff, no such v lies in the box. In an ill-conditioned
// basis phase 1 can stop on a point it cannot improve although the LP is
// feasible (a Pareto LP that starts from a feasible point, in alloc's
// TestPropertyAuditEveryPolicy): its duals then prove nothing, and the
// simplex goes on instead of reporting infeasibility.
func (s *simplex) farkas() bool {
	var lo, up, scale float64
	for j := range s.n + s.m {
		var r float64
		if j >= s.n {
			r = s.y[j-s.n]
		} else {
			for _, e := range s.col(j) {
				r += e.val * s.y[e.row]
			}
		}
		if r == 0 || (math.Abs(r) <= spxDualTol*math.Sqrt(s.cnorm[j]) && (math.IsInf(s.lo[j], -1) || math.IsInf(s.up[j], 1))) {
			// A term within the dual tolerance is roundoff, as pricing
			// takes it: against an infinite bound it would void the
			// proof (a logical with r = 1.1e-16 and no upper bound, in
			// TestPropertyInfeasibleDetected, left the LP reported as
			// feasible and its point violating a row by 3.3).
			continue
		}
		a, b := r*s.lo[j], r*s.up[j]
		if r < 0 {
			a, b = b, a
		}
		lo += a
		up += b
		scale += math.Abs(r) * max(1, min(math.Abs(s.lo[j]), math.Abs(s.up[j])))
	}
	return lo > farkasTol*scale || up < -farkasTol*scale
}

// startsFeasible reports whether the run starts from a basis that is
// primal feasible within the primal tolerance and either comes from the
// model's start hints (SetStart, once) or is the last run's optimum with
// bounds changed since (a warm water-filling round): the primal simplex
// then proceeds from it directly. The dual phase would first move every
// nonbasic variable to the bound its reduced cost favours, boxing those
// whose favoured bound is infinite, and a single such box (water filling's
// level column) made 1,800 of 6,000 basic variables infeasible, which took
// 1,000 to 1,500 dual iterations a round to repair, where the primal
// simplex needs a handful. A cold slack basis is left to the dual phase:
// the primal simplex alone took ten times its iterations on
// MaxTotalThroughput's LP, and so is a basis from SetBasisHint (below).
func (s *simplex) startsFeasible(ctx context.Context) (bool, error) {
	if !s.hinted && !s.warm {
		return false, nil
	}
	s.hinted = false
	if !s.fresh {
		if err := s.refactor(ctx); err != nil {
			return false, err
		}
	}
	if s.crashed {
		// A basis from SetBasisHint goes to the dual phase even where it
		// is primal feasible. Such a basis is often one a stopped solve
		// reached (alloc.OEFStopped), and a run stopped in turn goes on
		// from its basis again. The dual phase places every nonbasic
		// variable from the basis alone, and its objective falls from
		// run to run. A stopped primal simplex had hundreds of nonbasic
		// columns between their bounds (left by the dual phase's boxes),
		// which a basis does not name: restarted from the basis with
		// them at zero, it lost its progress every run (cooperative OEF
		// over 600 noisy jobs, each run cut at about 700 context checks:
		// 70 runs without an end). An optimal hint still takes no pivot.
		s.crashed = false
		if s.illConditioned() {
			s.restartFromSlacks()
		}
		return false, nil
	}
	for _, j := range s.head {
		if s.infeasibility(j) != 0 {
			return false, nil
		}
	}
	return true, nil
}

// maxUnshifts is how many times a run restores shifted bounds before it
// stops shifting them.
const maxUnshifts = 3

// iterate is run's loop.
func (s *simplex) iterate(ctx context.Context, maxIter int) (spxOutcome, error) {
	unshifts := 0
	s.dOK, s.objOK, s.listOK = false, false, false
	if !s.fresh {
		if err := s.refactor(ctx); err != nil {
			return spxStopped, err
		}
	}
	// A run this long has lost its way (solve repeats it with strict
	// pivots): the degenerate LPs of the tests end within a few times
	// n+m iterations.
	stuckCap := s.iters + 50*(s.n+s.m) + 10000
	degenerate := 0
	best := [2]float64{math.Inf(1), math.Inf(1)} // phase 1's, phase 2's
	for k := 0; ; k++ {
		if k%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return spxStopped, err
			}
		}
		if maxIter > 0 && s.iters >= maxIter {
			return spxIterationLimit, nil
		}
		if s.iters >= stuckCap {
			return spxStuck, nil
		}
		if s.refactorDue() {
			if err := s.refactor(ctx); err != nil {
				return spxStopped, err
			}
		}
		phase1 := s.duals()
		if degenerate >= blandAfter && !phase1 && s.perturbs >= 0 && s.perturbs < maxPerturbs && s.perturb() {
			s.perturbs++
			degenerate = 0
		}
		bland := degenerate >= blandAfter
		q, dir := s.price(phase1, bland)
		if q < 0 {
			if !s.fresh {
				// Confirm on a fresh factor and recomputed values.
				if err := s.refactor(ctx); err != nil {
					return spxStopped, err
				}
				s.rejectEpoch++
				continue
			}
			if s.anyRejected() {
				if s.pivotTol > spxMinPivotTol {
					// Accept smaller pivots rather than stop.
					s.pivotTol = max(s.pivotTol/100, spxMinPivotTol)
					s.rejectEpoch++
					continue
				}
				if phase1 {
					return spxStuck, nil
				}
				// Only unusable columns improve: optimal within
				// the tolerances (finish checks feasibility).
			}
			if phase1 {
				if s.maxInfeasibility() > spxLooseTol && s.farkas() {
					return spxInfeasible, nil
				}
				// Infeasible by roundoff only, in an ill-conditioned
				// basis: shift the bounds and optimise; finish's check
				// against Settings.FeasibilityTol has the last word.
				s.shiftInfeasible()
				continue
			}
			if s.perturbs > 0 && len(s.shifts) > 0 {
				return spxPerturbed, nil
			}
			if unshifts < maxUnshifts && s.unshift() {
				// Optimal for the shifted bounds: restore them and go
				// on from there, without further shifts after a few
				// rounds.
				unshifts++
				s.shifting = unshifts < maxUnshifts
				continue
			}
			// Any roundoff left is for finish's check against
			// Settings.FeasibilityTol.
			return spxOptimal, nil
		}
		clear(s.w)
		s.column(q, s.w)
		s.ftran(s.w)
		r, step, leaveAt := s.ratio(q, dir, bland)
		if r < 0 && math.IsInf(step, 1) {
			switch {
			case !s.fresh:
				// Retry on a fresh factor.
				if err := s.refactor(ctx); err != nil {
					return spxStopped, err
				}
				continue
			case phase1:
				// Phase 1 always has a blocking variable in exact
				// arithmetic: this column is numerically unreliable.
				s.rejected[q] = s.rejectEpoch
				continue
			}
			return spxUnbounded, nil
		}
		if math.IsNaN(step) {
			s.rejected[q] = s.rejectEpoch
			continue
		}
		s.iters++
		s.x[q] += dir * step
		if step != 0 {
			dobj := s.cost[q] * dir * step
			for _, i := range s.wNZ {
				wi := s.w[i]
				j := s.head[i]
				feasible := s.shifting && s.infeasibility(j) == 0
				s.x[j] -= dir * wi * step
				dobj -= s.cost[j] * dir * wi * step
				if feasible {
					s.shiftBeyond(j)
				}
			}
			s.obj += dobj
		}
		// A pivot makes progress when it lowers the phase's measure by
		// more than roundoff. Counting only zero steps as degenerate let
		// ill-conditioned bases cycle through small steps that raise the
		// objective (the Pareto LP of a rapid case, alloc's
		// TestPropertyAuditEveryPolicy, ran 100,000 iterations).
		// Each phase keeps its best measure across the other's
		// interludes: a phase-2 pivot that leaves the basis infeasible by
		// roundoff, and the phase 1 that repairs it, can otherwise cycle
		// with every step looking like progress.
		ph := 1
		if phase1 {
			ph = 0
		}
		if p := s.progressMeasure(phase1); math.IsInf(best[ph], 1) || p < best[ph]-progressTol*max(1, math.Abs(best[ph])) {
			best[ph], degenerate = p, 0
		} else {
			degenerate++
		}
		if r < 0 {
			continue // q moved to its other bound
		}
		out := s.head[r]
		s.devexPivot(q, r)
		s.basisChange(q, r, leaveAt, s.wNZ)
		s.noteRepriced(out)
		s.rejectEpoch++
		s.pivotTol = spxPivotTol
	}
}

// progressTol is the relative decrease of the phase's measure below which
// a pivot counts as degenerate.
const progressTol = 1e-12

// progressMeasure is what the phase minimises: the sum of the basic
// variables' scaled infeasibilities in phase 1, the objective in phase 2
// (summed over every column once, then moved along each step: the sum in
// every iteration was a tenth of MaxTotalThroughput's pure-Go time).
func (s *simplex) progressMeasure(phase1 bool) float64 {
	var p float64
	if phase1 {
		for _, j := range s.head {
			p += max(0, s.lo[j]-s.x[j])/max(1, math.Abs(s.lo[j])) + max(0, s.x[j]-s.up[j])/max(1, math.Abs(s.up[j]))
		}
		return p
	}
	if !s.objOK {
		s.obj = 0
		for j := range s.n {
			s.obj += s.cost[j] * s.x[j]
		}
		s.objOK = true
	}
	return s.obj
}

// basisChange makes q basic at position r, with s.w = B⁻¹a_q (its
// nonzeros listed in nz, or nz nil); the leaving variable takes the value
// at.
func (s *simplex) basisChange(q, r int, at float64, nz []int) {
	out := s.head[r]
	s.obj += s.cost[out] * (at - s.x[out])
	s.x[out] = at
	s.where[out] = -1
	if s.basicOK {
		s.isBasic[out], s.isBasic[q] = false, true
	}
	if !s.inBump[r] {
		s.grow(r)
	}
	s.head[r] = q
	s.where[q] = r
	s.setLower(r)
	s.eta.push(r, s.w, nz, s.inBump)
	s.fresh = false
}

// anyRejected reports whether a column is marked rejected in this epoch.
func (s *simplex) anyRejected() bool {
	for _, e := range s.rejected {
		if e == s.rejectEpoch {
			return true
		}
	}
	return false
}

// refactorDue reports whether the next iteration should refactorise
// first: after refactorEvery pivots, or once the pivots' etas hold more
// than twice as many nonzeros as the factor and the rows together. Each
// update eta is B⁻¹a_q on the bump, dense where the basis couples every
// job through a few capacity rows, and every btran and ftran pays for all
// of them: on water filling's cold LP (4,099 rows) this cut the dual
// phase's CPU time by about 40% when the etas held whole columns (with
// once the factor and rows as the bound: a third; half of it: a fifth).
func (s *simplex) refactorDue() bool {
	if s.fresh {
		return false
	}
	return s.eta.len()-s.factorLen >= refactorEvery || s.eta.nnz()-s.factorNNZ > 2*(s.factorNNZ+s.m)
}
