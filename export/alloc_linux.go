//go:build linux

package export

import (
	"errors"
	"os"
	"syscall"
)

// allocate takes size bytes of room for f without writing them
// (fallocate), so that taking room costs no write; a file system that
// cannot (EOPNOTSUPP) gets the room written.
func allocate(f *os.File, size int) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size))
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return fill(f, size)
	}
	return err
}
