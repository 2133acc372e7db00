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
// Bulk delivery files in the parquet format are read by package
// github.com/lendgraph/lendgraph-go/parquet, a package of its own so that
// programs which never read parquet do not link a parquet library.
//
// For tests, package lendgraphtest starts an in-process fake of the API that
// follows the reference's rules.
package lendgraph
