package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// recObserver is a lendgraph.Observer that keeps everything it is told as
// text, and injects a "Traceparent" header naming the operation, the way a
// tracing adapter would.
type recObserver struct {
	mu   sync.Mutex
	ops  []*recOp
	logs []string
}

type recOp struct {
	r        *recObserver
	name     string
	parent   *recOp
	attempts []lendgraph.AttemptInfo
	results  []lendgraph.AttemptResult
	events   []lendgraph.Event
	sum      lendgraph.Summary
	err      error
	ended    int
}

type recOpKey struct{}

func (r *recObserver) StartOperation(ctx context.Context, name string) (context.Context, lendgraph.OperationObserver) {
	parent, _ := ctx.Value(recOpKey{}).(*recOp)
	op := &recOp{r: r, name: name, parent: parent}
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.logs = append(r.logs, "start "+name)
	r.mu.Unlock()
	return context.WithValue(ctx, recOpKey{}, op), op
}

func (o *recOp) StartAttempt(_ context.Context, a lendgraph.AttemptInfo) lendgraph.AttemptObserver {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.attempts = append(o.attempts, a)
	o.r.logs = append(o.r.logs, fmt.Sprintf("attempt %s %+v", o.name, a))
	return &recAttempt{op: o}
}

func (o *recOp) Event(e lendgraph.Event) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.events = append(o.events, e)
	o.r.logs = append(o.r.logs, fmt.Sprintf("event %s %+v", o.name, e))
}

func (o *recOp) End(s lendgraph.Summary, err error) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.sum, o.err = s, err
	o.ended++
	o.r.logs = append(o.r.logs, fmt.Sprintf("end %s %+v %v", o.name, s, err))
}

type recAttempt struct{ op *recOp }

func (a *recAttempt) Inject(h http.Header) { h.Set("Traceparent", "op="+a.op.name) }

func (a *recAttempt) End(r lendgraph.AttemptResult) {
	a.op.r.mu.Lock()
	defer a.op.r.mu.Unlock()
	a.op.results = append(a.op.results, r)
	a.op.r.logs = append(a.op.r.logs, fmt.Sprintf("attempt end %s %+v", a.op.name, r))
}

// text is everything the observer was told.
func (r *recObserver) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// op returns the operations named name.
func (r *recObserver) op(t *testing.T, name string) *recOp {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.ops {
		if o.name == name {
			return o
		}
	}
	var names []string
	for _, o := range r.ops {
		names = append(names, o.name)
	}
	t.Fatalf("no operation %q among %v", name, names)
	return nil
}

// check fails when an operation was not ended exactly once.
func (r *recObserver) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.ops {
		if o.ended != 1 {
			t.Errorf("operation %s ended %d times", o.name, o.ended)
		}
	}
}

