package stride

import (
	"cmp"
	"math"
	"slices"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/topology"
)

// fracTol is the slack allowed on time fractions: a row of an LP solution
// may sum to 1 + 1e-9, and the round mechanism must accept it.
const fracTol = 1e-7

// Combo is one row of a round-based allocation: a job, or several jobs that
// space-share the same GPUs (Gavel's job combinations). It occupies Gang
// GPUs of one type when it runs, and should run a fraction Target[k] of the
// time on the k-th type of the mechanism.
type Combo struct {
	ID     string
	Jobs   []alloc.JobID
	Gang   int
	Target []float64
}

// Assignment is one row's place in a round: the jobs that run together, the
// GPU type and slots, and whether the row kept the GPUs it held in the
// previous round (a lease renewal: no checkpoint and restart).
type Assignment struct {
	Row     string
	Jobs    []alloc.JobID
	Type    topology.GPUType
	GPUs    []topology.GPU
	Renewed bool
}

// RoundPlan is what runs in one round, in the order rows were placed. The
// Jobs and GPUs slices of its assignments are shared with the mechanism's
// state (a renewed lease hands back the same slots) and must not be
// modified.
type RoundPlan struct {
	Round       int
	Assignments []Assignment
}

// Renewals returns the number of assignments that kept their GPUs.
func (p *RoundPlan) Renewals() int {
	n := 0
	for _, a := range p.Assignments {
		if a.Renewed {
			n++
		}
	}
	return n
}

type comboState struct {
	Combo
	elapsed  int   // rounds since added
	got      []int // rounds run on each type
	lastType int   // type of the previous round, or -1
	lastGPUs []topology.GPU
}

// Rounds is Gavel's round-based mechanism (section 5, Algorithm 1) for a
// fixed allocation, without the round contract: for a scheduler, use Gavel,
// which takes events, failures, a time budget and snapshots, measures f_mk
// in time received and conserves work. Before each round, every (row m,
// type k) with Target X_mk > 0 gets priority X_mk / f_mk, where f_mk is the
// fraction of the rounds since m was added in which m ran on k (+Inf while
// m has not run on k). Pairs are taken in decreasing priority (ties: larger
// X_mk, then row ID, then type order); a pair runs if its row and the row's
// jobs are not yet running this round and Gang GPUs of its type are left.
// Rows that run on the type they ran on in the previous round keep their
// GPUs (lease renewal); the others are placed largest gang first on the
// fewest servers.
//
// Rounds is not work-conserving: only pairs with X_mk > 0 are considered,
// so GPUs that the targets leave unused stay idle. When the targets use
// every GPU (Σ_m X_mk·gang_m = GPUs of k), as optimal policies' allocations
// do, and some schedule of whole rounds realises them, the received
// fractions converge to the targets (TestRoundsConverge,
// TestRoundsGangsConverge). With gangs, Σ_m X_mk·gang_m ≤ GPUs of k does
// not make an allocation schedulable: one job of 1 GPU all the time and one
// of 2 GPUs half the time on a 2-GPU server cannot both be served, and the
// mechanism then gives each a part of its target
// (TestRoundsUnschedulableGangs).
//
// A round costs O(P log P + placement) for P positive targets. The zero
// value is not usable; build one with NewRounds.
type Rounds struct {
	types  []topology.GPUType
	count  []int
	placer *topology.Placer
	rows   []*comboState // by ID
	last   int
	ran    bool

	cand []pair // scratch
}

type pair struct {
	prio float64
	x    float64
	row  int
	k    int
}

// NewRounds returns the mechanism for cluster c, with targets given over
// types (each a type of c), and no rows.
func NewRounds(c topology.Cluster, types []topology.GPUType) (*Rounds, error) {
	p, count, err := typedPlacer(c, types)
	if err != nil {
		return nil, err
	}
	return &Rounds{placer: p, types: slices.Clone(types), count: count}, nil
}

