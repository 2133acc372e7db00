package lendgraph

import "time"

// SetDownloadPartSize sets the bytes one ranged request of c's parallel
// downloads asks for (files of two parts or more come down in parallel), so
// tests exercise many parts with small files.
func SetDownloadPartSize(c *Client, n int64) { c.part = n }

// SetDownloadIdleHook makes fn hear, each time a connection of one of c's
// parallel downloads finds nothing left to take over, how many bytes were
// left unclaimed on the busiest of the others (fn must be quick: it runs
// inside the schedule's lock).
func SetDownloadIdleHook(c *Client, fn func(left int64)) { c.idleHook = fn }

// SetSearchClock makes c's search token source judge expiry by now (the
// fake server's clock in tests). Call it before the first search call.
func SetSearchClock(c *Client, now func() time.Time) { c.Search.now = now }

// SetMaxResultsSize lowers the decompression cap of results files for a
// test and returns a function restoring it.
func SetMaxResultsSize(n int64) (restore func()) {
	old := maxResultsSize
	maxResultsSize = n
	return func() { maxResultsSize = old }
}
