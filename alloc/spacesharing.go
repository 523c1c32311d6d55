package alloc

import (
	"context"

	"github.com/gpufair/gpufair/topology"
)

// PairRate is a measured co-location (Gavel §3.1, Figure 4): a job of type
// A and a job of type B running together on one gang of GPUs of Type reach
// RateA and RateB (each job's own throughput, in the unit of
// Problem.Throughputs). A may equal B. Rates of zero mean the pair does not
// fit (memory) and add nothing.
type PairRate struct {
	A, B         string
	Type         topology.GPUType
	RateA, RateB float64
}

// SharingObjective selects what SpaceSharing optimises.
type SharingObjective int

const (
	// SharingMaxTotal maximises Σ_m throughput(m, X), as MaxTotalThroughput.
	SharingMaxTotal SharingObjective = iota
	// SharingMaxMin maximises min_m Gang_m·throughput(m, X) /
	// (Weight_m·throughput(m, X^equal)), Gavel's heterogeneity-aware LAS
	// (§4.1) with X^equal the equal time share of every type in proportion
	// to its count (ERRATA: Gavel's normaliser). Jobs that no type can run
	// alone are an *gpufair.InputError.
	SharingMaxMin
	// SharingMaxMinThenTotal is SharingMaxMin, then, among its optima, the
	// allocation with the largest sum of those normalised throughputs: a
	// second LP holds the level at the first one's optimum (less a
	// relative 1e-7, the solvers' noise) and maximises the sum. Max-min
	// alone leaves every job above the lowest level to whichever optimal
	// vertex the solver ends at, and the LP backends end at different ones
	// (on one trace, pairs were a third of the placements with CLP and 2%
	// with PureGo: docs/benchmarks/gavel.md). The second stage makes the
	// allocation Pareto-efficient (one that gives no job less keeps the
	// level, so it cannot give more in total), and the same under either
	// backend up to the second objective's own ties. It goes beyond Gavel,
	// whose LAS has the max-min objective alone.
	SharingMaxMinThenTotal
	// SharingMinMakespan is Gavel's makespan policy (§4.2, Makespan) with
	// space sharing, which the paper's evaluation runs (§7.3: "makespan is
	// reduced by a further 8%"): maximise min_m throughput(m, X)/S_m,
	// S_m = RemainingSteps[m], whose reciprocal is the makespan. Each
	// job's own work makes it a class of its own, so the pairs join a job
	// and a job type (the partner formulation below), not two jobs.
	SharingMinMakespan
	// SharingMinMakespanThenTotal is SharingMinMakespan, then, among its
	// optima, the allocation with the largest Σ_m throughput(m, X)/S_m,
	// by a second LP as SharingMaxMinThenTotal's. The makespan LP fixes
	// only the jobs that set the makespan; the others get whatever
	// optimal vertex the solver ends at, often just enough, and with
	// space sharing the level is often set by one long job alone on its
	// fastest type, so that every other job is left to the vertex. The
	// second stage gives them what the cluster has to spare, weighted
	// towards the shortest work (Makespan's fill of idle GPUs serves the
	// latest finish first instead). It costs more than the first: 1.3 s
	// against 0.09 s for 300 of Gavel's jobs, 14 s against 0.9 s for
	// 1,000 (CLP). Beyond Gavel, whose makespan LP has no second
	// objective.
	SharingMinMakespanThenTotal
	// SharingFIFO is Gavel's heterogeneity-aware FIFO (§4.2, FIFO) with
	// space sharing, which the paper's evaluation runs (§7.3: "the
	// heterogeneity-aware version with space sharing reduces average JCT
	// by 3.8x at high load"): maximise Σ_m Gang_m·(M − rank_m)·
	// throughput(m, X)/best_m, jobs ranked by Arrival. Each job's rank
	// makes it a class of its own, as for SharingMinMakespan.
	SharingFIFO
	// SharingWaterFilling is SharingMaxMin with water filling (leximin),
	// as WaterFilling is MaxMin with it, and as Gavel's code's
	// MaxMinFairnessWaterFilling_Packing policy: once the lowest level
	// can rise no further, the jobs held there stop and the others rise
	// on together, round after round, until every job is stopped. A job
	// stops when its level row has a positive dual in the round's LP, or
	// when it reaches its best rate (alone or beside a partner) for all
	// of its time. The result maximises the sorted vector of normalised
	// throughputs lexicographically, so it is Pareto-efficient, as
	// SharingMaxMinThenTotal is, and beyond it, no job above the lowest
	// level can gain without a job of lower or equal level losing. The
	// first round is the max-min LP; the others re-solve a loaded round
	// LP warm. Rounds are at most the classes: one where every job can
	// use every type and the cluster is crowded, at least 27 for 1,024
	// of Gavel's jobs on 512 GPUs of each type
	// (BenchmarkSpaceSharingWaterFilling).
	SharingWaterFilling
	// SharingHierarchical is Hierarchical with space sharing, as Gavel's
	// code's MaxMinFairnessWaterFilling_Packing with its entity
	// reweighting: the Problem's Tenants are the entities, sharing the
	// cluster by their weights, each among its jobs fairly (by job
	// weight) or, for the tenants FIFO lists, first in, first out in job
	// order. It is SharingWaterFilling with each round's job weights
	// from the entities (see Hierarchical), and the same stopping rule.
	// Errors as Hierarchical's, FIFO's named SpaceSharing.FIFO.
	SharingHierarchical
)

