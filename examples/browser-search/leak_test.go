package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine running
// (chromedp's connection to the browser, the search host's servers).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
