package lendgraph_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain stops the Toxiproxy server the fault tests started, then fails
// the package when any test left a goroutine running (a pager's prefetch, a
// poller, a download).
func TestMain(m *testing.M) {
	code := m.Run()
	toxi.srv.Close()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
		code = 1
	}
	os.Exit(code)
}