// typedPlacer returns a placer for c and the GPUs of c of each of types,
// and the errors of alloc.CapacityOf.
func typedPlacer(c topology.Cluster, types []topology.GPUType) (*topology.Placer, []int, error) {
	if types == nil {
		types = []topology.GPUType{} // CapacityOf reads nil as every type of c
	}
	capa, err := alloc.CapacityOf(c, types)
	if err != nil {
		return nil, nil, err
	}
	p, _ := topology.NewPlacer(c) // CapacityOf validated c
	count := make([]int, len(types))
	for k, n := range capa.Count {
		count[k] = int(n)
	}
	return p, count, nil
}

// FromAllocation turns an allocation whose rows are job IDs into one Combo
// per job: X_mk = GPUs[m][k] / gang_m (alloc.Allocation's convention). It
// returns an *gpufair.InputError wrapping gpufair.ErrUnknownID for a row that is
// not among jobs, gpufair.ErrShape for an allocation whose GPUs do not have
// one entry per row and type, and gpufair.ErrEmpty for a nil allocation.
// Values are checked when the combos are Set. Targets follow a.Types: give
// them to a Rounds built with the same types in the same order, or use
// Rounds.SetAllocation, which matches types by name.
func FromAllocation(jobs []alloc.Job, a *alloc.Allocation) ([]Combo, error) {
	if a == nil {
		return nil, gpufair.Invalid("Allocation", "", gpufair.ErrEmpty, "nil allocation")
	}
	if len(a.GPUs) != len(a.Rows) {
		return nil, gpufair.Invalid("Allocation.GPUs", "", gpufair.ErrShape, "%d rows of GPUs for %d rows", len(a.GPUs), len(a.Rows))
	}
	for i, row := range a.GPUs {
		if len(row) != len(a.Types) {
			return nil, gpufair.Invalid("Allocation.GPUs", a.Rows[i], gpufair.ErrShape, "%d entries for %d types", len(row), len(a.Types))
		}
	}
	gang := make(map[alloc.JobID]int, len(jobs))
	for _, j := range jobs {
		gang[j.ID] = j.Gang
	}
	out := make([]Combo, len(a.Rows))
	for i, row := range a.Rows {
		g, ok := gang[alloc.JobID(row)]
		if !ok || g < 1 {
			return nil, gpufair.Invalid("Allocation.Rows", row, gpufair.ErrUnknownID, "no job %q with a gang", row)
		}
		x := make([]float64, len(a.Types))
		for k, v := range a.GPUs[i] {
			x[k] = v / float64(g)
		}
		out[i] = Combo{ID: row, Jobs: []alloc.JobID{alloc.JobID(row)}, Gang: g, Target: x}
	}
	return out, nil
}

func (r *Rounds) find(id string) (int, bool) {
	return slices.BinarySearchFunc(r.rows, id, func(c *comboState, id string) int { return cmp.Compare(c.ID, id) })
}

func (r *Rounds) validate(c Combo) error {
	id := c.ID
	switch {
	case id == "":
		return gpufair.Invalid("Combo.ID", "", gpufair.ErrValue, "empty ID")
	case len(c.Jobs) == 0:
		return gpufair.Invalid("Combo.Jobs", id, gpufair.ErrEmpty, "no jobs")
	case c.Gang < 1:
		return gpufair.Invalid("Combo.Gang", id, gpufair.ErrValue, "gang %d", c.Gang)
	case len(c.Target) != len(r.types):
		return gpufair.Invalid("Combo.Target", id, gpufair.ErrShape, "%d fractions for %d types", len(c.Target), len(r.types))
	}
	for i, j := range c.Jobs {
		if j == "" || slices.Index(c.Jobs[:i], j) >= 0 {
			return gpufair.Invalid("Combo.Jobs", id, gpufair.ErrDuplicate, "job %q empty or listed twice", j)
		}
	}
	var sum float64
	for k, x := range c.Target {
		if math.IsNaN(x) || x < 0 || x > 1+fracTol {
			return gpufair.Invalid("Combo.Target", id, gpufair.ErrValue, "fraction %v on %q", x, r.types[k])
		}
		if x > 0 && c.Gang > r.count[k] {
			return gpufair.Invalid("Combo.Gang", id, gpufair.ErrTooLarge, "gang of %d on %d %q GPUs", c.Gang, r.count[k], r.types[k])
		}
		sum += x
	}
	if sum > 1+fracTol {
		return gpufair.Invalid("Combo.Target", id, gpufair.ErrValue, "fractions add up to %v", sum)
	}
	return nil
}

