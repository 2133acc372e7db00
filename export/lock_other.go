//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd || windows)

package export

import "os"

// noFollow is not known on these systems.
const noFollow = 0

// lockShard does nothing: see tryLock.
func lockShard(*os.Root, int, string) (func(), bool, error) { return func() {}, true, nil }

// tryLock does nothing on the systems without flock or LockFileEx (AIX,
// Solaris, Plan 9, WebAssembly): two processes must not run the same shard
// of one directory there.
func tryLock(*os.File) (func(), error) { return func() {}, nil }
