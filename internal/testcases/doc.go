// Package testcases holds what the tests of several packages share: OEF's
// worked examples as plain data, the round-contract benchmarks' fixture,
// and the smoke test of the example programs.
package testcases
