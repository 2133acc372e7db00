package searchhost_test

import (
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"
)

// TestMain fails the package when a test leaves a goroutine running.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
