// Package speedup holds throughput and speedup matrices: one row per job or
// user, one column per GPU type, each cell a non-negative rate.
//
// A Matrix is validated when it is built (New names every bad cell) and is
// immutable afterwards. Normalisations turn throughputs into the speedup
// vectors the mechanisms consume: relative to the slowest type (OEF's speedup
// vectors, w_l^1 = 1), relative to the fastest, or relative to the throughput
// of an equal share of the cluster (Gavel's normaliser).
//
// A matrix with cells not measured (a new job profiled on one type, a new
// GPU type profiled with a few jobs) is completed by Complete, Gavel's
// low-rank matrix completion, with the model CompleteSettings chooses. Its
// estimates are positive and finite, as a 0 would say a job cannot run on a
// type: a model that gives a cell any other estimate is refused. No
// model is the most accurate on every matrix (docs/benchmarks/gpu.md), so
// SelectSettings chooses one by cross-validation: it holds out measured
// cells, for a new type its column, and keeps the model that predicted them
// best.
package speedup
