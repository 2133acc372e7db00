package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running: the
// worker, the Temporal client, the fake API and the export's storage are
// all stopped before the test returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
