package lendgraph_test

import (
	"errors"
	"testing"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// wantInvalid checks that err is an *InvalidArgumentError naming arg and
// that the fake received no request.
func wantInvalid(t *testing.T, srv *lendgraphtest.Server, err error, arg string) {
	t.Helper()
	var ia *lendgraph.InvalidArgumentError
	if !errors.As(err, &ia) {
		t.Fatalf("want *InvalidArgumentError for %s, got %T %v", arg, err, err)
	}
	if ia.Arg != arg {
		t.Fatalf("error names %q, want %q: %v", ia.Arg, arg, err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent despite invalid %s", n, arg)
	}
}

// wantStatus checks that err is an *APIError with the status.
func wantStatus(t *testing.T, err error, status int) *lendgraph.APIError {
	t.Helper()
	var ae *lendgraph.APIError
	if !errors.As(err, &ae) || ae.StatusCode != status {
		t.Fatalf("want API error %d, got %T %v", status, err, err)
	}
	return ae
}