func TestObserver_WaitAndDownload(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(40))
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 30})
	if err != nil {
		t.Fatal(err)
	}
	// A status poll answered 503 once: retried inside the Wait.
	srv.InjectFault(http.MethodGet, "/v1/agents/bulk-delivery/{id}", lendgraphtest.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"}})
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	polls := srv.CountRequests(http.MethodGet, "/v1/agents/bulk-delivery/{id}")
	srv.InjectFault(http.MethodGet, "/objects/{key...}", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	n, err := job.Download(ctx, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t)

	wait := rec.op(t, "DeliveryJob.Wait")
	if wait.sum.JobID != job.ID || wait.sum.JobStatus != "completed" {
		t.Errorf("wait summary %+v", wait.sum)
	}
	if wait.sum.CreditsKnown != (st.CreditsCharged != nil) || (st.CreditsCharged != nil && wait.sum.Credits != *st.CreditsCharged) {
		t.Errorf("wait credits %+v, status says %v", wait.sum, st.CreditsCharged)
	}
	var retried, resent bool
	for _, e := range wait.events {
		retried = retried || e.Kind == lendgraph.EventRetry && e.Reason == "status 503"
	}
	for _, a := range wait.attempts {
		resent = resent || a.ResendCount == 1
		if a.URLTemplate != "/v1/agents/bulk-delivery/{id}" || a.Target != lendgraph.TargetAPI {
			t.Errorf("poll attempt %+v", a)
		}
	}
	if !retried || !resent || wait.sum.Retries != 1 {
		t.Errorf("the 503 poll: retry event %v, resend count %v, summary %+v", retried, resent, wait.sum)
	}
	// The server counts the polls: every one is an attempt of the Wait.
	if wait.sum.Attempts != polls || wait.sum.Polls != polls-1 {
		t.Errorf("wait attempts %d polls %d; the server saw %d status requests (one answered 503)", wait.sum.Attempts, wait.sum.Polls, polls)
	}

	dl := rec.op(t, "DeliveryJob.Download")
	if dl.sum.Bytes != n || dl.sum.Resumptions != 1 || dl.sum.Connections != 1 || dl.sum.Ranges != 1 {
		t.Errorf("download summary %+v, %d bytes", dl.sum, n)
	}
	storage := 0
	for _, a := range dl.attempts {
		if a.Target == lendgraph.TargetStorage {
			storage++
			if a.URLTemplate != "" || a.Host == "" {
				t.Errorf("storage attempt %+v", a)
			}
		}
	}
	if got := srv.CountRequests(http.MethodGet, "/objects/{key...}"); storage != got {
		t.Errorf("%d storage attempts observed, the storage host saw %d", storage, got)
	}
	// Download waits for its job: a Wait of its own, inside it.
	inner := 0
	rec.mu.Lock()
	for _, o := range rec.ops {
		if o.name == "DeliveryJob.Wait" && o.parent == dl {
			inner++
		}
	}
	rec.mu.Unlock()
	if inner != 1 {
		t.Errorf("%d Waits inside the Download, want 1", inner)
	}
	// Trace context went to the API host only.
	for _, r := range srv.Requests() {
		tp := r.Header.Get("Traceparent")
		if (r.Listener == "api") != (tp != "") {
			t.Errorf("%s %s on %s: traceparent %q", r.Method, r.Path, r.Listener, tp)
		}
	}
}

func TestObserver_CancelledWait(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithJobRate("delivery", 1))
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec))
	job, err := c.Agents.Deliver(context.Background(), &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	_, err = job.Wait(ctx, lendgraph.WithPollInterval(10*time.Millisecond, 10*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	rec.check(t)
	w := rec.op(t, "DeliveryJob.Wait")
	if !errors.Is(w.err, context.DeadlineExceeded) || w.sum.Polls == 0 || w.sum.JobStatus == "completed" {
		t.Errorf("cancelled wait: %+v %v", w.sum, w.err)
	}
	// The deadline may cut a poll the server already received, or one
	// still on its way: answered polls <= requests seen <= attempts made.
	if got := srv.CountRequests(http.MethodGet, "/v1/agents/bulk-delivery/{id}"); w.sum.Polls > got || got > w.sum.Attempts {
		t.Errorf("%d polls answered and %d attempts observed; the server saw %d requests", w.sum.Polls, w.sum.Attempts, got)
	}
}

func TestObserver_IteratorCountsRowsAndPages(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithRows("agents", 45))
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec))
	n := 0
	for _, err := range c.Agents.All(context.Background(), &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	rec.check(t)
	all := rec.op(t, "Agents.All")
	pages := srv.CountRequests(http.MethodPost, "/v1/agents")
	if all.sum.Rows != int64(n) || all.sum.Pages != int64(pages) || len(all.attempts) != pages {
		t.Errorf("summary %+v, %d attempts; %d rows, the server answered %d pages", all.sum, len(all.attempts), n, pages)
	}
	if len(rec.ops) != 1 {
		t.Errorf("%d operations, want the range alone", len(rec.ops))
	}
}

