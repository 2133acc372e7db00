package lendgraph_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"
)

// TestMain stops the Toxiproxy server the fault tests started, then fails
// the package when any test left a goroutine running (a pager's prefetch, a
// poller, a download).
func TestMain(m *testing.M) {
	code := m.Run()
	toxi.srv.Close()
	if err := leakcheck.Find(); code == 0 && err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
		code = 1
	}
	os.Exit(code)
}
