//go:build unix

package safefile

import (
	"io/fs"
	"os"
	"syscall"
)

// oNoFollow makes an open fail on a symbolic link instead of following it.
const oNoFollow = syscall.O_NOFOLLOW

// owned tells whether fi is a regular file whose owner is this process's
// effective user.
func owned(fi fs.FileInfo) bool {
	if fi == nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int64(st.Uid) == int64(os.Geteuid())
}
