// Package speedup holds throughput and speedup matrices: one row per job or
// user, one column per GPU type, each cell a non-negative rate.
//
// A Matrix is validated when it is built (New names every bad cell) and is
// immutable afterwards. Normalisations turn throughputs into the speedup
// vectors the mechanisms consume: relative to the slowest type (OEF's speedup
// vectors, w_l^1 = 1), relative to the fastest, or relative to the throughput
// of an equal share of the cluster (Gavel's normaliser).
package speedup
