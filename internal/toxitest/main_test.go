package toxitest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives the tests: the
// server's output copier, the API client's connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
