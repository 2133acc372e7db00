package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// The fault matrix: every route class of the SDK against every fault a
// network, a proxy or the API can produce. Each case states how many
// attempts the client makes, how long the call may take, what error the
// caller gets, and how many ledger entries the fake records; the test
// holds each of them. Set LENDGRAPH_MATRIX_OUT=file to write the table
// RELIABILITY.md shows.

// matrixRetries is the client's WithMaxRetries in every case: a retried
// failure makes 1+matrixRetries attempts.
const matrixRetries = 2

// env is one case's fake API and client, and the objects its route needs.
type env struct {
	dialer
	srv     *lendgraphtest.Server
	c       *lendgraph.Client
	counter *attemptCounter
	tr      *http.Transport
	match   string                                  // a property whose enrichment is charged
	done    *lendgraph.DeliveryJob[lendgraph.Agent] // a completed delivery (poll, download)
	running *lendgraph.EnrichJob                    // a running enrichment job (cancel)
}

// route is one class of call.
type route struct {
	name    string
	method  string
	pattern string                             // path.Match pattern of the route's requests (faults and counting)
	reason  string                             // ledger reason of the route's charge, "" when free
	acts    bool                               // not repeated once the server may have acted: its errors say whether it may have (ErrOutcomeUnknown)
	host    func(*lendgraphtest.Server) string // the route's host; nil: the API
	opts    []lendgraphtest.Option
	setup   func(t *testing.T, e *env)
	do      func(ctx context.Context, e *env) error
}

var (
	routeGet = route{name: "read GET detail", method: "GET", pattern: "/v1/agents/agt_0000001",
		do: func(ctx context.Context, e *env) error { _, err := e.c.Agents.Get(ctx, "agt_0000001"); return err }}
	routeList = route{name: "read POST list", method: "POST", pattern: "/v1/agents",
		do: func(ctx context.Context, e *env) error { _, err := e.c.Agents.List(ctx, nil); return err }}
	// A single enrichment without refresh repeats as a free cache hit
	// (Enrichment rule 2): it is retried like a read. With refresh every
	// lookup is charged: it is not.
	routeEnrich = route{name: "enrich", method: "POST", pattern: "/v1/properties/*/enrich", reason: "enrich",
		setup: func(t *testing.T, e *env) { e.match = matchingProperty(t, e.srv) },
		do: func(ctx context.Context, e *env) error {
			r, err := e.c.Properties.Enrich(ctx, e.match, nil)
			if err == nil && len(r.Data.Persons) == 0 {
				return errors.New("the paid-for result was lost: no persons")
			}
			return err
		}}
	routeEnrichRefresh = route{name: "enrich refresh", method: "POST", pattern: "/v1/properties/*/enrich", reason: "enrich", acts: true,
		setup: func(t *testing.T, e *env) { e.match = matchingProperty(t, e.srv) },
		do: func(ctx context.Context, e *env) error {
			_, err := e.c.Properties.Enrich(ctx, e.match, &lendgraph.EnrichRequest{Refresh: true})
			return err
		}}
	routeEnrichBulk = route{name: "enrich-bulk", method: "POST", pattern: "/v1/properties/enrich-bulk", reason: "enrich-bulk", acts: true,
		setup: func(t *testing.T, e *env) { e.match = matchingProperty(t, e.srv) },
		do: func(ctx context.Context, e *env) error {
			_, err := e.c.Properties.EnrichBulk(ctx, []string{e.match}, nil)
			return err
		}}
	routeDeliver = route{name: "delivery submit", method: "POST", pattern: "/v1/agents/bulk-delivery", reason: "delivery", acts: true,
		do: func(ctx context.Context, e *env) error {
			_, err := e.c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 10})
			return err
		}}
	routePush = route{name: "CRM push", method: "POST", pattern: "/v1/integrations/crm/push", reason: "crm-push", acts: true,
		do: func(ctx context.Context, e *env) error {
			_, err := e.c.Integrations.PushCRM(ctx, &lendgraph.PushCRMRequest{Entity: lendgraph.CRMEntityAgent,
				Object: lendgraph.CRMObjectContact, IDs: []string{"agt_0000001"}})
			return err
		}}
	routePoll = route{name: "poll job status", method: "GET", pattern: "/v1/agents/bulk-delivery/*",
		setup: completedDelivery,
		do:    func(ctx context.Context, e *env) error { _, err := e.done.Status(ctx); return err }}
	routeCancel = route{name: "cancel job", method: "DELETE", pattern: "/v1/properties/enrich-bulk/*",
		opts: []lendgraphtest.Option{lendgraphtest.WithJobRate("enrichment", 1)},
		setup: func(t *testing.T, e *env) {
			var ids []string
			for i := range 20 {
				ids = append(ids, e.srv.Dataset().ID("properties", i))
			}
			j, err := e.c.Properties.EnrichBulk(context.Background(), ids, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.running = j
		},
		do: func(ctx context.Context, e *env) error { _, err := e.running.Cancel(ctx); return err }}
	routeDownload = route{name: "signed download", method: "GET", pattern: "/objects/*",
		host: (*lendgraphtest.Server).StorageURL, setup: completedDelivery,
		do: func(ctx context.Context, e *env) error {
			n, err := e.done.Download(ctx, io.Discard)
			if err == nil && n == 0 {
				return errors.New("empty download")
			}
			return err
		}}
)

