//go:build !race

// Package race tells tests whether they run under the race detector, whose
// slowdown voids their timing checks.
package race

// Enabled reports a -race build.
const Enabled = false
