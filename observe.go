package lendgraph

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Observer watches what a client does, for tracing and metrics
// (WithObserver). The SDK calls it; it never calls the SDK. The package
// github.com/lendgraph/lendgraph-go/otel implements it with OpenTelemetry,
// so that a program importing only this package links no telemetry library
// (the shape of aws-sdk-go-v2's smithy tracing interfaces and of
// azure-sdk-for-go's azotel).
//
// An operation is one method call the caller made ("Agents.List",
// "DeliveryJob.Wait", "Agents.All" for a whole range over an iterator);
// under it come its HTTP attempts (every retry, poll, page and download
// range) and its events (a retry, a wait). A method that calls another
// method the caller could call (Download waiting for its job) opens the
// inner one as an operation of its own inside the outer one. The SDK calls
// an Observer from many goroutines at once (a parallel download's ranges,
// concurrent calls on one client): implementations must be safe for
// concurrent use.
type Observer interface {
	// StartOperation begins the operation called name. The SDK uses the
	// returned context for the operation's requests (so a span in it
	// becomes their parent) and calls End on the returned scope exactly
	// once. For an operation it does not watch (nothing would record it,
	// no trace context is to be passed on) it may return a nil
	// OperationObserver: the SDK then tells it nothing more of the
	// operation and does no work for it.
	StartOperation(ctx context.Context, name string) (context.Context, OperationObserver)
}

// OperationObserver is one operation being watched (see Observer).
type OperationObserver interface {
	// StartAttempt begins one HTTP attempt of the operation; ctx is the
	// operation's. The SDK calls End on the returned scope exactly once,
	// when the response body is closed or the attempt failed. It may
	// return nil to watch nothing of the attempt: the SDK then neither
	// injects trace context into it nor reports its end.
	StartAttempt(ctx context.Context, a AttemptInfo) AttemptObserver
	// Event records something that happened during the operation.
	Event(e Event)
	// End ends the operation: err is what the method returned (nil on
	// success), s what the SDK counted along the way.
	End(s Summary, err error)
}

// AttemptObserver is one HTTP attempt being watched.
type AttemptObserver interface {
	// Inject writes trace-context headers (W3C traceparent) into the
	// attempt's request headers. The SDK calls it only for attempts to the
	// API host and the search host (AttemptInfo.Target), never for a
	// signed storage link or a host a redirect leads to.
	Inject(h http.Header)
	// End ends the attempt.
	End(r AttemptResult)
}

// Target is the kind of host an attempt goes to.
type Target int

// Targets of an attempt.
const (
	// TargetAPI is the API host, which receives the API key.
	TargetAPI Target = iota + 1
	// TargetSearchHost is the search host a search token names.
	TargetSearchHost
	// TargetStorage is a signed download link's storage host.
	TargetStorage
	// TargetOther is another host a redirect led to.
	TargetOther
)

// String names the target ("api", "search", "storage", "other").
func (t Target) String() string {
	switch t {
	case TargetAPI:
		return "api"
	case TargetSearchHost:
		return "search"
	case TargetStorage:
		return "storage"
	case TargetOther:
		return "other"
	}
	return "unknown"
}

// AttemptInfo describes an HTTP attempt as it starts. It never holds a
// credential: no header, no query string, no id (ids in the path are
// templated as {id}).
type AttemptInfo struct {
	Target Target
	// Method is the HTTP method (http.request.method).
	Method string
	// Host and Port are the server's (server.address, server.port).
	Host string
	Port int
	// URLTemplate is the path with every id replaced by {id}
	// ("/v1/agents/{id}"); empty for a storage link (url.template).
	URLTemplate string
	// ResendCount is how many attempts of the same request came before
	// this one (http.request.resend_count); a redirect is not a resend.
	ResendCount int
	// Range is the byte range a download attempt asks for ("bytes=0-4194303"),
	// empty when it asks for the whole object.
	Range string
}

// AttemptResult is how an attempt ended.
type AttemptResult struct {
	// StatusCode is the response's status (0 when none came).
	StatusCode int
	// ErrorType classifies a failed attempt (error.type): the status code
	// for a status of 400 and above, otherwise "timeout", "canceled",
	// "connection_refused", "connection_reset", "dns", "tls" or "_OTHER";
	// empty for a success.
	ErrorType string
	// Bytes is how many body bytes were read.
	Bytes int64
}

// EventKind is the kind of an Event.
type EventKind int

// Event kinds.
const (
	// EventRetry: the SDK repeats a request; Reason says why (the status
	// code, or the error type of the failed attempt), Wait how long it
	// waited first.
	EventRetry EventKind = iota + 1
	// EventRateLimiterWait: an attempt waited Wait for the client's rate
	// limiter (WithRateLimit). Waits under a millisecond are not reported.
	EventRateLimiterWait
	// EventServerWait: the SDK waits Wait because the server asked
	// (Retry-After on a retried answer, a throttled job poll); Reason says
	// which ("retry-after", "poll throttled").
	EventServerWait
	// EventResume: a download resumes from byte Offset after an attempt
	// ended early.
	EventResume
	// EventLinkResigned: a download fetched a freshly signed link.
	EventLinkResigned
)

