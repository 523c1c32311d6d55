// Package gpufair is a library of fair-allocation mechanisms for shared,
// heterogeneous GPU clusters, implementing Themis (NSDI'20), Gavel
// (OSDI'20), OEF (Middleware'24) and Gandiva_fair (EuroSys'20) under one
// vocabulary.
//
// Which package for which job:
//
//   - speedup: throughput and speedup matrices (jobs or users × GPU types),
//     validation, normalisation, estimating missing entries.
//   - gpufair (this package): the sentinel errors every package wraps
//     (ErrValue, ErrUnknownType, ErrOrder, ErrSnapshot, ...) and
//     InputError, which names the input at fault.
//   - alloc: the vocabulary (Tenant, Job with its Rates, Capacity, and
//     CapacityOf for a physical topology.Cluster; Allocation, Valuation), the
//     fractional policies (Gavel's max-min and siblings, OEF cooperative and
//     non-cooperative), and the fairness axioms: sharing incentive,
//     envy-freeness, Pareto efficiency and a strategy-proofness probe, with
//     an Audit usable on any scheduler's allocations.
//   - ftf and auction: Themis' finish-time fairness, bid tables and the
//     partial-allocation auction, single-round and multi-round.
//   - round: the round contract a scheduler drives every round (events in,
//     one leased decision out, a time budget, JSON snapshots) and the
//     Ledger every mechanism on it shares; stride.Gavel is Gavel's
//     scheduler on it.
//   - stride and trade: Gandiva_fair's stride scheduling and second-price
//     trading; Gavel's round mechanism and OEF's rounding placer that turn
//     fractional shares into schedules.
//   - topology: servers, racks, locality and placement.
//   - gpu: NVML probing of real hosts and throughput profiling.
//   - lp: the linear-programming layer (CLP through cgo, or PureGo, a sparse simplex in Go).
//   - sim: a trace-driven simulator that replays Gavel's traces or generated
//     workloads under any mechanism and reports JCT, finish-time fairness,
//     makespan and GPU time.
//
// Data flows: inventory (gpu or topology) and throughputs (gpu or given) →
// speedup matrix → a mechanism decides shares (alloc, auction, trade) →
// alloc audits the axioms → stride realises the shares round by round, on
// the round contract →
// topology places each gang.
package gpufair
