package parquet_test

import (
	"testing"

	"github.com/lendgraph/lendgraph-go/internal/faultproxy"
)

// The fault-injecting proxy of internal/faultproxy, under the names this
// package's tests use.
type (
	faultProxy = faultproxy.Proxy
	proxyFault = faultproxy.Fault
)

const (
	pfPass        = faultproxy.Pass
	pfStallHead   = faultproxy.StallHead
	pfStallBody   = faultproxy.StallBody
	pfTrickle     = faultproxy.Trickle
	pfResetBefore = faultproxy.ResetBefore
	pfResetAfter  = faultproxy.ResetAfter
	pfCutBody     = faultproxy.CutBody
	pf503         = faultproxy.Unavailable
	pf502After    = faultproxy.BadGatewayAfter
	pf429         = faultproxy.TooManyRequests
)

func newFaultProxy(t testing.TB) *faultProxy { return faultproxy.New(t) }
