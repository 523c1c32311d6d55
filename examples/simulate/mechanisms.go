package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/gpufair/gpufair/alloc"
	"github.com/gpufair/gpufair/auction"
	"github.com/gpufair/gpufair/baseline"
	"github.com/gpufair/gpufair/data"
	"github.com/gpufair/gpufair/lp"
	"github.com/gpufair/gpufair/round"
	"github.com/gpufair/gpufair/sim"
	"github.com/gpufair/gpufair/speedup"
	"github.com/gpufair/gpufair/stride"
	"github.com/gpufair/gpufair/topology"
)

// env is what a mechanism is built for: one run of one workload.
type env struct {
	c     topology.Cluster
	w     *sim.Workload
	round float64           // seconds
	tp    *data.Throughputs // Gavel's measurements, for co-located pairs
	// observe, if not nil, sees each round of Themis' arbiter.
	observe func(*auction.Round)
}

// A mechanism makes a fresh scheduler for one run.
type mechanism struct {
	name string
	make func(e *env) (round.Scheduler, error)
}

// gpuPrices returns on-demand prices per GPU-hour of K80, P100, V100 and
// H100 (AWS p2.xlarge and p3.2xlarge, Google Cloud's P100, h100Price), for
// min-cost.
func gpuPrices() map[topology.GPUType]float64 {
	return map[topology.GPUType]float64{"k80": 0.9, "p100": 1.46, "v100": 3.06, h100Type: h100Price}
}

// sloFactor sets min-cost-slo's deadlines: each job should finish within
// sloFactor times its duration alone on its fastest type, from its arrival.
const sloFactor = 10

// tenants is the number of tenants hierarchical spreads the jobs over.
const tenants = 4

