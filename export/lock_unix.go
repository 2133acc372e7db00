//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package export

import (
	"errors"
	"os"
	"syscall"
)

// noFollow opens a name without following a symbolic link at it.
const noFollow = syscall.O_NOFOLLOW

// lockShard takes an exclusive flock on the shard's own lock file.
func lockShard(r *os.Root, _ int, name string) (func(), bool, error) {
	return lockFile(r, name+".lock", tryLock)
}

// tryLock takes an exclusive flock on f without waiting: a lock another
// process holds is errLocked. It ends with unlock, or with the process.
func tryLock(f *os.File) (unlock func(), err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, errLocked
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