// Set adds rows, or replaces the targets of rows already present (a new
// allocation after a policy recomputation). A replaced row keeps its history
// if its jobs and gang are unchanged, and starts afresh otherwise. It checks
// every row before changing anything and returns an *gpufair.InputError for an
// empty ID or job list, duplicate rows or jobs, a target of the wrong
// length, a fraction outside [0, 1] or fractions adding up to more than 1,
// and gpufair.ErrTooLarge for a gang larger than a type it has time on.
func (r *Rounds) Set(combos ...Combo) error {
	seen := map[string]bool{}
	for _, c := range combos {
		if err := r.validate(c); err != nil {
			return err
		}
		if seen[c.ID] {
			return gpufair.Invalid("Combo.ID", c.ID, gpufair.ErrDuplicate, "listed twice")
		}
		seen[c.ID] = true
	}
	for _, c := range combos {
		c.Jobs, c.Target = slices.Clone(c.Jobs), slices.Clone(c.Target)
		i, ok := r.find(c.ID)
		if ok && r.rows[i].Gang == c.Gang && slices.Equal(r.rows[i].Jobs, c.Jobs) {
			r.rows[i].Target = c.Target
			continue
		}
		st := &comboState{Combo: c, got: make([]int, len(r.types)), lastType: -1}
		if ok {
			r.rows[i] = st
		} else {
			r.rows = slices.Insert(r.rows, i, st)
		}
	}
	return nil
}

// SetAllocation sets one row per job of a (see FromAllocation), matching
// a's GPU types to the mechanism's by name, so a's columns may come in any
// order and may leave out types (their targets are 0). It returns an
// *gpufair.InputError wrapping gpufair.ErrUnknownType if a gives time on a type the
// mechanism lacks, any error of FromAllocation, and any error of Set;
// nothing changes then.
func (r *Rounds) SetAllocation(jobs []alloc.Job, a *alloc.Allocation) error {
	combos, err := FromAllocation(jobs, a)
	if err != nil {
		return err
	}
	col := make([]int, len(a.Types)) // a's column k is the mechanism's type col[k], or -1
	for k, t := range a.Types {
		col[k] = slices.Index(r.types, t)
		if slices.Index(a.Types[:k], t) >= 0 {
			return gpufair.Invalid("Allocation.Types", string(t), gpufair.ErrDuplicate, "listed twice")
		}
	}
	for i := range combos {
		x := make([]float64, len(r.types))
		for k, v := range combos[i].Target {
			if col[k] >= 0 {
				x[col[k]] = v
			} else if v != 0 {
				return gpufair.Invalid("Allocation.Types", string(a.Types[k]), gpufair.ErrUnknownType, "row %q has time on a type the mechanism lacks", combos[i].ID)
			}
		}
		combos[i].Target = x
	}
	return r.Set(combos...)
}

// Remove drops rows (jobs that finished) and reports how many it found.
func (r *Rounds) Remove(ids ...string) int {
	n := 0
	for _, id := range ids {
		if i, ok := r.find(id); ok {
			r.rows = slices.Delete(r.rows, i, i+1)
			n++
		}
	}
	return n
}

// Received returns row id's fraction of rounds on each type since it was
// added (zeros before its first round).
func (r *Rounds) Received(id string) ([]float64, bool) {
	i, ok := r.find(id)
	if !ok {
		return nil, false
	}
	c := r.rows[i]
	f := make([]float64, len(r.types))
	if c.elapsed > 0 {
		for k, g := range c.got {
			f[k] = float64(g) / float64(c.elapsed)
		}
	}
	return f, true
}

