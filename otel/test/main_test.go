package lendgraphotel_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (a
// batch span processor or a periodic reader not shut down, a client's
// request, a fake server), and, with benchServerEnv set, is the fake API
// the benchmarks measure from another process (see serveBenchAPI).
func TestMain(m *testing.M) {
	serveBenchAPI()
	goleak.VerifyTestMain(m)
}
