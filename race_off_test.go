//go:build !race

package lendgraph_test

// raceEnabled reports a test binary built with -race.
const raceEnabled = false
