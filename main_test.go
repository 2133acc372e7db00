package lendgraph_test

import (
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"
)

// TestMain fails the package when any test leaves a goroutine running
// (a pager's prefetch, a poller, a download). Toxiproxy, the fault proxy
// the fault matrix runs in process, leaves link goroutines of its own
// blocked after a proxy stops; they are the proxy's, not the SDK's.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m,
		leakcheck.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		leakcheck.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).read"),
		leakcheck.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2.(*ToxicLink).write"))
}
