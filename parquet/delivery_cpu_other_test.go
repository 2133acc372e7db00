//go:build !unix

package parquet_test

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
