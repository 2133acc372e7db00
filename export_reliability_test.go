package lendgraph

// SetMaxResultsSize lowers the decompression cap of results files for a
// test and returns a function restoring it.
func SetMaxResultsSize(n int64) (restore func()) {
	old := maxResultsSize
	maxResultsSize = n
	return func() { maxResultsSize = old }
}
