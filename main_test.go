package lendgraph_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when any test leaves a goroutine running
// (a pager's prefetch, a poller, a download).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