// mechanisms lists what the simulator can compare, one line each: every
// fractional policy of package alloc realised by Gavel's mechanism
// (stride.Gavel, with its per-job inputs where it has some), Gavel's
// heterogeneity-agnostic baselines (alloc.Agnostic, and its non-preemptive
// FIFO, baseline.FIFO), variants of that mechanism, Themis' arbiter, the
// baselines Themis compares against (package baseline), and Gandiva_fair.
func mechanisms() []mechanism {
	every := func(n int, in func(float64, *alloc.Problem, []*round.Job) alloc.Policy) stride.GavelSettings {
		return stride.GavelSettings{Inputs: in, Every: n}
	}
	return []mechanism{
		gavel("max-min", alloc.MaxMin{}, stride.GavelSettings{}),
		gavel("max-min-agnostic", alloc.MaxMinAgnostic{}, stride.GavelSettings{}),
		gavel("max-min-min-lease-3", alloc.MaxMin{}, stride.GavelSettings{MinLease: 3}),
		gavel("max-min-no-work-conservation", alloc.MaxMin{}, stride.GavelSettings{NoWorkConservation: true}),
		placementSensitive("max-min-placement", alloc.MaxMin{}),
		gavel("water-filling", alloc.WaterFilling{}, stride.GavelSettings{}),
		hierarchical("hierarchical", false),
		oef("oef-non-cooperative", alloc.NonCooperative, nil, stride.OEFSettings{}),
		oef("oef-cooperative", alloc.Cooperative, nil, stride.OEFSettings{}),
		gavel("finish-time-fairness", alloc.FinishTimeFairness{}, every(10, stride.FinishTimeFairnessInputs)),
		gavel("finish-time-fairness-agnostic", alloc.Agnostic{Policy: alloc.FinishTimeFairness{}}, every(10, agnostic(stride.FinishTimeFairnessInputs))),
		gavel("fifo", alloc.FIFO{}, every(0, stride.FIFOInputs)),
		gavel("fifo-agnostic", alloc.Agnostic{Policy: alloc.FIFO{}}, every(0, agnostic(stride.FIFOInputs))),
		gavel("shortest-job-first", alloc.ShortestJobFirst{}, every(10, stride.ShortestJobFirstInputs)),
		gavel("makespan", alloc.Makespan{}, every(10, stride.MakespanInputs)),
		gavel("max-total-throughput", alloc.MaxTotalThroughput{}, stride.GavelSettings{}),
		minCost("min-cost", false),
		minCost("min-cost-slo", true),
		spaceSharing("space-sharing-max-min", alloc.SharingMaxMin, false),
		spaceSharing("space-sharing-max-min-pair-priorities", alloc.SharingMaxMin, true),
		spaceSharing("space-sharing-max-total", alloc.SharingMaxTotal, false),
		themis("themis", 0),
		themis("themis-patience-2", 2),
		{"tiresias", func(e *env) (round.Scheduler, error) {
			return baseline.NewTiresias(e.c, e.w.Types, &baseline.TiresiasSettings{Round: e.round})
		}},
		gandiva("gandiva", false),
		gandiva("gandiva-no-time-slicing", true),
		{"slaq", func(e *env) (round.Scheduler, error) {
			return baseline.NewSLAQ(e.c, e.w.Types, &baseline.SLAQSettings{Round: e.round})
		}},
		{"optimus", func(e *env) (round.Scheduler, error) {
			return baseline.NewOptimus(e.c, e.w.Types, &baseline.OptimusSettings{Round: e.round})
		}},
		{"fifo-gavel", func(e *env) (round.Scheduler, error) {
			return baseline.NewFIFO(e.c, e.w.Types, &baseline.FIFOSettings{Round: e.round, Seed: 1})
		}},
		{"srtf", func(e *env) (round.Scheduler, error) {
			return baseline.NewSRTF(e.c, e.w.Types, &baseline.SRTFSettings{Round: e.round})
		}},
		{"srsf", func(e *env) (round.Scheduler, error) {
			return baseline.NewSRTF(e.c, e.w.Types, &baseline.SRTFSettings{Round: e.round, Service: true})
		}},
		gandivaFair("gandiva-fair", stride.GandivaSettings{}),
		gandivaFair("gandiva-fair-trading", stride.GandivaSettings{Trading: true}),
		// Listed last, so that the fuzz corpus's mechanism indices keep
		// their meaning.
		oef("oef-cooperative-warm", alloc.Cooperative, nil, stride.OEFSettings{WarmStart: true}),
		oef("oef-cooperative-envy-0.1", alloc.Cooperative, &alloc.OEFSettings{EnvyTolerance: 0.1}, stride.OEFSettings{WarmStart: true}),
		gavel("max-min-reset", alloc.MaxMin{}, stride.GavelSettings{ResetInterval: stride.GavelResetInterval}),
		themisMechanism("themis-unbounded-wait", auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.8, UnboundedWait: true}, false),
		gandivaFair("gandiva-fair-trading-pack", stride.GandivaSettings{Trading: true, Pack: true}),
		themisMechanism("themis-job-locality", auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.8}, true),
		gandivaPacking("gandiva-packing", false),
		gandivaPacking("gandiva-packing-sum-over-types", true),
		spaceSharing("space-sharing-max-min-then-total", alloc.SharingMaxMinThenTotal, false),
		fifoPacking("fifo-packing", 0),
		fifoPacking("fifo-perf", math.Inf(1)),
		sharingMakespan("space-sharing-min-makespan", alloc.SharingMinMakespan),
		sharingMakespan("space-sharing-min-makespan-then-total", alloc.SharingMinMakespanThenTotal),
		colocating("space-sharing-fifo", func(_ *alloc.Problem, jobs []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy {
			return alloc.SpaceSharing{Objective: alloc.SharingFIFO, JobTypes: labels, Pairs: pairs, Arrival: arrivals(jobs)}
		}, stride.GavelSettings{}),
		spaceSharing("space-sharing-water-filling", alloc.SharingWaterFilling, false),
		hierarchical("space-sharing-hierarchical", true),
	}
}

// agnostic returns in with the policy it builds made
// heterogeneity-agnostic, as Gavel's baselines are (alloc.Agnostic).
func agnostic(in func(float64, *alloc.Problem, []*round.Job) alloc.Policy) func(float64, *alloc.Problem, []*round.Job) alloc.Policy {
	return func(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
		return alloc.Agnostic{Policy: in(now, p, jobs)}
	}
}

// gandiva is Gandiva's scheduler with the workload's placement
// preferences; without time slicing, as Themis implemented it.
func gandiva(name string, noSlicing bool) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		spread := e.spread()
		set := &baseline.GandivaSettings{Round: e.round, Spread: func(id alloc.JobID) []float64 { return spread[id] }, NoTimeSlicing: noSlicing}
		return baseline.NewGandiva(e.c, e.w.Types, set)
	}}
}