// Event is something that happened during an operation.
type Event struct {
	Kind   EventKind
	Reason string
	Wait   time.Duration
	Offset int64
}

// Summary is what the SDK counted during one operation. Fields that do not
// apply to the operation stay zero.
type Summary struct {
	// Attempts is the HTTP attempts made, retries, polls, pages and
	// download ranges included; Retries the ones that repeated a request.
	Attempts, Retries int
	// JobID, Polls and JobStatus describe a job's Wait: the job, the status
	// fetches made and the last status seen.
	JobID     string
	Polls     int
	JobStatus string
	// Pages and Rows count what an iterator (All, Rows, ResultRows)
	// fetched and yielded.
	Pages, Rows int64
	// Bytes is what a download wrote; Ranges the ranged requests it made,
	// Connections the connections it used at most at once, Resumptions
	// the requests that continued after an attempt ended early, and
	// LinksResigned the freshly signed links it fetched.
	Bytes         int64
	Ranges        int
	Connections   int
	Resumptions   int
	LinksResigned int
	// Credits is what the answer says was charged, when CreditsKnown.
	Credits      float64
	CreditsKnown bool
	// OutcomeUnknown reports a call that charges or acts whose outcome is
	// unknown: it failed matching ErrOutcomeUnknown, or an attempt's answer
	// was lost before the one that answered, which then need not say what
	// the lost one charged.
	OutcomeUnknown bool
	// RetryBudgetExhausted reports a request that was not retried because
	// the client's retry budget was spent (ErrRetryBudgetExhausted).
	RetryBudgetExhausted bool
}

// opState is one observed operation: its scope and its counters.
type opState struct {
	client *Client
	obs    OperationObserver
	mu     sync.Mutex
	sum    Summary
	lost   bool // an attempt's answer was lost before another attempt
	ended  bool
	paged  bool // an iterator over pages: each successful request is a page
}

// startOp begins the operation name when the client has an observer,
// returning nil otherwise (every method of *opState is a no-op on nil).
// It opens a new operation, inside the one ctx carries if any (the
// observer's span in ctx becomes its parent), its state kept in st.
func (c *Client) startOp(ctx context.Context, name string, st *opState) (context.Context, *opState) {
	if c.observer == nil {
		return ctx, nil
	}
	ctx, obs := c.observer.StartOperation(ctx, name)
	if obs == nil {
		return ctx, nil
	}
	st.client, st.obs = c, obs
	return ctx, st
}

// end ends the operation with err.
func (o *opState) end(err error) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.ended {
		o.mu.Unlock()
		return
	}
	o.ended = true
	s := o.sum
	if errors.Is(err, ErrOutcomeUnknown) || (o.lost && s.CreditsKnown) {
		s.OutcomeUnknown = true
		s.Credits, s.CreditsKnown = 0, false
	}
	o.mu.Unlock()
	o.obs.End(s, err)
}

// update changes the summary under the lock.
func (o *opState) update(fn func(*Summary)) {
	if o == nil {
		return
	}
	o.mu.Lock()
	fn(&o.sum)
	o.mu.Unlock()
}

// event reports e.
func (o *opState) event(e Event) {
	if o != nil {
		o.obs.Event(e)
	}
}

// page records a request that succeeded, a page in a paged list.
func (o *opState) page() {
	if o != nil && o.paged {
		o.update(func(s *Summary) { s.Pages++ })
	}
}

// pagedList marks the operation as a range over pages: each successful
// request counts a page.
func (o *opState) pagedList() {
	if o != nil {
		o.paged = true
	}
}

// charged records the credits an answer says were charged.
func (o *opState) charged(credits float64) {
	o.update(func(s *Summary) { s.Credits, s.CreditsKnown = credits, true })
}

// chargedMore adds credits an answer says were charged to what the
// operation's earlier requests charged (a batched push).
func (o *opState) chargedMore(credits float64) {
	o.update(func(s *Summary) { s.Credits += credits; s.CreditsKnown = true })
}

// connections records the connections a download uses at once.
func (o *opState) connections(n int) {
	o.update(func(s *Summary) { s.Connections = max(s.Connections, n) })
}

// resigned records a freshly signed link.
func (o *opState) resigned() {
	o.update(func(s *Summary) { s.LinksResigned++ })
	o.event(Event{Kind: EventLinkResigned})
}

// resumed records a download continuing from byte off.
func (o *opState) resumed(off int64) {
	o.update(func(s *Summary) { s.Resumptions++ })
	o.event(Event{Kind: EventResume, Offset: off})
}

// polled records a job status fetch.
func (o *opState) polled(id string, state JobState) {
	o.update(func(s *Summary) { s.JobID, s.JobStatus = id, string(state); s.Polls++ })
}

// markLost records that an attempt's answer was lost before the one that
// answered (see Summary.OutcomeUnknown).
func (o *opState) markLost() {
	if o != nil {
		o.mu.Lock()
		o.lost = true
		o.mu.Unlock()
	}
}