// SpaceSharing is Gavel's space-sharing extension (§3.1): besides running
// alone, two jobs may share one gang of GPUs, each at its co-located rate.
// Pairs are variables next to the time fractions:
//
//	throughput(m, X) = Σ_k T_mk·X_mk + Σ_{pairs q ∋ m} Σ_k R_{q,m,k}·Y_qk
//	Σ_k X_mk + Σ_{q ∋ m} Σ_k Y_qk ≤ 1                       (each job's time)
//	Σ_m Gang_m·X_mk + Σ_q Gang_q·Y_qk ≤ Count_k             (each type's GPUs)
//
// with the objective of Objective. Co-located jobs must have equal gangs.
//
// Job-type aggregation. Pairs of all jobs grow quadratically (Gavel's
// formulation took 1,837 s for 1,024 jobs). JobTypes labels each job;
// jobs with the same label, gang, weight and throughput row form a class,
// and pair variables join classes, not jobs: Y_{cd,k} is the total time
// that pairs of a c-job and a d-job run on type k, which each c-job shares
// equally (Y/|c|, or 2Y/|c| within one class). Both objectives are
// symmetric within a class and the LP is convex, so averaging any optimum
// over the permutations of each class gives an optimum of this form: the
// class LP has the optimal value of the pairwise LP, exactly, with at most
// classes²·types pair columns (Gavel's data: 83 job types). Pairs pick
// their rates by label: Pairs lists PairRate{A, B, ...} by job type. With
// JobTypes nil every job is its own type, labelled by its ID, and Pairs
// names jobs: Gavel's pairwise formulation.
//
// A pair of one class needs two jobs: a class of one job has no self-pair.
// Pairs naming labels that no job has are ignored, so one table (all of
// Gavel's measurements) serves every workload; pairs naming an unknown GPU
// type, listed twice, or with invalid rates are *InputErrors.
//
// Partner formulation. Where every job is a class of its own (job IDs as
// labels, the makespan objectives' work left, SharingFIFO's ranks), class
// pairs are jobs², too many. A column then joins a class and a label: the
// time the class's jobs spend beside jobs of that label on a type, with
// rows that make those times pairs of distinct jobs (balance between two
// labels, and within a label no job beside it longer than all others
// together). It has the same optimum, exactly (the proof is at
// partnerColumns), with classes·labels·types columns. Solve uses whichever
// formulation has fewer columns, so with classes of whole job types it is
// the class one.
//
// Cost: one LP of classes·types + pairs·types columns and classes + types
// rows (+ classes for a max-min, + the partner formulation's rows).
//
// Properties: the optimum is at least that of the same objective without
// space sharing (Gavel §4.4, "colocation"), since X alone is feasible. The
// max-min objective is sharing-incentive in Gavel's sense and has the
// limits of max-min: not envy-free, not strategy-proof, and its optima
// include allocations that are not Pareto-efficient, which
// SharingMaxMinThenTotal rules out.
type SpaceSharing struct {
	Objective SharingObjective
	JobTypes  []string // label of each job, aligned with Problem.Jobs; nil: job IDs
	Pairs     []PairRate
	// RemainingSteps[m] is job m's work left (positive, aligned with
	// Problem.Jobs), in the unit of Problem.Throughputs' time; read by
	// SharingMinMakespan and SharingMinMakespanThenTotal only.
	RemainingSteps []float64
	// Arrival[m] is job m's arrival time (nonnegative, aligned with
	// Problem.Jobs; nil means job order, ties keep it); read by
	// SharingFIFO only.
	Arrival []float64
	// FIFO lists the tenants that SharingHierarchical serves first in,
	// first out; its other tenants share fairly among their jobs.
	FIFO []TenantID

	formulation sharingFormulation // tests force one; Solve chooses
}

