//go:build linux

package export

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// noFollow opens a name without following a symbolic link at it.
const noFollow = unix.O_NOFOLLOW

// lockShard takes byte i of the one lock file of the directory, with an
// open file description lock (F_OFD_SETLK): held by this open of the file
// alone, so two runs in one process exclude each other as two processes
// do, and released when the file is closed or the process ends. One file
// for every shard: no file a shard to create, and no directory block to
// write again for each.
func lockShard(r *os.Root, i int, _ string) (func(), bool, error) {
	return lockFile(r, "shards.lock", func(f *os.File) (func(), error) {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(i), Len: 1}
		for {
			err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
				return nil, errLocked
			}
			if err != nil {
				return nil, err
			}
			return func() {
				lk.Type = unix.F_UNLCK
				_ = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
			}, nil
		}
	})
}
