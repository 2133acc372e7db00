package lendgraph

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// MaxEnrichBulk is the most property ids one bulk enrichment job takes.
// PlanEnrichBulk and EnrichBulkBatched split larger sets into several jobs.
const MaxEnrichBulk = 50_000

// EnrichRequest is the query of a single enrichment.
type EnrichRequest struct {
	// Refresh bypasses the cache and forces a live lookup; a match is then
	// charged again even if the property was enriched before.
	Refresh bool
}

// EnrichReason is the pipeline path that produced an enrichment. Values the
// SDK does not know are kept as sent; the reference says every one of them
// is a cache hit and never charged.
type EnrichReason string

// Enrichment reasons shown by the reference.
const (
	// ReasonFreshSkipTrace: a live lookup returned at least one person; the
	// only reason that debits a credit.
	ReasonFreshSkipTrace EnrichReason = "fresh_skip_trace"
	// ReasonFreshSkipTraceEmpty: a live lookup found no contacts; free.
	ReasonFreshSkipTraceEmpty EnrichReason = "fresh_skip_trace_empty"
	// ReasonMemberCacheHit: the caller had already enriched the property; free.
	ReasonMemberCacheHit EnrichReason = "member_cache_hit"
)

// IsCacheHit reports whether the result was served from a cache: every
// reason except the two fresh lookups (an empty reason, which the server
// should not send, is not a cache hit).
func (r EnrichReason) IsCacheHit() bool {
	return r != "" && r != ReasonFreshSkipTrace && r != ReasonFreshSkipTraceEmpty
}

