// Package alloc holds the shared vocabulary of gpufair (capacities, tenants, jobs,
// valuations, fractional allocations), the fractional allocation policies
// (Gavel's heterogeneity-aware family and OEF), and the fairness axioms as
// checks any allocation can be held to.
//
// Units: an Allocation gives each row (user or job) a number of GPUs of each
// type, averaged over time. A Linear valuation values a bundle at
// Σ_k rate_k·GPUs_k.
//
// Axioms: SharingIncentive (u_i(x_i) ≥ u_i(w_i/Σw of every type)),
// EnvyFreeness (u_i(x_i)/w_i ≥ u_i(x_j)/w_j), ParetoEfficiency (an LP looks
// for an allocation that lowers no one and raises someone) and
// ProbeStrategyProofness (a seeded search of misreports against any
// Mechanism) each return a report with margins and a witness, within the
// relative tolerance AxiomTol; Audit runs them on an allocation from any
// scheduler. Rows are users or jobs; Allocation.ByOwner and OwnerValuations
// turn job rows into user rows. Rates measured on real GPUs vary from run to
// run; EnvyFreenessWithin and SharingIncentiveWithin check the two axioms
// for every rate within per-cell bounds, such as a job's slowest and fastest
// runs.
package alloc
