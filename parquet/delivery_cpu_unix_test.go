//go:build unix

package parquet_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