// Distance returns max_{m,k} |f_mk − X_mk|, how far the received fractions
// are from the targets.
func (r *Rounds) Distance() float64 {
	var d float64
	for _, c := range r.rows {
		for k, x := range c.Target {
			f := 0.0
			if c.elapsed > 0 {
				f = float64(c.got[k]) / float64(c.elapsed)
			}
			d = max(d, math.Abs(f-x))
		}
	}
	return d
}

// Round runs round q and returns its plan. q must exceed the previous
// round's index; otherwise Round returns an error wrapping gpufair.ErrOrder and
// changes nothing.
func (r *Rounds) Round(q int) (*RoundPlan, error) {
	if r.ran && q <= r.last {
		return nil, gpufair.Invalid("Round", "", gpufair.ErrOrder, "round %d after %d", q, r.last)
	}
	r.ran, r.last = true, q
	r.cand = r.cand[:0]
	for i, c := range r.rows {
		for k, x := range c.Target {
			if x <= 0 {
				continue
			}
			p := math.Inf(1)
			if c.got[k] > 0 {
				p = x * float64(c.elapsed) / float64(c.got[k])
			}
			r.cand = append(r.cand, pair{prio: p, x: x, row: i, k: k})
		}
	}
	slices.SortFunc(r.cand, func(a, b pair) int {
		if c := cmp.Compare(b.prio, a.prio); c != 0 {
			return c
		}
		if c := cmp.Compare(b.x, a.x); c != 0 {
			return c
		}
		if c := cmp.Compare(a.row, b.row); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	left := slices.Clone(r.count)
	totalLeft := 0
	for _, n := range left {
		totalLeft += n
	}
	busy := map[alloc.JobID]bool{}
	chosen := make([]int, len(r.rows)) // type index + 1, 0 if not running
	for _, p := range r.cand {
		if totalLeft == 0 {
			break
		}
		c := r.rows[p.row]
		if chosen[p.row] != 0 || c.Gang > left[p.k] {
			continue
		}
		conflict := false
		for _, j := range c.Jobs {
			if busy[j] {
				conflict = true
				break
			}
		}
		if conflict {
			continue
		}
		for _, j := range c.Jobs {
			busy[j] = true
		}
		chosen[p.row] = p.k + 1
		left[p.k] -= c.Gang
		totalLeft -= c.Gang
	}
	plan := &RoundPlan{Round: q}
	r.placer.Reset()
	// Lease renewals first: a row on the same type keeps its slots.
	var fresh []int
	for i, c := range r.rows {
		k := chosen[i] - 1
		if k < 0 {
			continue
		}
		if k == c.lastType && r.placer.Reserve(c.lastGPUs) == nil {
			plan.Assignments = append(plan.Assignments, Assignment{Row: c.ID, Jobs: c.Jobs, Type: r.types[k], GPUs: c.lastGPUs, Renewed: true})
			continue
		}
		fresh = append(fresh, i)
	}
	slices.SortStableFunc(fresh, func(a, b int) int { return cmp.Compare(r.rows[b].Gang, r.rows[a].Gang) })
	for _, i := range fresh {
		c := r.rows[i]
		k := chosen[i] - 1
		gpus, err := r.placer.Place(r.types[k], c.Gang)
		if err != nil {
			// The selection kept Σ gangs within each type's count.
			panic("stride: round placement failed: " + err.Error())
		}
		plan.Assignments = append(plan.Assignments, Assignment{Row: c.ID, Jobs: c.Jobs, Type: r.types[k], GPUs: gpus})
	}
	for _, a := range plan.Assignments {
		i, _ := r.find(a.Row)
		c := r.rows[i]
		k := chosen[i] - 1
		c.got[k]++
		c.lastType, c.lastGPUs = k, a.GPUs
	}
	for i, c := range r.rows {
		c.elapsed++
		if chosen[i] == 0 {
			c.lastType, c.lastGPUs = -1, nil
		}
	}
	return plan, nil
}