// spread returns each job's rates spread over servers (sim.Job.Spread).
func (e *env) spread() map[alloc.JobID][]float64 {
	spread := make(map[alloc.JobID][]float64, len(e.w.Jobs))
	for _, j := range e.w.Jobs {
		spread[j.ID] = j.Spread
	}
	return spread
}

// gandivaFair is Gandiva_fair's scheduler (stride.GandivaFair), one quantum
// per round, every job a tenant of one ticket unless the workload names
// owners; with trading, tenants trade GPU shares at second price on the
// rates it profiles; with packing, jobs are packed into servers so that
// none idles GPUs while a large gang waits. Gandiva_fair migrates one job
// across types per one-minute quantum, so a longer round migrates one per
// minute of it.
func gandivaFair(name string, set stride.GandivaSettings) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		s := set
		s.Quantum, s.Migrations = e.round, max(1, int(e.round/stride.DefaultQuantum))
		return stride.NewGandivaFair(e.c, e.w.Types, &s)
	}}
}

// gavel is policy pol realised round by round by Gavel's mechanism.
func gavel(name string, pol alloc.Policy, set stride.GavelSettings) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		s := set
		s.Round = e.round
		return stride.NewGavel(pol, e.c, e.w.Types, &s)
	}}
}

// themis is Themis' arbiter with its paper's settings: 10-minute leases,
// f = 0.8 (section 6.4), and a fixed seed for its random draws; patience
// is the starvation guard (auction.ArbiterSettings.Patience, 0: none).
func themis(name string, patience int) mechanism {
	return themisMechanism(name, auction.ArbiterSettings{Lease: 10 * time.Minute, Filter: 0.8, Patience: patience}, false)
}

// themisWith is Themis' arbiter with fairness knob f and leases of lease
// minutes.
func themisWith(name string, f, lease float64) mechanism {
	return themisMechanism(name, auction.ArbiterSettings{Lease: time.Duration(lease * float64(time.Minute)), Filter: f}, false)
}

// themisNodes bounds each auction's search (ArbiterSettings.MaxNodes), a
// deterministic bound, so that runs repeat exactly.
const themisNodes = 20000

// themisMechanism is Themis' arbiter with settings set (and themisNodes);
// with jobLocality, agents price each job's slowdown by its own placement
// (ThemisSettings.JobLocality). Each app's agent knows what its
// hyper-parameter optimizer does: its work B (equation 2), the work of all
// the app's jobs in the workload on their fastest type, and its plan, the
// jobs of each phase (sim.Job.Phase).
func themisMechanism(name string, set auction.ArbiterSettings, jobLocality bool) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		spread := e.spread()
		work := map[alloc.TenantID]float64{}
		phases := map[alloc.TenantID]map[int][]auction.PlannedJob{}
		for _, j := range e.w.Jobs {
			owner := j.Owner
			if owner == "" {
				owner = alloc.TenantID(j.ID)
			}
			work[owner] += j.Steps * float64(j.Gang) / slices.Max(j.Rates)
			if phases[owner] == nil {
				phases[owner] = map[int][]auction.PlannedJob{}
			}
			phases[owner][j.Phase] = append(phases[owner][j.Phase], auction.PlannedJob{Job: j.Job, Work: j.Steps})
		}
		plans := map[alloc.TenantID][][]auction.PlannedJob{}
		for owner, m := range phases {
			for _, p := range slices.Sorted(maps.Keys(m)) {
				plans[owner] = append(plans[owner], m[p])
			}
		}
		set.MaxNodes = themisNodes
		ts := &auction.ThemisSettings{
			Round:       e.round,
			Arbiter:     set,
			Spread:      func(id alloc.JobID) []float64 { return spread[id] },
			Work:        func(app alloc.TenantID) float64 { return work[app] },
			Phases:      func(app alloc.TenantID) [][]auction.PlannedJob { return plans[app] },
			Observe:     e.observe,
			JobLocality: jobLocality,
		}
		return auction.NewThemis(e.c, e.w.Types, ts, rand.NewPCG(1, 0))
	}}
}

