package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running (the
// browser's pipe readers, the search host's servers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