// SharingResult is a space-sharing allocation in detail.
type SharingResult struct {
	// Allocation gives each job its GPUs alone plus half of the GPUs of each
	// pair it is in, so that columns still add up to the GPUs in use.
	Allocation *Allocation
	// Throughput is each job's effective throughput, alone and co-located.
	Throughput []float64
	// Pairs lists the co-located time by pair of job types and GPU type, in
	// class order: Time is the average number of gangs of Type the pairs
	// occupy (pair-instances × time fraction). Zero entries are left out.
	Pairs []PairShare
	// Alone[i][k] is job i's fraction of time running alone on type k, and
	// Partners[i] its fractions of time sharing gangs of a type with jobs
	// of another (or its own) label: what a round mechanism realises
	// (stride.Gavel). Pair time within a class is shared equally by its
	// jobs.
	Alone    [][]float64
	Partners [][]PartnerShare
	// Labels[i] is job i's label, the name by which Partners' With names
	// it: SpaceSharing's JobTypes (job IDs where those are nil), and job
	// IDs for GandivaPacking and FIFOPacking, whose pairs are of jobs.
	Labels []string
}

// PartnerShare is the fraction of its time a job should share gangs of
// Type with a job labelled With.
type PartnerShare struct {
	With string
	Type topology.GPUType
	Time float64
}

// PairShare is the co-located time of jobs labelled A and B on Type.
type PairShare struct {
	A, B string
	Type topology.GPUType
	Time float64
}

// Name returns "space-sharing-max-total", "space-sharing-max-min",
// "space-sharing-max-min-then-total", "space-sharing-min-makespan",
// "space-sharing-min-makespan-then-total", "space-sharing-fifo",
// "space-sharing-water-filling" or "space-sharing-hierarchical".
func (s SpaceSharing) Name() string {
	switch s.Objective {
	case SharingMaxMin:
		return "space-sharing-max-min"
	case SharingMaxMinThenTotal:
		return "space-sharing-max-min-then-total"
	case SharingMinMakespan:
		return "space-sharing-min-makespan"
	case SharingMinMakespanThenTotal:
		return "space-sharing-min-makespan-then-total"
	case SharingFIFO:
		return "space-sharing-fifo"
	case SharingWaterFilling:
		return "space-sharing-water-filling"
	case SharingHierarchical:
		return "space-sharing-hierarchical"
	}
	return "space-sharing-max-total"
}

// Allocate returns Solve's Allocation.
func (s SpaceSharing) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	return allocationOf(s.Solve(ctx, p))
}

// allocationOf returns the Allocation of a space-sharing result, or err.
func allocationOf(r *SharingResult, err error) (*Allocation, error) {
	if err != nil {
		return nil, err
	}
	return r.Allocation, nil
}
