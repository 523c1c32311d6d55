//go:build race

package lp

// raceEnabled reports a -race build, whose slowdown voids timing checks.
const raceEnabled = true
