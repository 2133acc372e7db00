//go:build !(linux || darwin || freebsd)

package safefile

// Free returns the bytes still free on the file system holding dir; ok is
// false when the system cannot tell, as here.
func Free(string) (free int64, ok bool) { return 0, false }
