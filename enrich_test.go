package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestPropertiesService_Enrich(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	c, ctx := srv.Client(), context.Background()
	match := idsWith(t, srv, lendgraphtest.OutcomeMatch, 1)[0]
	noMatch := idsWith(t, srv, lendgraphtest.OutcomeNoMatch, 1)[0]
	start := srv.Credits(lendgraphtest.DefaultOrg)

	r, err := c.Properties.Enrich(ctx, match, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reason != lendgraph.ReasonFreshSkipTrace || !r.Charged || r.Cached || r.Reason.IsCacheHit() {
		t.Fatalf("first enrich: reason %s charged %v cached %v", r.Reason, r.Charged, r.Cached)
	}
	if len(r.Data.Persons) == 0 || r.Data.Persons[0].Name.Full == "" || len(r.Data.Persons[0].PhoneNumbers) == 0 ||
		r.Data.Persons[0].PropertyAddress == nil || r.Data.EnrichedAt.IsZero() || r.Result.Matched != 1 {
		t.Fatalf("result not decoded: %+v", r)
	}
	p := r.Data.Persons[0]
	if !p.Litigator.Present() || !p.Death.Present() || !p.DNC.Present() {
		t.Fatalf("flags not read: %+v", p)
	}
	if got := srv.Credits(lendgraphtest.DefaultOrg); got != start-1 {
		t.Fatalf("balance %v after a match, want %v", got, start-1)
	}

	again, err := c.Properties.Enrich(ctx, match, &lendgraph.EnrichRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Reason != lendgraph.ReasonMemberCacheHit || again.Charged || !again.Cached || !again.Reason.IsCacheHit() ||
		!again.Data.EnrichedAt.Equal(r.Data.EnrichedAt) {
		t.Fatalf("second enrich: %+v", again)
	}

	nm, err := c.Properties.Enrich(ctx, noMatch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if nm.Reason != lendgraph.ReasonFreshSkipTraceEmpty || nm.Charged || len(nm.Data.Persons) != 0 || nm.Result.NoMatch != 1 {
		t.Fatalf("no-match: %+v", nm)
	}
	if n, total := debits(srv, lendgraphtest.DefaultOrg, "enrich"); n != 1 || total != 1 {
		t.Fatalf("debits %d (%v credits), want exactly one of 1", n, total)
	}
	if lendgraph.EnrichReason("org_cache_hit").IsCacheHit() != true {
		t.Fatal("an unknown reason must count as a cache hit")
	}
}

func TestPropertiesService_EnrichCacheAndRefresh(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	ctx := context.Background()
	id := idsWith(t, srv, lendgraphtest.OutcomeMatch, 1)[0]
	a := srv.Client()
	b := srv.Client(lendgraph.WithAPIKey(srv.NewCaller(lendgraphtest.DefaultOrg).Key))
	for _, step := range []struct {
		c      *lendgraph.Client
		opts   *lendgraph.EnrichRequest
		reason lendgraph.EnrichReason
	}{
		{a, nil, lendgraph.ReasonFreshSkipTrace},
		{a, nil, lendgraph.ReasonMemberCacheHit},
		{b, nil, lendgraph.ReasonFreshSkipTrace}, // another caller: its own lookup
		{b, nil, lendgraph.ReasonMemberCacheHit},
		{a, &lendgraph.EnrichRequest{Refresh: true}, lendgraph.ReasonFreshSkipTrace}, // bypasses the cache, charged again
	} {
		r, err := step.c.Properties.Enrich(ctx, id, step.opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.Reason != step.reason || r.Charged != (step.reason == lendgraph.ReasonFreshSkipTrace) {
			t.Fatalf("reason %s charged %v, want %s", r.Reason, r.Charged, step.reason)
		}
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich"); n != 3 {
		t.Fatalf("%d debits, want 3", n)
	}
	if q := srv.Requests()[0].Query; q != "refresh=false" {
		t.Fatalf("query %q", q)
	}
}

func TestPropertiesService_EnrichErrors(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(300), lendgraphtest.WithRows("loans", 0))
	c, ctx := srv.Client(), context.Background()
	match := idsWith(t, srv, lendgraphtest.OutcomeMatch, 1)[0]

	if _, err := c.Properties.Enrich(ctx, "prop_9999999", nil); !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("unknown property: %v", err)
	}
	noAddr := idsWith(t, srv, lendgraphtest.OutcomeNoAddress, 1)[0]
	var apiErr *lendgraph.APIError
	if _, err := c.Properties.Enrich(ctx, noAddr, nil); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 ||
		!strings.Contains(err.Error(), "no usable address") {
		t.Fatalf("no address: %v", err)
	}

	// With refresh every lookup is charged: a provider failure is not
	// repeated, and the caller is told the server may have acted.
	srv.ResetRequests()
	srv.FailEnrichment(1)
	refresh := &lendgraph.EnrichRequest{Refresh: true}
	if _, err := c.Properties.Enrich(ctx, match, refresh); !errors.As(err, &apiErr) || apiErr.StatusCode != 502 ||
		!errors.Is(err, lendgraph.ErrOutcomeUnknown) {
		t.Fatalf("provider failure: %v", err)
	}
	if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 1 {
		t.Fatalf("a call that may debit was sent %d times, want once (no blind retry)", n)
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich"); n != 0 {
		t.Fatal("a failed lookup was charged")
	}
	// Without refresh a repeat is a free cache hit (Enrichment rule 2): the
	// provider failure is retried like a read, and charged once.
	srv.ResetRequests()
	srv.FailEnrichment(1)
	if r, err := c.Properties.Enrich(ctx, match, nil); err != nil || len(r.Data.Persons) == 0 || !r.Charged {
		t.Fatalf("provider failure once, no refresh: %+v, %v", r, err)
	}
	if n := srv.CountRequests("POST", "/v1/properties/*/enrich"); n != 2 {
		t.Fatalf("%d requests, want 2 (a retry)", n)
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich"); n != 1 {
		t.Fatalf("%d debits, want 1", n)
	}

	srv.SetCredits(lendgraphtest.DefaultOrg, 0)
	var ice *lendgraph.InsufficientCreditsError
	if _, err := c.Properties.Enrich(ctx, match, refresh); !errors.As(err, &ice) || ice.Balance != 0 || ice.Cost != 1 ||
		!errors.Is(err, lendgraph.ErrInsufficientCredits) {
		t.Fatalf("402: %v", err)
	}
}

func TestPropertiesService_EnrichValidation(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(10))
	c, ctx := srv.Client(), context.Background()
	tooMany := make([]string, lendgraph.MaxEnrichBulk+1)
	for i := range tooMany {
		tooMany[i] = "prop_x"
	}
	var inv *lendgraph.InvalidArgumentError
	for name, err := range map[string]error{
		"empty id":  errOf(c.Properties.Enrich(ctx, "", nil)),
		"no ids":    errOf(c.Properties.EnrichBulk(ctx, nil, nil)),
		"empty id2": errOf(c.Properties.EnrichBulk(ctx, []string{"prop_0000001", ""}, nil)),
		"too many":  errOf(c.Properties.EnrichBulk(ctx, tooMany, nil)),
		"plan none": errOf(c.Properties.PlanEnrichBulk(nil, nil)),
		"no job id": errOf(c.Properties.EnrichJob("").Status(ctx)),
	} {
		if !errors.As(err, &inv) {
			t.Errorf("%s: %v, want *InvalidArgumentError", name, err)
		}
	}
	_, err := c.Properties.EnrichBulk(ctx, tooMany, nil)
	if !strings.Contains(err.Error(), "50001") || !strings.Contains(err.Error(), "50000") {
		t.Errorf("message should say how many were given and the limit: %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid input", n)
	}
	plan, err := c.Properties.PlanEnrichBulk(append(tooMany, tooMany...), nil)
	if err != nil || len(plan.Batches) != 3 || len(plan.Batches[2]) != 2 || plan.WorstCaseCost != 100_002 {
		t.Fatalf("plan: %v %d batches", err, len(plan.Batches))
	}
}

func TestPropertiesService_EnrichBulk(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100))
	c, ctx := srv.Client(), context.Background()
	id := idsWith(t, srv, lendgraphtest.OutcomeMatch, 1)[0]
	if _, err := c.Properties.Enrich(ctx, id, nil); err != nil {
		t.Fatal(err)
	}
	for _, refresh := range []bool{false, true} {
		job, err := c.Properties.EnrichBulk(ctx, []string{id}, &lendgraph.EnrichBulkRequest{Refresh: refresh})
		if err != nil {
			t.Fatal(err)
		}
		st, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 10*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if refresh && (st.ChargedCount != 1 || st.FromCache != 0) || !refresh && (st.ChargedCount != 0 || st.FromCache != 1) {
			t.Fatalf("refresh=%v: %+v", refresh, st)
		}
	}
	if n, total := debits(srv, lendgraphtest.DefaultOrg, "enrich-bulk"); n != 1 || total != 1 {
		t.Fatalf("bulk debits %d (%v)", n, total)
	}
}