// minCost is Gavel's cost policy with gpuPrices; with slo, each job's
// deadline is sloFactor times its duration alone on its fastest type after
// its arrival (a deadline already past is dropped).
func minCost(name string, slo bool) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		cost := gpuPrices()
		for _, t := range e.w.Types {
			_, ok := cost[t]
			if !ok {
				return nil, fmt.Errorf("%s: no price for GPU type %q", name, t)
			}
		}
		prices := func(p *alloc.Problem) []float64 {
			out := make([]float64, len(p.Capacity.Types))
			for k, t := range p.Capacity.Types {
				out[k] = cost[t]
			}
			return out
		}
		in := func(now float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
			pol := alloc.MinCost{Cost: prices(p)}
			if !slo {
				return pol
			}
			withSLO := pol
			withSLO.RemainingSteps = stride.RemainingSteps(p, jobs)
			withSLO.SLO = make([]float64, len(jobs))
			for i, j := range jobs {
				withSLO.SLO[i] = math.Inf(1)
				if d := j.Arrival + sloFactor*j.Work/slices.Max(j.Rates) - now; d > 0 && j.Work > 0 {
					withSLO.SLO[i] = d
				}
			}
			return sloOrBest{withSLO, pol}
		}
		return stride.NewGavel(alloc.MinCost{}, e.c, e.w.Types, &stride.GavelSettings{Round: e.round, Inputs: in, Every: 10})
	}}
}

// oef is OEF's scheduler (stride.OEF) with demand caps (no tenant is given
// more GPUs than its jobs run at once), the policy's settings pol and the
// scheduler's set (its Round the run's).
func oef(name string, mode alloc.OEFMode, pol *alloc.OEFSettings, set stride.OEFSettings) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		set.Round = e.round
		return stride.NewOEF(alloc.OEF{Mode: mode, DemandCaps: true, Settings: pol}, e.c, e.w.Types, &set)
	}}
}

// sloOrBest is min-cost with SLOs, or without them when the SLOs cannot
// all be met.
type sloOrBest struct{ slo, best alloc.MinCost }

func (p sloOrBest) Name() string { return p.slo.Name() }

func (p sloOrBest) Allocate(ctx context.Context, prob *alloc.Problem) (*alloc.Allocation, error) {
	a, err := p.slo.Allocate(ctx, prob)
	if errors.Is(err, lp.ErrInfeasible) {
		return p.best.Allocate(ctx, prob)
	}
	return a, err
}

// hierarchical is Gavel's hierarchical policy with the jobs spread over
// `tenants` tenants (the entities, of equal weight) in arrival order, each
// sharing its part fairly among its jobs; with sharing, the same with
// space sharing (alloc.SharingHierarchical, realised as spaceSharing is).
// The workload's owners are replaced for this mechanism only.
func hierarchical(name string, sharing bool) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		order := make([]*sim.Job, len(e.w.Jobs))
		for i := range e.w.Jobs {
			order[i] = &e.w.Jobs[i]
		}
		slices.SortStableFunc(order, func(a, b *sim.Job) int { return cmpFloat(a.Arrival, b.Arrival) })
		owner := make(map[alloc.JobID]alloc.TenantID, len(order))
		for i, j := range order {
			owner[j.ID] = alloc.TenantID(fmt.Sprintf("tenant-%d", i%tenants))
		}
		var s round.Scheduler
		var err error
		if sharing {
			s, err = spaceSharing(name, alloc.SharingHierarchical, false).make(e)
		} else {
			s, err = stride.NewGavel(alloc.Hierarchical{}, e.c, e.w.Types, &stride.GavelSettings{Round: e.round})
		}
		if err != nil {
			return nil, err
		}
		return owned{s, owner}, nil
	}}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// owned passes arrivals on with the job's owner replaced.
type owned struct {
	round.Scheduler
	owner map[alloc.JobID]alloc.TenantID
}

func (o owned) Apply(events ...round.Event) error {
	ev := slices.Clone(events)
	for i := range ev {
		if ev[i].Kind == round.Arrived {
			ev[i].Job.Owner = o.owner[ev[i].Job.ID]
		}
	}
	return o.Scheduler.Apply(ev...)
}

