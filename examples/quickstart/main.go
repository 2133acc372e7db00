// Command quickstart tours the SDK's main flows. With no LENDGRAPH_API_KEY
// set it starts the in-process fake API (lendgraphtest) and runs against it;
// with a key it runs the same tour against the real API.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// tour is everything a section of the tour needs. srv is nil against the
// real API.
type tour struct {
	ctx context.Context
	c   *lendgraph.Client
	out io.Writer
	srv *lendgraphtest.Server
}

// testHooks let a test capture the tour's debug log and inspect the fake
// it runs against; the program leaves them empty.
var testHooks struct {
	options []lendgraph.Option
	fake    func(*lendgraphtest.Server)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	t := tour{ctx: ctx, out: out}
	if os.Getenv(lendgraph.EnvAPIKey) == "" {
		srv, err := lendgraphtest.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		t.srv = srv
		t.c = srv.Client(testHooks.options...)
		if testHooks.fake != nil {
			testHooks.fake(srv)
		}
		fmt.Fprintf(out, "No %s set: touring the in-process fake API at %s\n", lendgraph.EnvAPIKey, srv.URL)
	} else {
		c, err := lendgraph.NewClient()
		if err != nil {
			return err
		}
		t.c = c
		fmt.Fprintf(out, "Touring the LendGraph API at %s\n", c.BaseURL())
	}
	for _, section := range []func(tour) error{
		tourResources,
		tourEnrichment,
		tourDelivery,
		tourSearch,
		tourMore,
	} {
		if err := section(t); err != nil {
			return err
		}
	}
	return nil
}