// staticSegments are the path segments of the SDK's requests that are not
// ids: urlTemplate keeps them and replaces every other segment with {id}.
var staticSegments = map[string]bool{}

func init() {
	for _, s := range strings.Fields(`v1 agents originators companies loans properties branches sales market
		analytics summary time-series chart bulk-delivery enrich enrich-bulk enrichments count related
		crm activity calls transcript lender-channels meetings org-members record-shares records delete tasks workspace
		instant-search integrations push status lenders locations retrieve suggest movement most-gained
		saved-filters search-token title-companies breakdowns indexes search multi-search`) {
		staticSegments[s] = true
	}
}

// urlTemplate is prefix followed by path (escaped, without a query), every
// segment of path that is not one of the SDK's fixed words replaced by
// {id}: an id never reaches a span or a metric.
func urlTemplate(prefix, path string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(path) + 8)
	b.WriteString(prefix)
	for {
		seg, rest, more := strings.Cut(path, "/")
		if seg != "" && !staticSegments[seg] {
			seg = "{id}"
		}
		b.WriteString(seg)
		if !more {
			return b.String()
		}
		b.WriteByte('/')
		path = rest
	}
}

// startAttempt tells the observer that a hop of l's current attempt
// begins, and injects trace context into req when it goes to the API host
// or the search host (never a storage link or a host a redirect led to).
// It returns nil when the operation is not observed or its observer
// watches no attempt of it.
func (o *opState) startAttempt(ctx context.Context, l *attemptLoop, req *http.Request, hop Target) *observedBody {
	if o == nil {
		return nil
	}
	info := AttemptInfo{Target: hop, Method: req.Method, Host: req.URL.Hostname(), Port: portOf(req.URL),
		Range: req.Header.Get("Range")}
	if req.Response == nil {
		info.ResendCount = max(l.n-1, 0) // a redirect is not a resend
	}
	if hop == TargetAPI || hop == TargetSearchHost {
		if l.template == "" { // the same for every attempt of the request
			base := o.client.base
			if l.r.host != nil {
				base = l.r.host
			}
			l.template = urlTemplate(strings.TrimRight(base.EscapedPath(), "/"), l.r.path)
		}
		info.URLTemplate = l.template
	}
	o.update(func(s *Summary) { s.Attempts++ })
	att := o.obs.StartAttempt(ctx, info)
	if att == nil {
		return nil
	}
	if hop == TargetAPI || hop == TargetSearchHost {
		att.Inject(req.Header)
	}
	return &observedBody{att: att}
}

// end wraps the hop's outcome: the attempt ends when the answer's body is
// closed, or at once when no answer came.
func (b *observedBody) end(resp *http.Response, err error) (*http.Response, error) {
	if b == nil {
		return resp, err
	}
	if err != nil {
		b.res.ErrorType = errorType(err)
		b.att.End(b.res)
		return resp, err
	}
	b.res.StatusCode = resp.StatusCode
	if resp.StatusCode >= 400 {
		b.res.ErrorType = strconv.Itoa(resp.StatusCode)
	}
	b.rc = resp.Body
	resp.Body = b
	return resp, nil
}

// observedBody is one observed hop of an attempt (see send): the
// observer's attempt, what it will be told when it ends (the bytes read,
// a read that failed), and the answer's body, whose Close ends the
// attempt.
type observedBody struct {
	rc   io.ReadCloser
	att  AttemptObserver
	res  AttemptResult
	once sync.Once
}

func (b *observedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.res.Bytes += int64(n)
	if err != nil && err != io.EOF && b.res.ErrorType == "" {
		b.res.ErrorType = errorType(err)
	}
	return n, err
}

func (b *observedBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() { b.att.End(b.res) })
	return err
}

// errorType classifies a failed attempt's error in a few words that never
// quote it (error.type).
func errorType(err error) string {
	var ne net.Error
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dns):
		return "dns"
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &op) && op.Op == "dial":
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection_reset"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "tls"
	}
	return "_OTHER"
}

// chargeLog remembers the jobs whose charge a client reported to its
// observer: a job is charged once, however many waits see it completed (a
// Wait, then the Wait inside Download), so each is reported once. It
// keeps the latest maxChargeLog jobs, so that a long-lived client's record
// stays bounded; a job waited for again after that many others is
// reported again.
type chargeLog struct {
	mu   sync.Mutex
	seen map[string]struct{}
	ring []string
	next int
}

// maxChargeLog is how many jobs a client's chargeLog remembers.
const maxChargeLog = 4096

func newChargeLog() *chargeLog { return &chargeLog{seen: map[string]struct{}{}} }

// first reports whether key is new, and records it.
func (l *chargeLog) first(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[key]; ok {
		return false
	}
	if len(l.ring) < maxChargeLog {
		l.ring = append(l.ring, key)
	} else {
		delete(l.seen, l.ring[l.next])
		l.ring[l.next] = key
		l.next = (l.next + 1) % maxChargeLog
	}
	l.seen[key] = struct{}{}
	return true
}
