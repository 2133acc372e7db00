package lendgraph

// SetDownloadPartSize sets the bytes one ranged request of c's parallel
// downloads asks for (files of two parts or more come down in parallel), so
// tests exercise many parts with small files.
func SetDownloadPartSize(c *Client, n int64) { c.part = n }