func TestObserver_LostChargeIsUnknown(t *testing.T) {
	srv := lendgraphtest.NewServer(t)
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec), lendgraph.WithRetryBackoff(time.Millisecond, time.Millisecond))
	id := matchingProperty(t, srv)
	// The first attempt is served (and charged) but its answer is lost; the
	// repeat is a free cache hit.
	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	res, err := c.Properties.Enrich(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t)
	o := rec.op(t, "Properties.Enrich")
	if n := len(srv.Debits(srv.DefaultCaller().OrgID)); n == 0 || res.Charged {
		t.Fatalf("setup: %d debits, answer charged %v", n, res.Charged)
	}
	if !o.sum.OutcomeUnknown || o.sum.CreditsKnown {
		t.Errorf("a lost charged answer: summary %+v", o.sum)
	}

	// A plain charged call says what it charged.
	rec2 := &recObserver{}
	c2 := srv.Client(lendgraph.WithObserver(rec2))
	var id2 string
	for i := range srv.Dataset().Len("properties") {
		if p := srv.Dataset().ID("properties", i); p != id && srv.EnrichOutcome(p) == lendgraphtest.OutcomeMatch {
			id2 = p
			break
		}
	}
	if _, err := c2.Properties.Enrich(context.Background(), id2, nil); err != nil {
		t.Fatal(err)
	}
	o2 := rec2.op(t, "Properties.Enrich")
	if !o2.sum.CreditsKnown || o2.sum.Credits != 1 || o2.sum.OutcomeUnknown {
		t.Errorf("a charged call: summary %+v", o2.sum)
	}
}

func TestObserver_Invalid(t *testing.T) {
	if _, err := lendgraph.NewClient(lendgraph.WithObserver(nil)); err == nil {
		t.Fatal("WithObserver(nil) accepted")
	}
}

func TestObserver_URLTemplateHasNoID(t *testing.T) {
	srv := lendgraphtest.NewServer(t)
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec))
	id := srv.Dataset().ID("properties", 3)
	ctx := context.Background()
	_, _ = c.Properties.Get(ctx, id)
	_, _ = c.Properties.Related(ctx, id, lendgraph.RelatedLoans, 5)
	_, _ = c.SavedFilters.Delete(ctx, "sf_123")
	for _, o := range rec.ops {
		for _, a := range o.attempts {
			if strings.Contains(a.URLTemplate, id) || strings.Contains(a.URLTemplate, "sf_123") || !strings.Contains(a.URLTemplate, "{id}") {
				t.Errorf("%s: url.template %q", o.name, a.URLTemplate)
			}
		}
	}
	if !slices.ContainsFunc(rec.ops, func(o *recOp) bool { return o.name == "Properties.Related" }) {
		t.Error("Related not observed")
	}
}

