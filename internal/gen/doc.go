// Package gen holds rapid generators of valid gpufair instances, shared by
// the property tests of every package: clusters, rate matrices (positive,
// with zeros, or consistently ordered speedups), users with weights, jobs
// with gangs, whole problems, and allocations feasible for a cluster.
//
// Every generator builds valid values directly (no filtering), so a test
// that draws from it can assume validity; each domain type has one
// rapid.Custom generator. Only tests import this package, so it may import
// the packages whose values it builds.
package gen
