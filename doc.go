// Package lendgraph is the Go SDK for the LendGraph API: mortgage, real-estate
// and loan-originator data, owner enrichment (skip-trace), instant search,
// bulk file delivery, market movement of loan officers and CRM features.
//
// Create one Client and share it; every call takes a context first and
// options last:
//
//	c, err := lendgraph.NewClient() // key from $LENDGRAPH_API_KEY
//	defer c.Close()
//	for a, err := range c.Agents.All(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"}}) { ... }
//	a, err := c.Agents.Get(ctx, id, lendgraph.WithMaxRetries(0))
//
// # The map
//
//   - Records: c.Agents, c.Originators, c.Companies, c.Loans, c.Properties,
//     c.Branches, c.Sales, c.Market: List (one page), All (an iterator),
//     Pager (resumable), Get; analytics (Summary, TimeSeries, Chart) and bulk
//     delivery (Deliver) where the API offers them; counts and breakdowns.
//   - Bulk delivery: Deliver returns a DeliveryJob: Wait, then Rows (typed
//     rows while the file downloads), Download or DownloadFile. Parquet files:
//     package github.com/lendgraph/lendgraph-go/parquet. Files on disk:
//     DecodeRows.
//   - Owner enrichment: c.Properties.Enrich, EnrichBulk (an EnrichJob:
//     Wait, ResultRows), Enrichments.
//   - Search: c.Search.Instant (the API route), c.Search.TokenSource and
//     TokenHandler (tokens for a browser), c.Search.Host (the search host).
//   - Market movement (c.Market.MostGained), locations (c.Locations), CRM
//     (c.CRM), saved filters (c.SavedFilters), the external CRM push
//     (c.Integrations), and Client.Do for what the SDK does not wrap.
//   - Options: Option configures the client (NewClient) and one call (the
//     last parameter of every method that sends a request): WithMaxRetries,
//     WithAttemptTimeout, WithHeader, WithResponseInto, WithMiddleware,
//     WithLenientDecoding, ...; WithProgress reports a job's, a download's or
//     market movement's progress.
//   - Errors: *APIError and its typed kinds (errors.As), sentinels
//     (errors.Is): see errors.go's list, and ErrOutcomeUnknown for a call
//     that may have charged.
//   - Tests: stub a service through its interface (AgentsAPI, ...: embed
//     it in your double), or start the fake API with package lendgraphtest.
//   - Observability: WithLogger, WithObserver (package
//     github.com/lendgraph/lendgraph-go/otel for OpenTelemetry).
//   - Exports above one delivery's ceiling: package
//     github.com/lendgraph/lendgraph-go/export.
//
// The guides, one per kind of user, are in the repository's docs folder:
// docs/backend.md (a Go service), docs/data.md (deliveries and exports),
// docs/testing.md (test doubles and the fake), docs/operations.md
// (retries, logs, traces and metrics, and the list of operation names) and
// docs/cli.md (the lendgraph command).
//
// Errors are typed: every non-2xx response is an *APIError, with more
// specific types (InsufficientCreditsError, EntitlementError, ...)
// reachable through errors.As and sentinels (ErrNotFound, ErrJobFailed, ...)
// through errors.Is. A delivery or results file that cannot be decoded ends
// with a *RowError naming the format and the row, line, byte offset or
// column where it failed.
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
// http while the API is https (unless WithInsecureHTTPLinks), never a
// link-local address unless the API itself is local, and only to the
// hosts of WithLinkHosts when it is set; otherwise the call fails with an
// error matching ErrUnsafeLink before anything is sent.
//
// # Iterators
//
// Every iter.Seq2 the SDK returns (the services' All and the other All*
// methods, AllEnrichments among them, Pager.All, DeliveryJob.Rows,
// EnrichJob.ResultRows, DecodeRows, parquet.Decode and parquet.Rows,
// DecodeEnrichmentResults) keeps one contract:
//
//   - Ranging a sequence again starts it over: a list from the request's
//     first page (Pager.All: from where the pager stood when All was
//     called), a delivery or results file from its first row, downloaded
//     again. Nothing is skipped and nothing is invented. A decoder over an
//     io.Reader starts over only when the reader can seek back (an
//     io.Seeker such as an *os.File); over any other reader a second range
//     yields an error instead of rows.
//   - Ranging one sequence from several goroutines at once is safe where
//     the ranges are independent (the All* methods, Rows, ResultRows,
//     parquet.Decode), and refused where they would share one
//     cursor or one reader (Pager.All and NextPage on one Pager, DecodeRows
//     and DecodeEnrichmentResults over one reader): the second range
//     yields an error as its only element. It is never a silent short read.
//   - break, return or a panic in the loop body stops the sequence within a
//     bounded time, however stalled the network is: prefetches and
//     downloads are cancelled and closed before the iterator returns, and
//     no goroutine, connection or temporary file is left. A Pager left in
//     the middle of a page reads that page again next time. (DecodeRows
//     reads a reader you gave it: see its documentation for a Read that
//     blocks.)
//   - Cancelling the context ends the sequence at the next element with an
//     error e for which errors.Is(e, ctx.Err()) holds and, for a context
//     ended with a cause (context.WithCancelCause, WithTimeoutCause),
//     errors.Is(e, context.Cause(ctx)) too; the same in every file format.
//   - An error is yielded once, as the last element; the zero value comes
//     with it.
//
// # Misuse
//
// A call given a nil context, a nil reader or a nil job, and a method of a
// Client not made by NewClient (a zero Client, a nil *Client), returns an
// *InvalidArgumentError saying what to pass instead (an iterator yields it
// as its only element), before any request is sent. The service fields
// (c.Agents, c.Search, ...) are set by NewClient: on a zero Client they are
// nil, as a zero service value holds no client, and calling through them
// panics like any nil pointer.
package lendgraph
