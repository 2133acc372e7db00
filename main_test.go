package lendgraph_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"
	"github.com/lendgraph/lendgraph-go/internal/toxitest"
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

// toxi is the package's Toxiproxy server, started by the first test that
// needs one.
var toxi struct {
	once sync.Once
	srv  *toxitest.Server
	err  error
}

// toxiServer returns the package's Toxiproxy server, starting it (and
// building toxiproxy-server when the machine has none) on first use.
func toxiServer(t testing.TB) *toxitest.Server {
	t.Helper()
	toxi.once.Do(func() { toxi.srv, toxi.err = toxitest.Start() })
	if toxi.err != nil {
		t.Fatal(toxi.err)
	}
	return toxi.srv
}
