// Package alloc holds the shared vocabulary of gpufair (clusters, users, jobs,
// valuations, fractional allocations), the fractional allocation policies
// (Gavel's heterogeneity-aware family and OEF), and the fairness axioms as
// checks any allocation can be held to.
//
// Units: an Allocation gives each row (user or job) a number of GPUs of each
// type, averaged over time. A Linear valuation values a bundle at
// Σ_k rate_k·GPUs_k.
package alloc
