//go:build !unix

package safefile

import "io/fs"

// oNoFollow is 0 where open has no such flag; Recreate and ReadFile still
// look at the name with Lstat first.
const oNoFollow = 0

// owned tells whether fi is a regular file; ownership is not checked on
// this system.
func owned(fi fs.FileInfo) bool { return fi != nil && fi.Mode().IsRegular() }