// TestObserver_JobChargedOnce: a job is charged once, so its charge is
// reported once however many waits see it completed (Wait, then the waits
// inside Download and Rows, then a second handle's Wait); a newcomer saw
// the credits metric at three times the ledger's debit.
func TestObserver_JobChargedOnce(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(40))
	rec := &recObserver{}
	c := srv.Client(lendgraph.WithObserver(rec))
	ctx := context.Background()
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 30})
	if err != nil {
		t.Fatal(err)
	}
	st, err := job.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if st.CreditsCharged == nil || *st.CreditsCharged == 0 {
		t.Fatalf("the job's status says no charge: %+v", st)
	}
	if _, err := job.Download(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, err := range job.Rows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Agents.DeliveryJob(job.ID).Wait(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var reported float64
	waits := 0
	for _, op := range rec.ops {
		if op.name == "DeliveryJob.Wait" {
			waits++
		}
		if op.sum.CreditsKnown {
			reported += op.sum.Credits
		}
	}
	if waits < 3 {
		t.Fatalf("%d waits observed, want the Wait, the waits of Download and Rows and the second handle's", waits)
	}
	if reported != *st.CreditsCharged {
		t.Errorf("observer told of %v credits over %d waits; the job was charged %v once", reported, waits, *st.CreditsCharged)
	}
}

// unwatchedAttempts is a recObserver whose operations watch no attempt
// (StartAttempt returns nil).
type unwatchedAttempts struct{ recObserver }

type unwatchedOp struct{ *recOp }

func (u *unwatchedAttempts) StartOperation(ctx context.Context, name string) (context.Context, lendgraph.OperationObserver) {
	ctx, op := u.recObserver.StartOperation(ctx, name)
	return ctx, unwatchedOp{op.(*recOp)}
}

func (o unwatchedOp) StartAttempt(ctx context.Context, a lendgraph.AttemptInfo) lendgraph.AttemptObserver {
	o.recOp.StartAttempt(ctx, a)
	return nil
}

// TestObserver_AttemptNotWatched: an observer may watch an operation but
// none of its attempts (StartAttempt returns nil): a retried read, a
// paged listing and a download then work as without it, no attempt
// carries trace context, and the operation's summary still counts the
// attempts the server saw.
func TestObserver_AttemptNotWatched(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(40))
	obs := &unwatchedAttempts{}
	c := srv.Client(lendgraph.WithObserver(obs))
	ctx := context.Background()
	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Status: 503, Header: map[string]string{"Retry-After": "0"}})
	if _, err := c.Agents.Get(ctx, srv.Dataset().ID("agents", 1)); err != nil {
		t.Fatal(err)
	}
	for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 10}}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	job, err := c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Download(ctx, io.Discard, lendgraph.WithPollInterval(2*time.Millisecond, 5*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	obs.check(t)
	if got, want := obs.op(t, "Agents.Get").sum.Attempts, srv.CountRequests(http.MethodGet, "/v1/agents/{id}"); got != want || got != 2 {
		t.Errorf("Agents.Get: %d attempts counted, the server saw %d", got, want)
	}
	if got, want := obs.op(t, "Agents.All").sum.Attempts, srv.CountRequests(http.MethodPost, "/v1/agents"); got != want {
		t.Errorf("Agents.All: %d attempts counted, the server saw %d", got, want)
	}
	for _, r := range srv.Requests() {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			t.Errorf("%s %s carries traceparent %q", r.Method, r.Path, tp)
		}
	}
}

// unwatchedOps is an Observer that watches no operation: it counts the
// operations it is asked about and returns no OperationObserver.
type unwatchedOps struct{ asked atomic.Int64 }

func (u *unwatchedOps) StartOperation(ctx context.Context, _ string) (context.Context, lendgraph.OperationObserver) {
	u.asked.Add(1)
	return ctx, nil
}

// agentAnswer is a RoundTripper answering every request with one agent,
// without a network.
type agentAnswer struct{}

func (agentAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	const body = `{"id":"agt_1","fullName":"Jo Smith","city":"Austin","state":"TX"}`
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// TestObserver_UnwatchedCostsNothing: an operation its observer does not
// watch (StartOperation returns nil) allocates no more than a call
// of a client without observer.
func TestObserver_UnwatchedCostsNothing(t *testing.T) {
	newClient := func(opts ...lendgraph.Option) *lendgraph.Client {
		c, err := lendgraph.NewClient(append([]lendgraph.Option{lendgraph.WithAPIKey("lg_test_unwatched_0123456789"),
			lendgraph.WithBaseURL("http://api.invalid"), lendgraph.WithHTTPClient(&http.Client{Transport: agentAnswer{}})}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	obs := &unwatchedOps{}
	plain, unwatched := newClient(), newClient(lendgraph.WithObserver(obs))
	get := func(c *lendgraph.Client) func() {
		return func() {
			if _, err := c.Agents.Get(context.Background(), "agt_1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	const runs, rounds = 200, 3
	// The least of a few rounds: a collection empties the SDK's pools
	// (and the race detector drops pooled objects on purpose), which a
	// round can catch.
	without, with := math.Inf(1), math.Inf(1)
	for range rounds {
		without = min(without, testing.AllocsPerRun(runs, get(plain)))
		with = min(with, testing.AllocsPerRun(runs, get(unwatched)))
	}
	if raceEnabled {
		without += 4 // sync.Pool drops a quarter of its puts under -race
	}
	if with > without {
		t.Errorf("an unwatched Get allocates %v objects, a Get without observer %v", with, without)
	}
	if n := obs.asked.Load(); n != rounds*(runs+1) {
		t.Errorf("the observer was asked about %d operations, want %d", n, rounds*(runs+1))
	}
}