var routeSearchHost = route{name: "search host", method: "POST", pattern: "/indexes/*/search",
	host: (*lendgraphtest.Server).SearchHostURL,
	do: func(ctx context.Context, e *env) error {
		_, err := e.c.Search.Host().Search(ctx, lendgraph.IndexAgents, &lendgraph.HostSearchRequest{Q: "jo"})
		return err
	}}

// hostOf is the base URL of the host r sends to.
func hostOf(e *env, r route) string {
	if r.host != nil {
		return r.host(e.srv)
	}
	return e.srv.URL
}

func completedDelivery(t *testing.T, e *env) {
	ctx := context.Background()
	j, err := e.c.Agents.Deliver(ctx, &lendgraph.DeliveryRequest{Format: lendgraph.FormatCSV, Limit: 200})
	if err == nil {
		_, err = j.Wait(ctx, lendgraph.WithPollInterval(5*time.Millisecond, 20*time.Millisecond))
	}
	if err != nil {
		t.Fatal(err)
	}
	e.done = j
}

// attemptCounter is the client's transport: it counts the requests sent
// for each method and path, retries included.
type attemptCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string // "METHOD /path"
}

func (a *attemptCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.seen = append(a.seen, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
	return a.next.RoundTrip(r)
}

func (a *attemptCounter) count(method, pattern string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.seen {
		m, p, _ := strings.Cut(s, " ")
		if ok, _ := path.Match(pattern, p); ok && m == method {
			n++
		}
	}
	return n
}

func (a *attemptCounter) reset() {
	a.mu.Lock()
	a.seen = nil
	a.mu.Unlock()
}

// outcome names the error a case expects.
type outcome string

const (
	wantOK        outcome = "success"
	wantAPI       outcome = "*APIError"       // with the status and the request id
	wantRateLimit outcome = "*RateLimitError" // with RetryAfter and the request id
	wantTransport outcome = "*TransportError"
	wantDecode    outcome = "*DecodeError" // with the request id
	wantDeadline  outcome = "context.DeadlineExceeded"
	wantDownload  outcome = "*DownloadError"
	wantSearch    outcome = "*SearchHostError" // with the status and the request id
)

// faultCase is one row of the matrix.
type faultCase struct {
	name  string
	route route
	// arm injects the fault once the route's setup is done.
	arm func(t *testing.T, e *env, r route)
	// client options beyond the matrix defaults.
	clientOpts []lendgraph.Option
	// ctxTimeout bounds the call (0: 20s, which no case should reach).
	ctxTimeout time.Duration

	attempts   int // requests the client sends on the route, retries included
	minElapsed time.Duration
	maxElapsed time.Duration // the call returns within this (0: 3s)
	want       outcome
	status     int           // the status an *APIError carries
	retryAfter time.Duration // the RetryAfter a *RateLimitError carries (-1: any)
	debits     int           // ledger entries of the route's reason (-1: at most one)
	// unknown: the error of a route that acts matches ErrOutcomeUnknown
	// (the request may have reached the server); otherwise it must not.
	unknown bool
}

func TestReliability_FaultMatrix(t *testing.T) {
	cases := append(matrixCases(), toxiCases()...)
	if len(cases) < 40 {
		t.Fatalf("%d cases, want at least 40", len(cases))
	}
	var mu sync.Mutex
	rows := map[string]string{}
	for _, fc := range cases {
		t.Run(fc.route.name+"/"+fc.name, func(t *testing.T) {
			t.Parallel()
			observed := runFaultCase(t, fc)
			mu.Lock()
			rows[fc.route.name+"/"+fc.name] = fmt.Sprintf("| %s | %s | %s | %s |", fc.route.name, fc.name, fc.expected(), observed)
			mu.Unlock()
		})
	}
	t.Cleanup(func() { writeMatrix(t, rows) })
}

// expected states the case's expectations in words.
func (fc faultCase) expected() string {
	s := fmt.Sprintf("%d attempt(s), %s", fc.attempts, fc.want)
	if fc.status != 0 {
		s += fmt.Sprintf(" %d", fc.status)
	}
	if fc.want == wantRateLimit && fc.retryAfter >= 0 {
		s += fmt.Sprintf(" (RetryAfter %s)", fc.retryAfter)
	}
	if fc.unknown {
		s += " + ErrOutcomeUnknown"
	}
	if fc.minElapsed > 0 {
		s += fmt.Sprintf(", waits >= %s", fc.minElapsed)
	}
	s += fmt.Sprintf(", returns within %s", fc.maxWait())
	if fc.route.reason != "" {
		switch fc.debits {
		case -1:
			s += ", at most 1 debit"
		default:
			s += fmt.Sprintf(", %d debit(s)", fc.debits)
		}
	}
	return s
}

func (fc faultCase) maxWait() time.Duration {
	if fc.maxElapsed > 0 {
		return fc.maxElapsed
	}
	if fc.ctxTimeout > 0 {
		return fc.ctxTimeout + 1500*time.Millisecond // slack for a loaded -race run
	}
	return 5 * time.Second
}

func writeMatrix(t *testing.T, rows map[string]string) {
	out := os.Getenv("LENDGRAPH_MATRIX_OUT")
	if out == "" || t.Failed() {
		return
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("| Route | Fault | Expected | Observed |\n|---|---|---|---|\n")
	for _, k := range keys {
		b.WriteString(rows[k] + "\n")
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}

// newEnv starts the case's fake and a client whose transport counts
// attempts and dials through dial (nil: directly).
func newEnv(t *testing.T, r route, opts ...lendgraph.Option) *env {
	srv := lendgraphtest.NewServer(t, append([]lendgraphtest.Option{lendgraphtest.WithDefaultRows(300)}, r.opts...)...)
	e := &env{srv: srv}
	e.tr = &http.Transport{DialContext: e.dial}
	t.Cleanup(e.tr.CloseIdleConnections)
	e.counter = &attemptCounter{next: e.tr}
	base := []lendgraph.Option{lendgraph.WithHTTPClient(&http.Client{Transport: e.counter}),
		lendgraph.WithMaxRetries(matrixRetries), lendgraph.WithRetryBackoff(time.Millisecond, 5*time.Millisecond)}
	e.c = srv.Client(append(base, opts...)...)
	if r.setup != nil {
		r.setup(t, e)
	}
	return e
}

func runFaultCase(t *testing.T, fc faultCase) string {
	e := newEnv(t, fc.route, fc.clientOpts...)
	return runOn(t, e, fc)
}

// runOn arms the fault, makes the call and checks every expectation,
// returning what was observed.
func runOn(t *testing.T, e *env, fc faultCase) string {
	t.Helper()
	r := fc.route
	org := lendgraphtest.DefaultOrg
	debitsBefore, _ := debits(e.srv, org, r.reason)
	if fc.arm != nil {
		fc.arm(t, e, r)
	}
	e.counter.reset()
	timeout := fc.ctxTimeout
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := r.do(ctx, e)
	elapsed := time.Since(start)
	cancel()

	attempts := e.counter.count(r.method, r.pattern)
	if r.reason != "" {
		settleJobs(e.srv)
	}
	debitsAfter, _ := debits(e.srv, org, r.reason)
	charged := debitsAfter - debitsBefore
	if r.reason == "" {
		charged = 0 // the route charges nothing
	}

	observed := fmt.Sprintf("%d attempt(s), %s, %s", attempts, describeErr(err), elapsed.Round(time.Millisecond))
	if r.reason != "" {
		observed += fmt.Sprintf(", %d debit(s)", charged)
	}
	t.Log(observed)

	if attempts != fc.attempts {
		t.Errorf("%d attempts, want %d", attempts, fc.attempts)
	}
	if elapsed < fc.minElapsed || elapsed > fc.maxWait() {
		t.Errorf("took %s, want between %s and %s", elapsed, fc.minElapsed, fc.maxWait())
	}
	if fc.debits >= 0 && charged != fc.debits && r.reason != "" {
		t.Errorf("%d debits, want %d", charged, fc.debits)
	}
	if charged > 1 {
		t.Errorf("%d debits for one intended action", charged)
	}
	checkOutcome(t, fc, err)
	if unknown := errors.Is(err, lendgraph.ErrOutcomeUnknown); err != nil && unknown != (fc.unknown && r.acts) {
		t.Errorf("errors.Is(err, ErrOutcomeUnknown) = %v, want %v: %v", unknown, fc.unknown && r.acts, err)
	}
	return observed
}

// settleJobs waits (briefly) for every job the fake started to end, so
// that charges made at completion are counted.
func settleJobs(srv *lendgraphtest.Server) {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		busy := false
		for _, j := range srv.Jobs() {
			busy = busy || j.State == "queued" || j.State == "running"
		}
		if !busy {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func describeErr(err error) string {
	if err == nil {
		return "success"
	}
	var (
		rl *lendgraph.RateLimitError
		ae *lendgraph.APIError
		de *lendgraph.DecodeError
		te *lendgraph.TransportError
		dl *lendgraph.DownloadError
	)
	var s string
	var se *lendgraph.SearchHostError
	switch {
	case errors.As(err, &se):
		s = fmt.Sprintf("*SearchHostError %d", se.StatusCode)
	case errors.As(err, &rl):
		s = fmt.Sprintf("*RateLimitError (RetryAfter %s)", rl.RetryAfter)
	case errors.As(err, &ae):
		s = fmt.Sprintf("*APIError %d", ae.StatusCode)
		if ae.Truncated {
			s += fmt.Sprintf(" (body cut at %d bytes)", len(ae.Body))
		}
	case errors.As(err, &dl):
		s = "*DownloadError"
	case errors.As(err, &de):
		s = "*DecodeError"
	case errors.As(err, &te):
		s = "*TransportError"
	default:
		s = fmt.Sprintf("%T", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s += " (context.DeadlineExceeded)"
	}
	if errors.Is(err, lendgraph.ErrOutcomeUnknown) {
		s += " + ErrOutcomeUnknown"
	}
	return s
}

func checkOutcome(t *testing.T, fc faultCase, err error) {
	t.Helper()
	if fc.want == wantOK {
		if err != nil {
			t.Errorf("err = %v, want success", err)
		}
		return
	}
	if err == nil {
		t.Errorf("no error, want %s", fc.want)
		return
	}
	var (
		rl *lendgraph.RateLimitError
		ae *lendgraph.APIError
		de *lendgraph.DecodeError
		te *lendgraph.TransportError
		dl *lendgraph.DownloadError
	)
	switch fc.want {
	case wantRateLimit:
		if !errors.As(err, &rl) || !errors.Is(err, lendgraph.ErrRateLimited) {
			t.Errorf("err = %v, want *RateLimitError", err)
		} else if fc.retryAfter >= 0 && rl.RetryAfter != fc.retryAfter {
			t.Errorf("RetryAfter %s, want %s", rl.RetryAfter, fc.retryAfter)
		} else if rl.RequestID == "" {
			t.Errorf("no request id in %v", err)
		}
	case wantAPI:
		if !errors.As(err, &ae) || ae.StatusCode != fc.status {
			t.Errorf("err = %v, want *APIError %d", err, fc.status)
		} else if ae.RequestID == "" || !strings.Contains(err.Error(), ae.RequestID) {
			t.Errorf("no request id in %v", err)
		}
	case wantDecode:
		if !errors.As(err, &de) {
			t.Errorf("err = %v, want *DecodeError", err)
		} else if de.RequestID == "" {
			t.Errorf("no request id in %v", err)
		}
	case wantTransport:
		if !errors.As(err, &te) {
			t.Errorf("err = %v, want *TransportError", err)
		}
	case wantDeadline:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want context.DeadlineExceeded", err)
		}
	case wantDownload:
		if !errors.As(err, &dl) {
			t.Errorf("err = %v, want *DownloadError", err)
		}
	case wantSearch:
		var se *lendgraph.SearchHostError
		if !errors.As(err, &se) || se.StatusCode != fc.status {
			t.Errorf("err = %v, want *SearchHostError %d", err, fc.status)
		} else if se.RequestID == "" {
			t.Errorf("no request id in %+v", se.APIError)
		}
	}
}

// --- faults ---

func inject(f lendgraphtest.Fault) func(*testing.T, *env, route) {
	return func(t *testing.T, e *env, r route) { e.srv.InjectFault(r.method, r.pattern, f) }
}

func status(code, times int, header map[string]string, body string) func(*testing.T, *env, route) {
	if body == "" {
		body = fmt.Sprintf(`{"error":"injected %d"}`, code)
	}
	return inject(lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: code, Header: header, Body: body, Times: times})
}

func retryAfter(v string) map[string]string {
	if v == "" {
		return nil
	}
	return map[string]string{"Retry-After": v}
}

// refused makes every connection to the route's host fail: nothing listens.
func refused(t *testing.T, e *env, r route) {
	e.divert(hostOf(e, r), closedAddr(t))
	e.tr.CloseIdleConnections()
}

const (
	htmlPage = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>"
	every    = -1
)

var (
	dropBefore = inject(lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse, Times: every})
	dropMid    = inject(lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	dropMidAll = inject(lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: every})
	stall      = inject(lendgraphtest.Fault{Kind: lendgraphtest.Stall, Delay: time.Hour})
	trickle    = inject(lendgraphtest.Fault{Kind: lendgraphtest.Trickle, Delay: time.Second})
)

func httpDate(d time.Duration) string { return time.Now().Add(d).UTC().Format(http.TimeFormat) }

const short = 300 * time.Millisecond // the context deadline of the stall and trickle cases

// matrixCases is the table. Every expectation is stated per case.
func matrixCases() []faultCase {
	var cs []faultCase
	add := func(r route, name string, arm func(*testing.T, *env, route), fc faultCase) {
		fc.route, fc.name, fc.arm = r, name, arm
		cs = append(cs, fc)
	}
	n := matrixRetries + 1 // attempts of a failure that is retried to the end

	// Reads: retried on 429, 5xx, resets and cut bodies.
	for _, r := range []route{routeGet, routeList} {
		add(r, "429 Retry-After 1s", status(429, 1, retryAfter("1"), ""), faultCase{attempts: 2, want: wantOK, minElapsed: 900 * time.Millisecond})
		add(r, "429 Retry-After HTTP date", status(429, 1, retryAfter(httpDate(time.Second)), ""), faultCase{attempts: 2, want: wantOK})
		add(r, "429 no Retry-After", status(429, every, nil, ""), faultCase{attempts: n, want: wantRateLimit})
		add(r, "429 Retry-After 86400", status(429, every, retryAfter("86400"), ""), faultCase{attempts: 1, want: wantRateLimit, retryAfter: 24 * time.Hour, maxElapsed: 2 * time.Second})
		add(r, "429 Retry-After NaN", status(429, every, retryAfter("NaN"), ""), faultCase{attempts: n, want: wantRateLimit})
		add(r, "429 Retry-After -1", status(429, every, retryAfter("-1"), ""), faultCase{attempts: n, want: wantRateLimit})
		for _, code := range []int{500, 502, 503, 504} {
			add(r, fmt.Sprint(code), status(code, every, nil, ""), faultCase{attempts: n, want: wantAPI, status: code})
		}
		add(r, "503 twice then success", status(503, 2, nil, ""), faultCase{attempts: 3, want: wantOK})
		add(r, "connection refused", refused, faultCase{attempts: n, want: wantTransport})
		add(r, "reset before the response", dropBefore, faultCase{attempts: n, want: wantTransport})
		add(r, "reset mid-body once", dropMid, faultCase{attempts: 2, want: wantOK})
		add(r, "reset mid-body always", dropMidAll, faultCase{attempts: n, want: wantDecode})
		add(r, "headers never come", stall, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
		add(r, "body trickles 1 byte/s", trickle, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
		add(r, "HTML page with 200", status(200, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: 1, want: wantDecode})
		add(r, "HTML page with 502", status(502, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: n, want: wantAPI, status: 502})
		add(r, "1 GB error body", inject(lendgraphtest.Fault{Status: 500, Body: `{"error":"pad`, Stream: 1 << 30, Times: every}), faultCase{attempts: n, want: wantAPI, status: 500})
		add(r, "never-ending error body", inject(lendgraphtest.Fault{Status: 400, Body: "<html>", Stream: -1, Times: every}), faultCase{attempts: 1, want: wantAPI, status: 400})
	}
	add(routeList, "truncated JSON", status(200, every, map[string]string{"Content-Type": "application/json"}, `{"data":[{"id":"agt_1"`), faultCase{attempts: n, want: wantDecode})
	add(routeGet, "wrong content type, JSON body", status(200, every, map[string]string{"Content-Type": "text/plain"}, `{"id":"agt_0000001"}`), faultCase{attempts: 1, want: wantOK})
	add(routeGet, "XML body", status(200, every, map[string]string{"Content-Type": "application/xml"}, `<?xml version="1.0"?><Error/>`), faultCase{attempts: 1, want: wantDecode})

	// Credit-debiting calls: retried only when the server certainly did not
	// act; an error once it may have matches ErrOutcomeUnknown.
	for _, r := range []route{routeEnrichRefresh, routeEnrichBulk, routeDeliver, routePush} {
		add(r, "success", nil, faultCase{attempts: 1, want: wantOK, debits: 1})
		add(r, "429 no Retry-After once", status(429, 1, nil, ""), faultCase{attempts: 2, want: wantOK, debits: 1})
		add(r, "429 Retry-After 86400", status(429, every, retryAfter("86400"), ""), faultCase{attempts: 1, want: wantRateLimit, retryAfter: 24 * time.Hour, maxElapsed: 2 * time.Second})
		for _, code := range []int{500, 503, 504} {
			add(r, fmt.Sprint(code), status(code, every, nil, ""), faultCase{attempts: 1, want: wantAPI, status: code, unknown: true})
		}
		add(r, "connection refused", refused, faultCase{attempts: n, want: wantTransport})
		add(r, "reset before the response", dropBefore, faultCase{attempts: 1, want: wantTransport, unknown: true})
		add(r, "reset mid-body (server acted)", dropMid, faultCase{attempts: 1, want: wantDecode, debits: 1, unknown: true})
		add(r, "headers never come", stall, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short, unknown: true})
		add(r, "body trickles (server acted)", trickle, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short, debits: 1, unknown: true})
		launch := r.name == routeDeliver.name // a 502 is "failed to launch": retried, and nothing happened
		add(r, "HTML page with 502", status(502, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: map[bool]int{true: n, false: 1}[launch], want: wantAPI, status: 502, unknown: !launch})
	}
	add(routeDeliver, "502 once (failed to launch: safe to retry)", status(502, 1, nil, `{"error":"job failed to launch"}`), faultCase{attempts: 2, want: wantOK, debits: 1})
	add(routeEnrichRefresh, "502 (provider error)", status(502, every, nil, `{"error":"enrichment provider error"}`), faultCase{attempts: 1, want: wantAPI, status: 502, unknown: true})

	// A single enrichment without refresh: retried like a read, since the
	// repeat of a lookup that was charged is a free cache hit; the result
	// paid for is not lost.
	re := routeEnrich
	add(re, "success", nil, faultCase{attempts: 1, want: wantOK, debits: 1})
	for _, code := range []int{500, 502, 503, 504} {
		add(re, fmt.Sprint(code), status(code, every, nil, ""), faultCase{attempts: n, want: wantAPI, status: code, debits: 0})
	}
	add(re, "503 twice then success", status(503, 2, nil, ""), faultCase{attempts: 3, want: wantOK, debits: 1})
	add(re, "reset before the response", dropBefore, faultCase{attempts: n, want: wantTransport, debits: 0})
	add(re, "reset mid-body once (server acted)", dropMid, faultCase{attempts: 2, want: wantOK, debits: 1})
	add(re, "reset mid-body always (server acted)", dropMidAll, faultCase{attempts: n, want: wantDecode, debits: 1})
	add(re, "connection refused", refused, faultCase{attempts: n, want: wantTransport, debits: 0})

	// Polls and cancels repeat safely.
	for _, r := range []route{routePoll, routeCancel} {
		add(r, "503 twice then success", status(503, 2, nil, ""), faultCase{attempts: 3, want: wantOK})
		add(r, "429 no Retry-After", status(429, every, nil, ""), faultCase{attempts: n, want: wantRateLimit})
		add(r, "reset before the response", dropBefore, faultCase{attempts: n, want: wantTransport})
		add(r, "HTML page with 502", status(502, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: n, want: wantAPI, status: 502})
		add(r, "headers never come", stall, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
		add(r, "connection refused", refused, faultCase{attempts: n, want: wantTransport})
	}
	add(routePoll, "reset mid-body once", dropMid, faultCase{attempts: 2, want: wantOK})
	add(routeCancel, "reset mid-body once (server acted)", dropMid, faultCase{attempts: 2, want: wantOK})

	// Signed downloads: the downloader resumes and re-signs; a failure
	// that persists ends after 5 attempts without a new byte, each retried
	// by the pipeline.
	stalls := 5 * n
	add(routeDownload, "503 twice then success", status(503, 2, nil, ""), faultCase{attempts: 3, want: wantOK})
	add(routeDownload, "500 always", status(500, every, nil, ""), faultCase{attempts: stalls, want: wantDownload})
	add(routeDownload, "reset mid-body 3 times", inject(lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody, Times: 3}), faultCase{attempts: 4, want: wantOK})
	add(routeDownload, "reset before the response once", inject(lendgraphtest.Fault{Kind: lendgraphtest.DropBeforeResponse}), faultCase{attempts: 2, want: wantOK})
	add(routeDownload, "403 expired link once (re-signed)", status(403, 1, nil, "<Error><Code>AccessDenied</Code></Error>"), faultCase{attempts: 2, want: wantOK})
	add(routeDownload, "404 gone", status(404, every, nil, "<Error><Code>NoSuchKey</Code></Error>"), faultCase{attempts: 1, want: wantDownload})
	add(routeDownload, "headers never come", stall, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeDownload, "body trickles 1 byte/s", trickle, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeDownload, "connection refused", refused, faultCase{attempts: stalls, want: wantDownload})

	// The search host: reads, retried like any read; a refused token is
	// renewed once.
	sh := routeSearchHost
	add(sh, "503 twice then success", status(503, 2, nil, ""), faultCase{attempts: 3, want: wantOK})
	add(sh, "500 always", status(500, every, nil, `{"message":"boom","code":"internal"}`), faultCase{attempts: n, want: wantSearch, status: 500})
	add(sh, "429 no Retry-After", status(429, every, nil, ""), faultCase{attempts: n, want: wantSearch, status: 429})
	add(sh, "401 once (token renewed)", status(401, 1, nil, `{"message":"expired","code":"invalid_api_key"}`), faultCase{attempts: 2, want: wantOK})
	add(sh, "reset before the response", dropBefore, faultCase{attempts: n, want: wantTransport})
	add(sh, "reset mid-body once", dropMid, faultCase{attempts: 2, want: wantOK})
	add(sh, "reset mid-body always", dropMidAll, faultCase{attempts: n, want: wantDecode})
	add(sh, "connection refused", refused, faultCase{attempts: n, want: wantTransport})
	add(sh, "headers never come", stall, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(sh, "body trickles 1 byte/s", trickle, faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(sh, "HTML page with 200", status(200, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: 1, want: wantDecode})
	add(sh, "HTML page with 502", status(502, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: n, want: wantSearch, status: 502})
	add(sh, "1 GB error body", inject(lendgraphtest.Fault{Status: 500, Body: `{"message":"pad`, Stream: 1 << 30, Times: every}), faultCase{attempts: n, want: wantSearch, status: 500})
	if !raceEnabled { // reads 64 MiB: minutes under the race detector on a loaded machine
		add(sh, "never-ending 200 body", inject(lendgraphtest.Fault{Status: 200, Body: " ", Stream: -1, Times: every}), faultCase{attempts: 1, want: wantDecode, maxElapsed: 20 * time.Second})
	}

	add(routeDownload, "HTML page with 200 (captive portal)", status(200, every, map[string]string{"Content-Type": "text/html"}, htmlPage), faultCase{attempts: 1, want: wantDownload})
	add(routeDownload, "429 Retry-After 1s", status(429, 1, retryAfter("1"), ""), faultCase{attempts: 2, want: wantOK, minElapsed: 900 * time.Millisecond})
	return cs
}

// --- the same matrix through a real fault proxy (a toxiproxy-server process) ---

// toxic returns an arm function that puts a Toxiproxy proxy with one toxic
// between the client and the route's host (the API or the storage host).
func toxic(kind, stream string, attrs map[string]any) func(*testing.T, *env, route) {
	return func(t *testing.T, e *env, r route) {
		upstream := hostOf(e, r)
		host := strings.TrimPrefix(upstream, "http://")
		p, err := toxiServer(t).NewProxy(fmt.Sprintf("p%d", toxiProxies.Add(1)), host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// Close the client's side first: a link whose peer is gone
			// ends; one stopped under a live connection can block.
			e.tr.CloseIdleConnections()
			if err := p.Delete(); err != nil {
				t.Error(err)
			}
		})
		if err := p.AddToxic(kind, stream, attrs); err != nil {
			t.Fatal(err)
		}
		e.divert(upstream, p.Listen)
		e.tr.CloseIdleConnections()
	}
}

func toxiCases() []faultCase {
	var cs []faultCase
	add := func(r route, name string, arm func(*testing.T, *env, route), fc faultCase) {
		fc.route, fc.name, fc.arm = r, "toxiproxy "+name, arm
		cs = append(cs, fc)
	}
	n := matrixRetries + 1
	down := "downstream"
	resetPeer := toxic("reset_peer", down, map[string]any{"timeout": 0})
	add(routeGet, "reset_peer", resetPeer, faultCase{attempts: n, want: wantTransport})
	add(routeEnrich, "reset_peer (server acted; repeats are cache hits)", resetPeer, faultCase{attempts: n, want: wantTransport, debits: 1})
	add(routeEnrichRefresh, "reset_peer (server acted)", resetPeer, faultCase{attempts: 1, want: wantTransport, debits: 1, unknown: true})
	add(routeDeliver, "reset_peer (server acted)", resetPeer, faultCase{attempts: 1, want: wantTransport, debits: 1, unknown: true})
	limit := toxic("limit_data", down, map[string]any{"bytes": 400})
	add(routeList, "limit_data 400 bytes", limit, faultCase{attempts: n, want: wantDecode})
	add(routePush, "limit_data 400 bytes (server acted)", toxic("limit_data", down, map[string]any{"bytes": 250}), faultCase{attempts: 1, want: wantDecode, debits: 1, unknown: true})
	add(routeDownload, "limit_data 4 KB a connection (resumes)", toxic("limit_data", down, map[string]any{"bytes": 4096}), faultCase{attempts: 14, want: wantOK})
	add(routeGet, "latency 1s, deadline 300ms", toxic("latency", down, map[string]any{"latency": 1000}), faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeList, "latency 20ms", toxic("latency", down, map[string]any{"latency": 20, "jitter": 5}), faultCase{attempts: 1, want: wantOK})
	add(routeEnrichRefresh, "latency 20ms", toxic("latency", "upstream", map[string]any{"latency": 20}), faultCase{attempts: 1, want: wantOK, debits: 1})
	slicer := toxic("slicer", down, map[string]any{"average_size": 7, "size_variation": 5, "delay": 10})
	add(routeList, "slicer 7-byte writes", slicer, faultCase{attempts: 1, want: wantOK})
	add(routeDownload, "slicer 7-byte writes", toxic("slicer", down, map[string]any{"average_size": 512, "size_variation": 256, "delay": 10}), faultCase{attempts: 1, want: wantOK})
	add(routePoll, "timeout 0 (data never comes)", toxic("timeout", down, map[string]any{"timeout": 0}), faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeGet, "timeout 50ms (closed without data)", toxic("timeout", down, map[string]any{"timeout": 50}), faultCase{attempts: n, want: wantTransport})
	add(routeEnrichBulk, "timeout 50ms (closed without data)", toxic("timeout", down, map[string]any{"timeout": 50}), faultCase{attempts: 1, want: wantTransport, debits: -1, unknown: true})
	add(routeDownload, "bandwidth 16 KB/s, deadline 300ms", toxic("bandwidth", down, map[string]any{"rate": 16}), faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeSearchHost, "latency 20ms", toxic("latency", down, map[string]any{"latency": 20}), faultCase{attempts: 1, want: wantOK})
	add(routeSearchHost, "slicer 7-byte writes", slicer, faultCase{attempts: 1, want: wantOK})
	add(routeSearchHost, "reset_peer", resetPeer, faultCase{attempts: n, want: wantTransport})
	add(routeSearchHost, "timeout 0 (data never comes)", toxic("timeout", down, map[string]any{"timeout": 0}), faultCase{attempts: 1, want: wantDeadline, ctxTimeout: short})
	add(routeList, "bandwidth 1 MB/s", toxic("bandwidth", down, map[string]any{"rate": 1024}), faultCase{attempts: 1, want: wantOK})
	return cs
}
