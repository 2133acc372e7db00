//go:build !linux

package export

import "os"

// allocate takes size bytes of room for f by writing them.
func allocate(f *os.File, size int) error { return fill(f, size) }
