//go:build windows

package export

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// noFollow: Windows opens no symbolic link by a plain name here.
const noFollow = 0

// lockShard takes an exclusive lock on the shard's own lock file.
func lockShard(r *os.Root, _ int, name string) (func(), bool, error) {
	return lockFile(r, name+".lock", tryLock)
}

// tryLock takes an exclusive LockFileEx lock on f without waiting: a lock
// another process holds is errLocked. It ends with unlock, or with the
// process.
func tryLock(f *os.File) (unlock func(), err error) {
	ol := new(windows.Overlapped)
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK | windows.LOCKFILE_FAIL_IMMEDIATELY)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol); err != nil {
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, errLocked
		}
		return nil, err
	}
	return func() { _ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol) }, nil
}