// placementSensitive is pol solved over Gavel's placement-sensitive
// problem (alloc.NewPlacementProblem): each type's GPUs split into a
// consolidated pool (half of them), where gangs run at their one-server
// rates, and an unconsolidated one, where they run at their spread rates;
// a gang larger than a server of a type has no consolidated rate there.
// The allocation, folded back to the physical types, is realised by Gavel's
// mechanism, which places gangs on the fewest servers it can.
func placementSensitive(name string, pol alloc.Policy) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		ps := &placementPolicy{name: name, pol: pol, types: e.w.Types, spread: e.spread(), largest: map[topology.GPUType]int{}}
		for _, s := range e.c.Servers {
			ps.largest[s.Type] = max(ps.largest[s.Type], s.GPUs)
		}
		return stride.NewGavel(ps, e.c, e.w.Types, &stride.GavelSettings{Round: e.round})
	}}
}

type placementPolicy struct {
	name    string
	pol     alloc.Policy
	types   []topology.GPUType
	spread  map[alloc.JobID][]float64 // over types
	largest map[topology.GPUType]int  // GPUs of the largest server of each type
}

func (p *placementPolicy) Name() string { return p.name }

func (p *placementPolicy) Allocate(ctx context.Context, prob *alloc.Problem) (*alloc.Allocation, error) {
	ct := prob.Capacity.Types
	cons := make([][]float64, len(prob.Jobs))
	spread := make([][]float64, len(prob.Jobs))
	for i, j := range prob.Jobs {
		row := prob.Throughputs.Row(i)
		cons[i], spread[i] = make([]float64, len(ct)), make([]float64, len(ct))
		sp := p.spread[j.ID]
		for k, t := range ct {
			spread[i][k] = row[k]
			if sp != nil && row[k] > 0 {
				spread[i][k] = sp[slices.Index(p.types, t)]
			}
			if j.Gang <= p.largest[t] {
				cons[i][k] = row[k]
			}
		}
	}
	ids := prob.JobIDs()
	tc, err := speedup.New(ids, ct, cons)
	if err != nil {
		return nil, err
	}
	ts, err := speedup.New(ids, ct, spread)
	if err != nil {
		return nil, err
	}
	// The matrices carry the rates: a job's consolidated rates are not
	// its own Rates when its gang fits no server.
	jobs := slices.Clone(prob.Jobs)
	for i := range jobs {
		jobs[i].Rates = nil
	}
	cp, err := alloc.NewProblem(prob.Capacity, prob.Tenants, jobs, tc)
	if err != nil {
		return nil, err
	}
	half := make([]float64, len(ct))
	for k, n := range prob.Capacity.Count {
		half[k] = math.Ceil(n / 2)
	}
	pp, err := alloc.NewPlacementProblem(cp, ts, half)
	if err != nil {
		return nil, err
	}
	a, err := p.pol.Allocate(ctx, pp.Problem)
	if err != nil {
		return nil, err
	}
	return pp.Fold(a)
}

// spaceSharing is Gavel's space-sharing policy with the co-located rates
// Gavel measured, over the workload's job types (model and gang).
// stride.Gavel realises the pairs as placements of two jobs on one gang of
// GPUs, and the simulator runs them at their measured co-located rates.
// pairPriorities ranks each pair as a combination of its own
// (stride.GavelSettings.PairPriorities, Gavel's Algorithm 1).
func spaceSharing(name string, obj alloc.SharingObjective, pairPriorities bool) mechanism {
	return colocating(name, func(_ *alloc.Problem, _ []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy {
		return alloc.SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs}
	}, stride.GavelSettings{PairPriorities: pairPriorities})
}