// EnrichResult is the response of a single enrichment.
type EnrichResult struct {
	Data EnrichData `json:"data"`
	// Cached is true when the result was served from the cache.
	Cached bool `json:"cached"`
	// Charged is true only when this call debited a credit (reason
	// fresh_skip_trace).
	Charged bool `json:"charged"`
	// Reason is the pipeline path; see the Reason constants.
	Reason EnrichReason `json:"reason"`
	// Result holds the per-call counts.
	Result EnrichCounts `json:"result"`
	// EarlierAttemptMayHaveCharged is set by Enrich, not sent by the
	// server: the call was repeated after an attempt whose answer was lost
	// once the server may have acted on it (a 5xx, a reset or cut
	// connection, an attempt timeout). That attempt may have debited a
	// credit, although this answer, the repeat's, may say Charged false
	// (Reason member_cache_hit). A caller summing Charged to track spend
	// counts these apart; the enrichment list (Enrichments) or the
	// balance tells what was billed.
	EarlierAttemptMayHaveCharged bool `json:"-"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EnrichData is the data member of a single enrichment.
type EnrichData struct {
	// Persons is empty on a no-match.
	Persons []Person `json:"persons"`
	// EnrichedAt is when the data was produced (for a cache hit: the
	// original lookup).
	EnrichedAt time.Time `json:"enrichedAt,omitzero"`
	// Source identifies the data source.
	Source string `json:"source,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EnrichCounts are the per-call counts of an enrichment.
type EnrichCounts struct {
	Requested int64 `json:"requested"`
	Matched   int64 `json:"matched"`
	NoMatch   int64 `json:"noMatch"`
	Error     int64 `json:"error"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Enrich skip-traces the owner of one property. Without Refresh an already
// enriched property is served from the cache, free; a live lookup debits
// one credit only when it finds a person (Reason fresh_skip_trace).
//
// Without Refresh the call is retried like a read (5xx, a reset or cut
// connection, an attempt timeout): the reference serves a property already
// enriched from the cache, free, so a repeat after a lost answer cannot
// charge twice and returns the result that was paid for. The answer then
// describes the repeat (Reason member_cache_hit, Charged false), although
// the lost attempt may have debited the credit: EarlierAttemptMayHaveCharged
// says so. With Refresh every lookup is
// charged, so the call is never repeated after the server may have acted
// (only a 429 or a connection that never opened is retried), and such a
// failure matches ErrOutcomeUnknown.
//
// Errors: 400 (no usable address on the parcel or any associated record),
// *InsufficientCreditsError (402, with Balance and Cost), ErrNotFound (404),
// and a 502 *APIError when the enrichment provider failed.
func (s *PropertiesService) Enrich(ctx context.Context, id string, req *EnrichRequest, opts ...Option) (*EnrichResult, error) {
	if id == "" {
		return nil, invalidArg("id", "must not be empty: pass the property's id")
	}
	refresh := req != nil && req.Refresh
	// Enrichment rule 2: without refresh a repeat is a free cache hit.
	kind := retry.Idempotent
	if refresh {
		kind = retry.Unrepeatable
	}
	ctx, o, err := s.r.c.begin(ctx, "Properties.Enrich", opts)
	if err != nil {
		return nil, err
	}
	var out EnrichResult
	resp, l, err := o.do(ctx, &request{
		method:  http.MethodPost,
		path:    "/v1/properties/" + url.PathEscape(id) + "/enrich",
		query:   url.Values{"refresh": {strconv.FormatBool(refresh)}},
		kind:    kind,
		charges: !refresh,
	}, &out)
	if resp != nil {
		resp.Body.Close()
	}
	if err == nil {
		credits := 0.0
		if out.Charged { // a live lookup that found a person: one credit
			credits = 1
		}
		o.obs.charged(credits)
	}
	o.end(err)
	if err != nil {
		return nil, err
	}
	out.EarlierAttemptMayHaveCharged = l.lost
	return &out, nil
}

// EnrichBulkRequest is the query of a bulk enrichment job, beside its
// property ids.
type EnrichBulkRequest struct {
	// Refresh bypasses the cache for every property; every match is charged.
	Refresh bool
}

// EnrichJobStatus is the status record of a bulk enrichment job.
type EnrichJobStatus struct {
	JobID  string   `json:"jobId"`
	Status JobState `json:"status"`
	// Total, Succeeded and Failed are row counts.
	Total     int64 `json:"total"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	// FromCache is the rows served from the cache, not charged.
	FromCache int64 `json:"fromCache"`
	// ChargedCount is the rows that debited a credit: the exact total billed
	// once, at completion.
	ChargedCount int64 `json:"chargedCount"`
	// StartedAt and CompletedAt are zero until the job starts and ends.
	StartedAt   time.Time `json:"startedAt,omitzero"`
	CompletedAt time.Time `json:"completedAt,omitzero"`
	// ResultsURL is present once completed; it is re-signed on every status
	// fetch, so always use the newest one (Download and ResultRows do).
	ResultsURL SignedURL `json:"resultsUrl,omitempty"`
	// Error is the failure message of a failed job, when the server sends one.
	Error string `json:"error,omitempty"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// Handled is the rows the job has handled so far: Succeeded (fresh
// lookups, matched or not) plus FromCache (cache hits, which the server
// does not count in Succeeded: Succeeded minus ChargedCount is the
// no-match count) plus Failed. It reaches Total when the job completes; use
// it, not Succeeded+Failed, for progress.
func (s *EnrichJobStatus) Handled() int64 { return s.Succeeded + s.FromCache + s.Failed }

// EnrichJob is a handle on a bulk enrichment job. The submit fields are set
// by EnrichBulk; a handle from PropertiesService.EnrichJob has only ID.
type EnrichJob struct {
	job
	double JobBackend[EnrichJobStatus] // nil: the API
	// ID is the job's id.
	ID string
	// State is the submit response's status (queued). The method Status
	// fetches the current one.
	State JobState
	// PropertyCount is the number of property ids the server accepted.
	PropertyCount int64
	// EstimatedCost is the worst-case credits, as if every property matched.
	// The balance had to cover it; billing is per match, at completion.
	EstimatedCost int64
}

// EnrichBulk submits a bulk enrichment job for 1 to MaxEnrichBulk property
// ids (checked before sending). The balance must cover the worst case, one
// credit a property (*InsufficientCreditsError otherwise); the job bills
// once, at completion, for the matches only. Use Wait, then Download or
// ResultRows. The submit is never repeated after the server may have
// acted. For more ids use EnrichBulkBatched.
func (s *PropertiesService) EnrichBulk(ctx context.Context, ids []string, req *EnrichBulkRequest, opts ...Option) (*EnrichJob, error) {
	if len(ids) > MaxEnrichBulk {
		return nil, invalidArg("ids", "%d property ids given; one job takes at most %d: split them (EnrichBulkBatched does)", len(ids), MaxEnrichBulk)
	}
	if err := checkEnrichIDs(ids); err != nil {
		return nil, err
	}
	body := struct {
		PropertyIDs []string `json:"propertyIds"`
		Refresh     bool     `json:"refresh"`
	}{ids, req != nil && req.Refresh}
	out, err := call[struct {
		JobID         string   `json:"jobId"`
		Status        JobState `json:"status"`
		PropertyCount int64    `json:"propertyCount"`
		EstimatedCost int64    `json:"estimatedCost"`
	}](ctx, s.r.c, "Properties.EnrichBulk", opts, request{method: http.MethodPost, path: "/v1/properties/enrich-bulk", body: body, kind: retry.Unrepeatable})
	if err != nil {
		return nil, err
	}
	if out.JobID == "" {
		return nil, fmt.Errorf("lendgraph: POST /v1/properties/enrich-bulk: the response has no jobId")
	}
	j := s.EnrichJob(out.JobID)
	j.State, j.PropertyCount, j.EstimatedCost = out.Status, out.PropertyCount, out.EstimatedCost
	return j, nil
}

// checkEnrichIDs rejects an empty set and empty ids.
func checkEnrichIDs(ids []string) error {
	if len(ids) == 0 {
		return invalidArg("ids", "no property ids given; pass 1 to %d", MaxEnrichBulk)
	}
	for i, id := range ids {
		if id == "" {
			return invalidArg("ids", "property id at index %d is empty", i)
		}
	}
	return nil
}

// EnrichJob re-attaches to a bulk enrichment job by id, for instance in a
// process restarted mid-job. No request is made until a method is called.
func (s *PropertiesService) EnrichJob(id string) *EnrichJob {
	return &EnrichJob{ID: id, job: job{client: s.r.c, kind: "enrichment", path: "/v1/properties/enrich-bulk/" + url.PathEscape(id), id: id}}
}

// NewEnrichJob returns a handle on job id served by b instead of the API:
// a test double (lendgraphtest.NewEnrichJob builds scripted ones). Every
// method of the handle works through b.
func NewEnrichJob(id string, b JobBackend[EnrichJobStatus]) *EnrichJob {
	return &EnrichJob{ID: id, job: job{kind: "enrichment", id: id}, double: b}
}

// ready checks that the handle can reach its job.
func (j *EnrichJob) ready() error {
	if j == nil {
		return invalidArg("EnrichJob", "is nil")
	}
	if j.double != nil {
		return nil
	}
	return j.usable("enrichment", j.ID, "c.Properties.EnrichJob(id)")
}

// Status fetches the job's status record. Errors: ErrForbidden (another
// caller's job), ErrNotFound (unknown, or past the 30-day retention).
func (j *EnrichJob) Status(ctx context.Context, opts ...Option) (*EnrichJobStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	return jobCall(ctx, j.job, j.double, "EnrichJob.Status", opts,
		func(ctx context.Context, o *operation, st *EnrichJobStatus) error { return j.status(ctx, o, st) }, func(ctx context.Context, id string) (*EnrichJobStatus, error) { return j.double.Status(ctx, id) })
}

// Wait polls the job until it is completed, failed or cancelled, and
// returns the last status record. The first poll is immediate; the interval
// then grows from 200ms to 1s (WithPollInterval changes both) and is cut
// short when the rows handled so far say the job ends sooner, a throttled
// poll waits as long as the server's Retry-After asks when that is within
// the client's cap (WithMaxServerWait, default one minute; a longer one
// ends Wait at once with a *RateLimitError), and a status value the SDK
// does not know counts as still running. WithProgress sees every status
// record fetched.
//
// Wait returns the last status record it fetched together with its error,
// so a status and an error can come back at once:
//   - completed: the final status and nil;
//   - failed or cancelled: the final status and a *JobError (errors.Is
//     ErrJobFailed or ErrJobCancelled) carrying the job's error text;
//   - ctx ends: the last status fetched before (nil if none was fetched
//     yet) and an error matching ctx.Err() (context.Canceled or
//     context.DeadlineExceeded) that says the job keeps running. Waiting
//     stops at once; the job is not cancelled on the server (use Cancel to
//     stop it, or EnrichJob to wait for it again later);
//   - a status fetch fails for good (ErrNotFound, ErrForbidden, a
//     transport error after the retries): the last status fetched before
//     (or nil) and that error;
//   - an invalid option: nil and an *InvalidArgumentError, before any
//     request.
func (j *EnrichJob) Wait(ctx context.Context, opts ...EnrichWaitOption) (*EnrichJobStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	plain, progress := splitOptions[EnrichJobStatus](opts)
	return wait(ctx, j.job, j.double, "EnrichJob.Wait", plain, progress, func(s *EnrichJobStatus) (JobState, string) { return s.Status, s.Error })
}

// Cancel cancels a queued or running job and returns its settled status.
// The job is marked cancelled at once and its worker stops at its next
// progress tick; a cancelled job is never charged, and properties it already
// enriched stay cached. Errors: ErrJobFinished (409: it already completed,
// failed or was cancelled; nothing changed), ErrForbidden (another
// caller's job), ErrNotFound (unknown or past retention).
func (j *EnrichJob) Cancel(ctx context.Context, opts ...Option) (*EnrichJobStatus, error) {
	if err := j.ready(); err != nil {
		return nil, err
	}
	return jobCall(ctx, j.job, j.double, "EnrichJob.Cancel", opts,
		func(ctx context.Context, o *operation, st *EnrichJobStatus) error { return j.cancel(ctx, o, st) }, func(ctx context.Context, id string) (*EnrichJobStatus, error) { return j.double.Cancel(ctx, id) })
}

// EnrichmentEntry is one property the caller has enriched.
type EnrichmentEntry struct {
	PropertyID  string    `json:"propertyId"`
	EnrichedAt  time.Time `json:"enrichedAt,omitzero"`
	Source      string    `json:"source,omitempty"`
	PersonCount int64     `json:"personCount"`
	// Extra holds every other member the server sent.
	Extra Fields `json:",unknown"`
}

// EnrichmentsRequest selects a page of the caller's enrichments. The zero
// value (or nil) asks for the first page.
type EnrichmentsRequest struct {
	// Cursor resumes the listing from a saved cursor.
	Cursor string
}

// EnrichmentPage is one page of the caller's enrichments.
type EnrichmentPage struct {
	Data []EnrichmentEntry `json:"data"`
	// Cursor fetches the next page; empty on the last page.
	Cursor string `json:"cursor"`
}

// Enrichments returns one page of the properties the caller has enriched
// (GET /v1/properties/enrichments?cursor=).
func (s *PropertiesService) Enrichments(ctx context.Context, req *EnrichmentsRequest, opts ...Option) (*EnrichmentPage, error) {
	var cursor string
	if req != nil {
		cursor = req.Cursor
	}
	return call[EnrichmentPage](ctx, s.r.c, "Properties.Enrichments", opts, enrichmentsRequest(cursor))
}

// enrichmentsRequest is the GET of the enrichments page cursor names.
func enrichmentsRequest(cursor string) request {
	var q url.Values
	if cursor != "" {
		q = url.Values{"cursor": {cursor}}
	}
	return request{method: http.MethodGet, path: "/v1/properties/enrichments", query: q, kind: retry.Idempotent}
}

// EnrichmentsPager returns a pager over the caller's enrichments, starting
// at req.Cursor when set, for listings resumed elsewhere; opts apply to
// every page.
func (s *PropertiesService) EnrichmentsPager(req *EnrichmentsRequest, opts ...Option) (*Pager[EnrichmentEntry], error) {
	return s.enrichments(req, "Properties.EnrichmentsPager", opts)
}

func (s *PropertiesService) enrichments(req *EnrichmentsRequest, name string, opts []Option) (*Pager[EnrichmentEntry], error) {
	var cursor string
	if req != nil {
		cursor = req.Cursor
	}
	open, err := s.r.c.opener(name, opts)
	if err != nil {
		return nil, err
	}
	return newPager(cursor, open, func(ctx context.Context, o *operation, cursor string, _ func(string)) ([]EnrichmentEntry, string, error) {
		page, err := sendFor[EnrichmentPage](ctx, o, enrichmentsRequest(cursor))
		if err != nil {
			return nil, "", err
		}
		return page.Data, page.Cursor, nil
	}), nil
}

// AllEnrichments yields every property the caller has enriched, following
// cursors until the server returns none.
func (s *PropertiesService) AllEnrichments(ctx context.Context, req *EnrichmentsRequest, opts ...Option) iter.Seq2[EnrichmentEntry, error] {
	p, err := s.enrichments(req, "Properties.AllEnrichments", opts)
	return pagedAll(ctx, p, err)
}
