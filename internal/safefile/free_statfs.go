//go:build linux || darwin || freebsd

package safefile

import "golang.org/x/sys/unix"

// Free returns the bytes an unprivileged user may still write on the file
// system holding dir; ok is false when the system cannot tell.
func Free(dir string) (free int64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