// sharingMakespan is Gavel's makespan policy with space sharing (obj, one
// of alloc.SpaceSharing's makespan objectives), re-solved every 10 rounds
// as makespan is, realised as spaceSharing is.
func sharingMakespan(name string, obj alloc.SharingObjective) mechanism {
	return colocating(name, func(p *alloc.Problem, jobs []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy {
		return alloc.SpaceSharing{Objective: obj, JobTypes: labels, Pairs: pairs, RemainingSteps: stride.RemainingSteps(p, jobs)}
	}, stride.GavelSettings{Every: 10})
}

// gandivaPacking is the Gandiva baseline of Gavel's evaluation
// (alloc.GandivaPacking, with Gavel's code's test of a pair if sum) with
// the co-located rates Gavel measured, realised as spaceSharing is.
func gandivaPacking(name string, sum bool) mechanism {
	return colocating(name, func(_ *alloc.Problem, _ []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy {
		return alloc.GandivaPacking{JobTypes: labels, Pairs: pairs, Seed: 1, SumOverTypes: sum}
	}, stride.GavelSettings{})
}

// fifoPacking is the heterogeneity-aware FIFO with space sharing of
// Gavel's evaluation (alloc.FIFOPacking, with threshold) with the
// co-located rates Gavel measured, re-solved at every arrival and
// departure.
func fifoPacking(name string, threshold float64) mechanism {
	return colocating(name, func(_ *alloc.Problem, jobs []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy {
		return alloc.FIFOPacking{Arrival: arrivals(jobs), JobTypes: labels, Pairs: pairs, Threshold: threshold}
	}, stride.GavelSettings{})
}

// arrivals returns the jobs' arrival times, nil (job order) for no jobs,
// as the policy that only names the scheduler has.
func arrivals(jobs []*round.Job) []float64 {
	var arr []float64
	for _, j := range jobs {
		arr = append(arr, max(j.Arrival, 0))
	}
	return arr
}

// colocating is a policy that co-locates jobs, built by policy from the
// decision's problem and jobs, each job's type (model and gang) and Gavel's co-located rates of
// those types, realised by Gavel's mechanism with settings set.
func colocating(name string, policy func(p *alloc.Problem, jobs []*round.Job, labels []string, pairs []alloc.PairRate) alloc.Policy, set stride.GavelSettings) mechanism {
	return mechanism{name, func(e *env) (round.Scheduler, error) {
		model := map[alloc.JobID]string{}
		kinds := map[string]data.JobType{}
		for _, j := range e.w.Jobs {
			jt := data.JobType{Model: j.Kind, Scale: j.Gang}
			model[j.ID] = j.Kind
			kinds[jt.String()] = jt
		}
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		slices.Sort(names)
		var pairs []alloc.PairRate
		if e.tp != nil {
			for i, a := range names {
				for _, b := range names[i:] {
					ka, kb := kinds[a], kinds[b]
					if ka.Scale != kb.Scale {
						continue
					}
					for _, t := range e.w.Types {
						if ra, rb, ok := e.tp.Pair(string(t), ka, kb); ok && ra > 0 && rb > 0 {
							pairs = append(pairs, alloc.PairRate{A: a, B: b, Type: t, RateA: ra, RateB: rb})
						}
					}
				}
			}
		}
		in := func(_ float64, p *alloc.Problem, jobs []*round.Job) alloc.Policy {
			// A job's label is its model at the gang the ledger knows
			// (a snapshot may say another than the workload's); a job
			// of no known model gets none, and no partner.
			labels := make([]string, len(jobs))
			for i, j := range jobs {
				if m, ok := model[j.ID]; ok {
					labels[i] = data.JobType{Model: m, Scale: j.Gang}.String()
				}
			}
			var ps []alloc.PairRate
			for _, q := range pairs {
				if slices.Contains(p.Capacity.Types, q.Type) {
					ps = append(ps, q)
				}
			}
			return policy(p, jobs, labels, ps)
		}
		s := set
		s.Round, s.Inputs = e.round, in
		return stride.NewGavel(policy(nil, nil, nil, nil), e.c, e.w.Types, &s)
	}}
}

// names returns every mechanism's name, in order.
func names() []string {
	var out []string
	for _, m := range mechanisms() {
		out = append(out, m.name)
	}
	return out
}

// pick returns the mechanisms named in list (comma-separated, or "all"),
// in that order, or an error naming the first unknown one.
func pick(list string) ([]mechanism, error) {
	all := mechanisms()
	if strings.TrimSpace(list) == "all" {
		return all, nil
	}
	var out []mechanism
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, m := range all {
			if m.name == name {
				out = append(out, m)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("-mechanisms: unknown %q (known: %s, or all)", name, strings.Join(names(), ", "))
		}
	}
	return out, nil
}
