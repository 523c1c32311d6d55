package alloc

import (
	"context"

	"github.com/gpufair/gpufair"
	"github.com/gpufair/gpufair/lp"
)

// Hierarchical is Gavel's two-level hierarchical policy (§4.3): entities
// (the Problem's Tenants, with their weights) share the cluster by weighted
// max-min fairness over normalised effective throughput, and each entity
// shares its part among its jobs either fairly (by job weight) or first in,
// first out (in the order of Problem.Jobs). It is computed by water filling
// (see WaterFilling) where each round's job weights come from the entities:
// with W_s the weight of entity s and D the jobs already stopped,
//
//	fair entity:  w_m = W_s · Weight_m / Σ_{j ∈ s, j ∉ D} Weight_j   (jobs of s not in D)
//	FIFO entity:  w_m = W_s for the first job of s not in D, 0 for the others
//
// and round r maximises z subject to v_m ≥ v_m^(r-1) + w_m·z for every job
// with w_m > 0 and v_m ≥ v_m^(r-1) for all, over MaxMin's constraints. When
// a job stops, its weight passes to its entity's other jobs at the next
// round: to the next in line under FIFO, to all the others under fairness.
// Jobs queued behind a FIFO head keep what earlier rounds gave them and can
// still be stopped when no capacity is left for them.
//
// Gavel's worked example (4 identical jobs of weights 3, 1, 1, 1 on 4
// identical GPUs) gives 1, 1/3, 1/3, 1/3 after the first round and 1 to
// every job at the end (a test).
//
// Properties: every round is a max-min LP, so entities' increments respect
// their weights while all can grow; the final allocation is Pareto-efficient
// under the per-job caps (no job could grow when it stopped, and rows only
// tighten). Not envy-free or strategy-proof, between entities or jobs.
//
// Errors: as MaxMin's, and an *gpufair.InputError when Tenants is nil, a
// job's Owner is not among them, or FIFO names an unknown tenant or one
// twice. Cost: one LP over classes per round, kept
// loaded and re-solved warm (as WaterFilling); FIFO entities add a round per
// queued job that is served, each a few pivots (about 250 rounds in 2.3 s
// at 2,048 jobs × 3 types with 2 FIFO entities of 16, on 2 cores).
type Hierarchical struct {
	// FIFO lists the entities whose jobs are served first in, first out;
	// the others share fairly among their jobs.
	FIFO []TenantID
	// Decomposed and LP are as for WaterFilling.
	Decomposed bool
	LP         *lp.Settings
}

// Name returns "hierarchical".
func (Hierarchical) Name() string { return "hierarchical" }

// Allocate returns the hierarchical water-filling allocation of p.
func (h Hierarchical) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	lv, classes, ent, err := h.problem(p)
	if err != nil {
		return nil, err
	}
	y, _, err := waterFill(ctx, lv, ent, roundMethodOf(h.Decomposed), h.LP)
	if err != nil {
		return nil, err
	}
	return classAllocation(p, classes, y), nil
}

// entityWeights hands each entity's weight to its classes round by round.
type entityWeights struct {
	weight []float64 // per entity
	fifo   []bool    // per entity
	// members[s] lists entity s's classes in job order (for FIFO: one
	// job per class).
	members [][]int
	jobW    []float64 // per class, the job weight
	size    []float64 // per class
}

// problem validates p and returns the level problem over classes that keep
// entities apart (and every job of a FIFO entity alone), with the entities'
// weights.
func (h Hierarchical) problem(p *Problem) (*levelProblem, rowClasses, *entityWeights, error) {
	p, _, err := p.validNormalised()
	if err != nil {
		return nil, rowClasses{}, nil, err
	}
	ents, err := newEntities(p, h.FIFO, "Hierarchical.FIFO")
	if err != nil {
		return nil, rowClasses{}, nil, err
	}
	rates, err := normalisedRates(p, false)
	if err != nil {
		return nil, rowClasses{}, nil, err
	}
	weight := make([]float64, len(p.Jobs))
	for i, j := range p.Jobs {
		weight[i] = j.Weight
	}
	lv, classes := newLevelProblem(p, rates, weight, ents.key)
	return lv, classes, ents.weights(p, classes, lv.slope), nil
}

// entities are the Tenants of a hierarchical policy: each job's entity,
// which entities are FIFO, and key, each job's part of its class key
// (its entity, and for FIFO entities its position too), so that classes
// keep entities apart and every job of a FIFO entity alone.
type entities struct {
	of   []int // per job
	fifo []bool
	key  []float64
}

// newEntities validates p's Tenants and fifo (the field named field) for
// a hierarchical policy.
func newEntities(p *Problem, fifo []TenantID, field string) (*entities, error) {
	if p.Tenants == nil {
		return nil, gpufair.Invalid("Tenants", "", gpufair.ErrEmpty, "hierarchical fairness needs the entities as Tenants")
	}
	index := make(map[TenantID]int, len(p.Tenants))
	for s, u := range p.Tenants {
		index[u.ID] = s
	}
	e := &entities{of: make([]int, len(p.Jobs)), fifo: make([]bool, len(p.Tenants)), key: make([]float64, len(p.Jobs))}
	for _, id := range fifo {
		s, ok := index[id]
		if !ok {
			return nil, gpufair.Invalid(field, string(id), gpufair.ErrUnknownID, "not a tenant")
		}
		if e.fifo[s] {
			return nil, gpufair.Invalid(field, string(id), gpufair.ErrDuplicate, "listed twice")
		}
		e.fifo[s] = true
	}
	for i, j := range p.Jobs {
		s := index[j.Owner]
		e.of[i] = s
		e.key[i] = float64(s)
		if e.fifo[s] {
			e.key[i] = float64(len(p.Tenants) + i)
		}
	}
	return e, nil
}

// weights returns the entityWeights of classes, whose jobs weigh jobW
// (per class).
func (e *entities) weights(p *Problem, classes rowClasses, jobW []float64) *entityWeights {
	ew := &entityWeights{
		weight:  make([]float64, len(p.Tenants)),
		fifo:    e.fifo,
		members: make([][]int, len(p.Tenants)),
		jobW:    append([]float64(nil), jobW...),
		size:    make([]float64, classes.numClasses()),
	}
	for s, u := range p.Tenants {
		ew.weight[s] = u.Weight
	}
	for c, i := range classes.rep {
		s := e.of[i]
		ew.members[s] = append(ew.members[s], c)
		ew.size[c] = float64(classes.size[c])
	}
	return ew
}

// weights returns each class's job weight for the next round (per job of
// the class), given the stopped classes.
func (ew *entityWeights) weights(done []bool) []float64 {
	w := make([]float64, len(done))
	for s, cs := range ew.members {
		if ew.fifo[s] {
			for _, c := range cs {
				if !done[c] {
					w[c] = ew.weight[s]
					break
				}
			}
			continue
		}
		var sum float64
		for _, c := range cs {
			if !done[c] {
				sum += ew.jobW[c] * ew.size[c]
			}
		}
		for _, c := range cs {
			if !done[c] {
				w[c] = ew.weight[s] * ew.jobW[c] / sum
			}
		}
	}
	return w
}
