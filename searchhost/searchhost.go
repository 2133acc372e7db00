// Package searchhost gives the official Meilisearch Go client
// (github.com/meilisearch/meilisearch-go) on the LendGraph search host, with
// the SDK's transport underneath. It is a package of its own so that
// programs that import only package lendgraph do not link the Meilisearch
// client; import it where you want the host's whole search API:
//
//	ms, err := searchhost.New(ctx, c) // c from lendgraph.NewClient
//	res, err := ms.Index("originators").Search(ctx, "smi", &meilisearch.SearchRequest{
//		Filter: `states = "TX"`, Facets: []string{"cities"}, Sort: []string{"lastName:asc"},
//	})
//	multi, err := ms.MultiSearch(ctx, &meilisearch.MultiSearchRequest{Queries: ...})
//
// Every request goes through lendgraph's SearchHost.Transport: to the host
// the current search token names, with the token as
// "Authorization: Bearer" (never the API key), once more with a newly
// minted token after a 401 or 403 (as lendgraph.SearchHost documents),
// transient failures retried as the
// client's other reads are, answers read within the SDK's size caps, the
// token redacted from answers and errors, and the host's address held to
// the SDK's link rules (lendgraph.ErrUnsafeLink). The host's refusals come
// back as the client's own *meilisearch.Error (StatusCode, APIError.Code);
// the SDK's errors (a transport failure, an unsafe link, an index outside
// the token's scope) are reachable from it with errors.As and errors.Is.
//
// For one typed query on one index, c.Search.Host().Search needs no
// import beyond package lendgraph.
package searchhost

import (
	"context"
	"net/http"
	"net/url"

	"github.com/meilisearch/meilisearch-go"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// New mints a search token (from c.Search.TokenSource, the client's shared
// source) and returns the official Meilisearch client for the search host
// it names. The token is read-only, so the client's read side is what
// works: searches (Index(uid).Search, SearchRaw, FacetSearch), MultiSearch,
// Health. The client is safe for concurrent use and keeps working as tokens
// expire and are replaced (following a new host when a token names one);
// its own retries are off, since the SDK's run underneath.
func New(ctx context.Context, c *lendgraph.Client) (meilisearch.ServiceReader, error) {
	if c == nil || c.Search == nil {
		return nil, &lendgraph.InvalidArgumentError{Arg: "c", Problem: "is not set up: pass a client from lendgraph.NewClient"}
	}
	tok, err := c.Search.TokenSource().Token(ctx)
	if err != nil {
		return nil, err
	}
	// The token source checked the address (lendgraph.ErrUnsafeLink). The
	// client gets its origin; the transport resolves every request's path
	// against the host of the token it sends.
	u, err := url.Parse(tok.Host)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{
		Transport: c.Search.Host().Transport(),
		// The SDK follows the redirects it allows underneath.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return meilisearch.New(u.Scheme+"://"+u.Host, meilisearch.WithCustomClient(hc), meilisearch.DisableRetries()), nil
}
