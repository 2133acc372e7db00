// Package lendgraphtest is an in-process fake of the LendGraph API for tests.
//
// It follows the reference's rules, not just its shapes: API keys in
// organizations, credits and the charge rules, the enrichment cache, jobs
// and their ownership, entitlements and row ceilings, signed expiring
// download links, search tokens that expire, 202 computing, and the error
// bodies. It serves a deterministic synthetic dataset of any size, generated
// lazily, and lets a test inject faults, move the clock, and read the
// requests it received.
//
//	srv := lendgraphtest.NewServer(t)
//	c := srv.Client()
//	page, err := c.Agents.List(ctx, nil)
//
// # The dataset
//
// Records are a function of (seed, resource, index): the same seed gives the
// same records in every run. Their fields are listed by Dataset.Fields. They
// spread over the 50 states and DC, weighted roughly by population
// (California about one record in eight, Wyoming one in five hundred), each
// state with two to five cities. About one record in a hundred of agents,
// originators, companies, loans, properties, branches and sales has no state
// at all (the member is absent; Dataset.HasState says which), as real data
// does: a query split by state then does not add up to the whole, and a
// filter on state null finds the rest.
//
// Records are generated when read, so a large resource costs nothing at
// start. The first query that filters, sorts or charts a resource reads all
// of its records once into an index (a few seconds for a million rows);
// every later total, count, chart or delivery selection of it is answered
// from the index, with the same answer record for record.
//
// # Strict where the reference is silent
//
// The reference does not say what the service does with a query that names
// something that does not exist. A lenient fake would answer with nothing
// (or ignore the mistake) and a test would pass where production fails, so
// the fake refuses such requests with 400 {"error": "..."}, the message
// starting with the path of the offending part (sort[1].field,
// flatFilters.state[2], advancedFilters.and[0].not.op, fields[3]):
//
//   - sort: a field the resource's list records lack, a field holding lists
//     or objects, or an order other than asc or desc (empty means asc). Where
//     the reference says the sort is ignored (counts, analytics, charts), it
//     is not checked.
//   - flatFilters and advancedFilters: a field the list records lack or one
//     holding objects; an operator other than eq, ne, gt, gte, lt, lte, in;
//     in without an array; gt, gte, lt or lte on a field holding lists; a
//     value of another JSON type than the field's (strings, numbers,
//     booleans; a list field takes values of its elements' type). A flat
//     filter's array means any of its values. null means "the field is
//     absent": it works with eq, ne, in and flat filters, and is refused
//     with the ordering operators.
//   - a chart's slice or segment naming a field the resource lacks.
//   - bulk delivery fields naming a field the list records lack (a member of
//     the complete record only, like recentTransactions, gets a message
//     saying so). The reference intersects fields with the entity's schema;
//     the fake refuses names outside it instead, so that a typo fails in the
//     test rather than silently dropping a column. Fields outside the
//     entitlement's allowed columns are dropped as the reference says.
//
// The fake's records are synthetic: a field the real API has and the fake
// does not generate is refused too. Dataset.Fields lists what it knows.
//
// The test helpers refuse misuse the same way, by panicking with what to
// write instead: SetEntitlement with columns or filters the resource lacks,
// and InjectFault or CountRequests with a pattern that can never match.
//
// # Faults
//
// InjectFault arms a fault for the requests matching a method and a path
// pattern written as the docs write routes ("/v1/agents/{id}",
// "/v1/{resource}/bulk-delivery/{jobId}", "/objects/{key...}") or in
// path.Match syntax ("/v1/properties/*/enrich"). A fault can answer with a
// status, headers and a body (a 429 with Retry-After, a 5xx, a body of any
// size), drop the connection before or in the middle of the body, stall, or
// trickle.
//
// # Reaching every enrichment error
//
// Each error Properties.Enrich documents can be produced on purpose:
//
//   - 400, no usable address: ClearAddress(propertyID) (no property of
//     the generated data lacks one).
//   - 402 (*lendgraph.InsufficientCreditsError): SetCredits(DefaultOrg, 0),
//     then enrich a property not in the caller's cache.
//   - 404: enrich an id the dataset does not hold.
//   - 502, the provider failed: FailEnrichment(n); nothing is charged.
//   - 429 or 5xx before the server acts: InjectFault(http.MethodPost,
//     "/v1/properties/{id}/enrich", Fault{Kind: Respond, Status: 503}).
//   - A lost answer after the server acted (the call repeated, the
//     repeat's answer carrying EarlierAttemptMayHaveCharged; with Refresh,
//     an error matching lendgraph.ErrOutcomeUnknown): InjectFault with
//     Fault{Kind: DropMidBody}; the ledger (Debits, Credits) shows the
//     charge.
//
// EnrichOutcome tells in advance what a live lookup of a property gives.
//
// # Outside Go
//
// "lendgraph fake" runs the fake as a server for harnesses in any language
// (Start, WithAddr, WithSettings and WithControlEndpoint are what it uses).
// Settings, as JSON, set the dataset, credits, entitlements, job pace, link
// lifetime and faults at start; the control endpoint under /_fake/ on the
// API's address changes everything but the dataset while it runs and reads
// the request log, the ledger and the jobs (see WithControlEndpoint).
package lendgraphtest
