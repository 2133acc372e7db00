// Package lendgraph is the Go SDK for the LendGraph API: mortgage, real-estate
// and loan-originator data, owner enrichment (skip-trace), instant search,
// bulk file delivery, market movement of loan officers and CRM features.
//
// Create one Client and share it:
//
//	c, err := lendgraph.NewClient() // key from $LENDGRAPH_API_KEY
//	page, err := c.Agents.List(ctx, &lendgraph.ListRequest{
//		FlatFilters: map[string]any{"state": "CA"},
//		Sort:        []lendgraph.Sort{{Field: "transactionCount", Order: lendgraph.Desc}},
//	})
//
// Every call takes a context first; cancelling it stops the call, a poll, a
// download or an iterator at once. Errors are typed: every non-2xx response
// is an *APIError, with more specific types (InsufficientCreditsError,
// EntitlementError, ...) reachable through errors.As and sentinels
// (ErrNotFound, ErrJobFailed, ...) through errors.Is.
//
// Waits the server asks for follow one rule: a Retry-After on any response
// (the retries of every call, both job kinds' Wait polls, signed-link
// downloads) and market movement's retryAfterMs are slept through up to a
// cap, one minute by default (WithMaxServerWait); a longer one is not
// waited for, and the call returns a *RateLimitError carrying the server's
// value at once.
//
// Links the SDK follows (results and download links, the search host a
// search token names, redirects) must be http or https, and are never plain
// http while the API is https (unless WithInsecureHTTPLinks); otherwise the
// call fails with an error matching ErrUnsafeLink before anything is sent.
//
// For tests, package lendgraphtest starts an in-process fake of the API that
// follows the reference's rules.
package lendgraph