func TestPropertiesService_EnrichBulkNeedsWorstCaseBalance(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100))
	srv.SetCredits(lendgraphtest.DefaultOrg, 9)
	_, err := srv.Client().Properties.EnrichBulk(context.Background(), propertyIDs(srv, 10), nil)
	var ice *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ice) || ice.Balance != 9 || ice.Cost != 10 {
		t.Fatalf("got %v, want 402 with balance 9 and cost 10", err)
	}
}

func TestPropertiesService_EnrichBulkBillsOnce(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(400), lendgraphtest.WithJobRate("enrichment", 4000))
	c, ctx := srv.Client(), context.Background()
	ids := propertyIDs(srv, 300)
	cached := idsWith(t, srv, lendgraphtest.OutcomeMatch, 3)
	for _, id := range cached {
		if _, err := c.Properties.Enrich(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCharged := 0
	for _, id := range ids {
		if srv.EnrichOutcome(id) == lendgraphtest.OutcomeMatch {
			wantCharged++
		}
	}
	wantCharged -= len(cached)

	job, err := c.Properties.EnrichBulk(ctx, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if job.State != lendgraph.JobQueued || job.PropertyCount != 300 || job.EstimatedCost != 300 || job.ID == "" {
		t.Fatalf("handle: %+v", job)
	}
	var seen []lendgraph.JobState
	billedEarly := false
	st, err := job.Wait(ctx, lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) {
		seen = append(seen, s.Status)
		// A debit seen while the server's job is not completed yet is an
		// early bill. (The status in hand may be older than the ledger
		// read: the job can complete, and bill, in between.)
		if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich-bulk"); n > 0 {
			if j, _ := srv.Job(job.ID); j.State != string(lendgraph.JobCompleted) {
				billedEarly = true
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if billedEarly {
		t.Fatal("billed before completion")
	}
	if len(seen) < 2 || seen[len(seen)-1] != lendgraph.JobCompleted {
		t.Fatalf("progress saw %v", seen)
	}
	if st.ChargedCount != int64(wantCharged) || st.FromCache != 3 || st.Total != 300 || st.Succeeded+st.FromCache+st.Failed != 300 || st.Handled() != 300 {
		t.Fatalf("status %+v, want chargedCount %d", st, wantCharged)
	}
	n, total := debits(srv, lendgraphtest.DefaultOrg, "enrich-bulk")
	if n != 1 || total != float64(st.ChargedCount) {
		t.Fatalf("%d bulk debits totalling %v, want one of %d", n, total, st.ChargedCount)
	}

	rows, charged, noMatch := 0, 0, 0
	for e, err := range job.ResultRows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if e.PropertyID != ids[rows] {
			t.Fatalf("row %d is %s", rows, e.PropertyID)
		}
		if e.Charged {
			charged++
		}
		if e.Reason == lendgraph.ReasonFreshSkipTraceEmpty {
			noMatch++
		}
		rows++
	}
	if rows != 300 || charged != wantCharged {
		t.Fatalf("%d rows, %d charged", rows, charged)
	}
	// The reference: succeeded minus chargedCount is the no-match count.
	if st.Succeeded-st.ChargedCount != int64(noMatch) {
		t.Fatalf("succeeded %d - charged %d != %d no-match rows", st.Succeeded, st.ChargedCount, noMatch)
	}

	evs := srv.Events()
	if len(evs) != 1 {
		t.Fatalf("events %v", evs)
	}
	body, _ := json.Marshal(evs[0])
	ev, err := lendgraph.ParseEnrichmentEvent(body)
	if err != nil || ev.Name != lendgraph.EventEnrichmentCompleted {
		t.Fatalf("event %v %+v", err, ev)
	}
	if evst, err := ev.Job(); err != nil || evst.JobID != job.ID || evst.ChargedCount != st.ChargedCount {
		t.Fatalf("event payload %v %+v", err, evst)
	}

	listed := 0
	for e, err := range c.Properties.AllEnrichments(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.PropertyID == "" || e.EnrichedAt.IsZero() {
			t.Fatalf("entry %+v", e)
		}
		listed++
	}
	if listed != int(st.Succeeded+st.FromCache) {
		t.Fatalf("listed %d enrichments, want %d", listed, st.Succeeded+st.FromCache)
	}
	if srv.CountRequests("GET", "/v1/properties/enrichments") < 2 {
		t.Fatal("expected several pages")
	}
	other := srv.Client(lendgraph.WithAPIKey(srv.NewCaller(lendgraphtest.DefaultOrg).Key))
	for e, err := range other.Properties.AllEnrichments(ctx, nil) {
		t.Fatalf("another caller sees %+v %v", e, err)
	}
}

// startSlowJob submits a job that runs for minutes and waits until it has
// handled some rows.
func startSlowJob(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client) *lendgraph.EnrichJob {
	t.Helper()
	job, err := c.Properties.EnrichBulk(context.Background(), propertyIDs(srv, 1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if j, _ := srv.Job(job.ID); j.Processed > 0 {
			return job
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEnrichJob_Cancel(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(1000), lendgraphtest.WithJobRate("enrichment", 5))
	c, ctx := srv.Client(), context.Background()
	job := startSlowJob(t, srv, c)
	st, err := job.Cancel(ctx)
	if err != nil || st.Status != lendgraph.JobCancelled {
		t.Fatalf("cancel: %v %+v", err, st)
	}
	if _, err := job.Wait(ctx); !errors.Is(err, lendgraph.ErrJobCancelled) {
		t.Fatalf("wait: %v", err)
	}
	if _, err := job.Cancel(ctx); !errors.Is(err, lendgraph.ErrJobFinished) {
		t.Fatalf("second cancel: %v", err)
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich-bulk"); n != 0 {
		t.Fatal("a cancelled job was charged")
	}
	// The first property was enriched before the cancel: it stays cached.
	r, err := c.Properties.Enrich(ctx, propertyIDs(srv, 1)[0], nil)
	if err != nil || r.Reason != lendgraph.ReasonMemberCacheHit {
		t.Fatalf("after cancel: %v %+v", err, r)
	}
	if _, err := job.Download(ctx, &bytes.Buffer{}); !errors.Is(err, lendgraph.ErrJobCancelled) {
		t.Fatalf("download of a cancelled job: %v", err)
	}
	if evs := srv.Events(); len(evs) != 1 || evs[0].Name != lendgraph.EventEnrichmentCancelled {
		t.Fatalf("events %+v", evs)
	}
}

func TestPropertiesService_EnrichJob(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(50))
	c, ctx := srv.Client(), context.Background()
	job, err := c.Properties.EnrichBulk(ctx, propertyIDs(srv, 50), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	other := srv.Client(lendgraph.WithAPIKey(srv.NewCaller(lendgraphtest.DefaultOrg).Key)).Properties.EnrichJob(job.ID)
	if _, err := other.Status(ctx); !errors.Is(err, lendgraph.ErrForbidden) {
		t.Fatalf("status by another caller: %v", err)
	}
	if _, err := other.Cancel(ctx); !errors.Is(err, lendgraph.ErrForbidden) {
		t.Fatalf("cancel by another caller: %v", err)
	}
	reattached := c.Properties.EnrichJob(job.ID)
	if st, err := reattached.Status(ctx); err != nil || st.Status != lendgraph.JobCompleted {
		t.Fatalf("re-attached: %v %+v", err, st)
	}
	srv.Advance(31 * 24 * time.Hour)
	if _, err := reattached.Status(ctx); !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("after retention: %v", err)
	}
	if _, err := reattached.Cancel(ctx); !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("cancel after retention: %v", err)
	}
}

func TestEnrichJob_Failed(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100))
	c, ctx := srv.Client(), context.Background()
	srv.FailNextEnrichJob()
	job, err := c.Properties.EnrichBulk(ctx, propertyIDs(srv, 100), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 10*time.Millisecond))
	var je *lendgraph.JobError
	if !errors.Is(err, lendgraph.ErrJobFailed) || !errors.As(err, &je) || !strings.Contains(je.Message, "provider") ||
		st == nil || st.Status != lendgraph.JobFailed {
		t.Fatalf("wait: %v %+v", err, st)
	}
	if n, _ := debits(srv, lendgraphtest.DefaultOrg, "enrich-bulk"); n != 0 {
		t.Fatal("a failed job was charged")
	}
	if evs := srv.Events(); len(evs) != 1 || evs[0].Name != lendgraph.EventEnrichmentFailed {
		t.Fatalf("events %+v", evs)
	}
}

func TestEnrichJob_WaitStopsOnCancel(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(1000), lendgraphtest.WithJobRate("enrichment", 5))
	c := srv.Client()
	job := startSlowJob(t, srv, c)
	ctx, cancel := context.WithCancel(context.Background())
	// An hour between polls: Wait returns only if cancelling stops it at once.
	var seen *lendgraph.EnrichJobStatus
	last, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Hour, time.Hour),
		lendgraph.WithProgress(func(s *lendgraph.EnrichJobStatus) { seen = s; cancel() }))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("wait: %v", err)
	}
	// As documented: with the error comes the last status fetched.
	if last == nil || last != seen || last.Status.Terminal() {
		t.Fatalf("status returned with the error: %+v, want the last one fetched %+v", last, seen)
	}
	// Nothing fetched yet: no status.
	if last, err := job.Wait(ctx); last != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on an ended context: %+v %v", last, err)
	}
	if st, err := job.Status(context.Background()); err != nil || st.Status != lendgraph.JobRunning {
		t.Fatalf("the server job must keep running: %v %+v", err, st)
	}
}

