// Command browser-search serves a small search page that queries the
// search host straight from the browser.
//
// The page and its search tokens come from this server (one origin): the
// page fetches GET /search-token, served by the SDK's
// Search.TokenHandler, then sends its queries to the search host the token
// names (another origin) with "Authorization: Bearer <token>", fetching a
// new token shortly before the current one expires. The API key stays in
// this process: the browser only ever holds short-lived, read-only search
// tokens.
//
// With no LENDGRAPH_API_KEY set it starts the in-process fake API
// (lendgraphtest), whose search host answers CORS like Meilisearch:
//
//	go run ./examples/browser-search -addr 127.0.0.1:8080
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

//go:embed web
var web embed.FS

// newHandler serves the page (index.html, app.js) and its search tokens.
// A real application mounts /search-token behind its own authentication:
// whoever can fetch it can search.
func newHandler(c *lendgraph.Client) http.Handler {
	static, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	mux := http.NewServeMux()
	mux.Handle("GET /search-token", c.Search.TokenHandler())
	mux.Handle("GET /", http.FileServerFS(static))
	return mux
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the page on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "browser-search:", err)
		os.Exit(1)
	}
}

// run serves the page on addr until ctx ends.
func run(ctx context.Context, addr string, out io.Writer) error {
	var c *lendgraph.Client
	if os.Getenv(lendgraph.EnvAPIKey) == "" {
		srv, err := lendgraphtest.Start()
		if err != nil {
			return err
		}
		defer srv.Close()
		c = srv.Client()
		fmt.Fprintf(out, "No %s set: tokens come from the in-process fake API, searches go to its search host at %s\n",
			lendgraph.EnvAPIKey, srv.SearchHostURL())
	} else {
		var err error
		if c, err = lendgraph.NewClient(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: newHandler(c), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(out, "Open http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(shutdown)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