func TestEnrichJob_WaitHonoursRetryAfter(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(100))
	// No pipeline retries: the poller itself must wait out the 429.
	c, ctx := srv.Client(lendgraph.WithMaxRetries(0)), context.Background()
	job, err := c.Properties.EnrichBulk(ctx, propertyIDs(srv, 100), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.InjectFault("GET", "/v1/properties/enrich-bulk/*", lendgraphtest.Fault{Status: 429,
		Header: map[string]string{"Retry-After": "1"}, Body: `{"error":"slow down"}`})
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 10*time.Millisecond))
	if err != nil || st.Status != lendgraph.JobCompleted {
		t.Fatalf("wait: %v", err)
	}
	var polls []time.Time
	for _, r := range srv.Requests() {
		if r.Method == "GET" && strings.HasPrefix(r.Path, "/v1/properties/enrich-bulk/") {
			polls = append(polls, r.At)
		}
	}
	if len(polls) < 2 || polls[1].Sub(polls[0]) < time.Second {
		t.Fatalf("the poll after a 429 with Retry-After: 1 came %v later", polls[1].Sub(polls[0]))
	}
}

func TestEnrich_LeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv, err := lendgraphtest.Start(lendgraphtest.WithDefaultRows(200))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, ctx := srv.Client(), context.Background()
	job, err := c.Properties.EnrichBulk(ctx, propertyIDs(srv, 200), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Wait(ctx, lendgraph.WithPollInterval(time.Millisecond, 5*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, err := range job.ResultRows(ctx) { // break after the first row
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	for _, err := range c.Properties.AllEnrichments(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if _, err := job.Download(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
}

func errOf[T any](_ T, err error) error { return err }

// A lost answer to Enrich without Refresh is repeated, and the repeat is a
// free cache hit: the result must say that the lost attempt may have
// charged, and the fake's ledger shows it did.
func TestPropertiesService_EnrichRepeatAfterLostAnswer(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	c, ctx := srv.Client(), context.Background()
	ids := idsWith(t, srv, lendgraphtest.OutcomeMatch, 2)
	start := srv.Credits(lendgraphtest.DefaultOrg)

	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	var meta lendgraph.ResponseMeta
	r, err := c.Properties.Enrich(ctx, ids[0], nil, lendgraph.WithResponseInto(&meta))
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Credits(lendgraphtest.DefaultOrg); got != start-1 {
		t.Fatalf("balance %v, want %v: the lost attempt charged", got, start-1)
	}
	if r.Charged || !r.EarlierAttemptMayHaveCharged || !meta.EarlierAttemptOutcomeUnknown || meta.Attempts != 2 {
		t.Fatalf("repeat: charged %v, reason %s, EarlierAttemptMayHaveCharged %v, meta %+v", r.Charged, r.Reason, r.EarlierAttemptMayHaveCharged, meta)
	}

	// An answer that was not lost says nothing of the kind.
	r, err = c.Properties.Enrich(ctx, ids[1], nil)
	if err != nil || !r.Charged || r.EarlierAttemptMayHaveCharged {
		t.Fatalf("plain enrich: %+v, %v", r, err)
	}
	// A refused first attempt (429: nothing done) is no lost answer.
	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 429})
	r, err = c.Properties.Enrich(ctx, ids[1], nil)
	if err != nil || r.EarlierAttemptMayHaveCharged {
		t.Fatalf("after a 429: %+v, %v", r, err)
	}
}

// Every documented enrichment error can be reached in the fake, as
// lendgraphtest's docs say.
func TestPropertiesService_EnrichEveryDocumentedError(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(200))
	c, ctx := srv.Client(lendgraph.WithMaxRetries(0)), context.Background()
	ids := idsWith(t, srv, lendgraphtest.OutcomeMatch, 3)

	srv.ClearAddress(ids[0])
	if o := srv.EnrichOutcome(ids[0]); o != lendgraphtest.OutcomeNoAddress {
		t.Fatalf("EnrichOutcome = %s after ClearAddress", o)
	}
	start := srv.Credits(lendgraphtest.DefaultOrg)
	_, err := c.Properties.Enrich(ctx, ids[0], nil)
	if apiErr := wantStatus(t, err, 400); !strings.Contains(apiErr.Message, "no usable address") {
		t.Fatalf("400 message %q", apiErr.Message)
	}
	if srv.Credits(lendgraphtest.DefaultOrg) != start {
		t.Fatal("a property without an address was charged")
	}

	srv.FailEnrichment(1)
	_, err = c.Properties.Enrich(ctx, ids[1], nil)
	wantStatus(t, err, 502)

	_, err = c.Properties.Enrich(ctx, "prop-does-not-exist", nil)
	if !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}

	srv.SetCredits(lendgraphtest.DefaultOrg, 0)
	_, err = c.Properties.Enrich(ctx, ids[2], nil)
	var ic *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ic) || ic.Cost != 1 {
		t.Fatalf("402: %v", err)
	}
}
