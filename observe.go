package lendgraph

import (
	"context"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
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
	// once.
	StartOperation(ctx context.Context, name string) (context.Context, OperationObserver)
}

// OperationObserver is one operation being watched (see Observer).
type OperationObserver interface {
	// StartAttempt begins one HTTP attempt of the operation; ctx is the
	// operation's. The SDK calls End on the returned scope exactly once,
	// when the response body is closed or the attempt failed.
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
	// Shard names the export shard (package export) the operation ran.
	Shard string
}

// WithObserver makes the client report its operations, attempts and
// events to o (see Observer). Without it the SDK reports nothing and does
// no work for it.
func WithObserver(o Observer) Option {
	return func(s *settings) {
		if o == nil {
			s.invalid = append(s.invalid, invalidArg("WithObserver", "the observer is nil; leave the option out to observe nothing"))
			return
		}
		s.observer = o
	}
}

type opKey struct{}

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

// opFrom returns the observed operation of ctx, nil when none.
func opFrom(ctx context.Context) *opState {
	o, _ := ctx.Value(opKey{}).(*opState)
	return o
}

// startOp begins the operation name when the client has an observer,
// returning nil otherwise (every method of *opState is a no-op on nil).
// It always opens a new operation, inside the one ctx carries if any.
func (c *Client) startOp(ctx context.Context, name string) (context.Context, *opState) {
	if c == nil || c.observer == nil {
		return ctx, nil
	}
	ctx, obs := c.observer.StartOperation(ctx, name)
	o := &opState{client: c, obs: obs}
	return context.WithValue(ctx, opKey{}, o), o
}

// beginOp names the operation of the requests made with ctx (see
// withOperation) and opens it when the client is observed (startOp).
func (c *Client) beginOp(ctx context.Context, name string) (context.Context, *opState) {
	return c.startOp(withOperation(ctx, name), name)
}

// joinOp is startOp for a single request: a request made inside an
// operation of this client (a Wait's polls, a download's link fetches)
// is part of it, and opens nothing.
func (c *Client) joinOp(ctx context.Context, name string) (context.Context, *opState) {
	if c == nil || c.observer == nil {
		return ctx, nil
	}
	if o := opFrom(ctx); o != nil && o.client == c {
		return ctx, nil
	}
	return c.startOp(ctx, name)
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

// charged records the credits an answer says were charged.
func (o *opState) charged(credits float64) {
	o.update(func(s *Summary) { s.Credits, s.CreditsKnown = credits, true })
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

// observeSeq makes a range over seq one operation named name, counting the
// rows yielded. With no observer it returns seq itself.
//
// For a paged list (paged) each request that succeeds counts a page.
func observeSeq[T any](ctx context.Context, c *Client, name string, paged bool, seq func(context.Context) iter.Seq2[T, error]) iter.Seq2[T, error] {
	if c == nil || c.observer == nil {
		return seq(ctx)
	}
	return func(yield func(T, error) bool) {
		octx, op := c.startOp(ctx, name)
		op.paged = paged
		var rows int64
		var failed error
		seq(octx)(func(v T, err error) bool {
			if err != nil {
				failed = err
			} else {
				rows++
			}
			return yield(v, err)
		})
		op.update(func(s *Summary) { s.Rows = rows })
		op.end(failed)
	}
}

// closing ends the operation when rc is closed.
func (o *opState) closing(rc io.ReadCloser) io.ReadCloser {
	if o == nil {
		return rc
	}
	return &opCloser{ReadCloser: rc, op: o}
}

// opCloser is a stream whose Close ends an operation.
type opCloser struct {
	io.ReadCloser
	op *opState
}

func (c *opCloser) Close() error {
	err := c.ReadCloser.Close()
	c.op.end(nil)
	return err
}

type reqKey struct{}

// reqState is where one request goes, for its attempts' descriptions, and
// the Retry-After its last answer asked for. The attempts themselves are
// counted by the call's callState.
type reqState struct {
	target     Target
	origin     *url.URL // the host the request was made for
	template   string
	mu         sync.Mutex
	retryAfter time.Duration // asked by the last answer
}

// trackRequest gives an observed ctx the state of one request: where it
// goes and, unless ctx has one, a callState counting its attempts.
func (c *Client) trackRequest(ctx context.Context, target Target, origin *url.URL, path string) context.Context {
	if opFrom(ctx) == nil {
		return ctx
	}
	rs := &reqState{target: target, origin: origin}
	if target != TargetStorage {
		rs.template = strings.TrimRight(origin.EscapedPath(), "/") + urlTemplate(path)
	}
	if callStateFrom(ctx) == nil {
		ctx, _ = trackCall(ctx)
	}
	return context.WithValue(ctx, reqKey{}, rs)
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

// urlTemplate is path (escaped, without a query) with every segment that
// is not one of the SDK's fixed words replaced by {id}: an id never
// reaches a span or a metric.
func urlTemplate(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s != "" && !staticSegments[s] {
			segs[i] = "{id}"
		}
	}
	return strings.Join(segs, "/")
}

// observeTransport reports every attempt of an observed operation: to the
// API host (under the key and the rate limiter) and, in the credential-free
// client, to the search host and storage links. It injects trace context
// into requests to the API host and the search host only.
type observeTransport struct {
	next   http.RoundTripper
	client *Client
}

func (t *observeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	op := opFrom(ctx)
	if op == nil {
		return t.next.RoundTrip(req)
	}
	rs, _ := ctx.Value(reqKey{}).(*reqState)
	if rs == nil {
		rs = &reqState{target: TargetAPI, origin: t.client.base}
	}
	info := AttemptInfo{Method: req.Method, Host: req.URL.Hostname(), Target: rs.target}
	if p, err := strconv.Atoi(req.URL.Port()); err == nil {
		info.Port = p
	} else if req.URL.Scheme == "https" {
		info.Port = 443
	} else {
		info.Port = 80
	}
	if !sameOriginURL(req.URL, rs.origin) {
		info.Target = TargetOther // a redirect left the host
	}
	if info.Target == TargetAPI || info.Target == TargetSearchHost {
		info.URLTemplate = rs.template
	}
	info.Range = req.Header.Get("Range")
	// The retry client counted the attempt (beginAttempt) before sending
	// it; a redirect within it is not an attempt of its own.
	var retried *Event
	if st := callStateFrom(ctx); st != nil && req.Response == nil {
		n, reason, backoff := st.attempt()
		info.ResendCount = max(n-1, 0)
		if n > 1 {
			retried = &Event{Kind: EventRetry, Reason: reason, Wait: backoff}
			rs.mu.Lock()
			ra := min(rs.retryAfter, t.client.policy.MaxServerWait)
			rs.mu.Unlock()
			if ra > 0 {
				op.event(Event{Kind: EventServerWait, Reason: "retry-after", Wait: ra})
			}
			op.event(*retried)
		}
	}
	op.update(func(s *Summary) {
		s.Attempts++
		if retried != nil {
			s.Retries++
		}
	})
	att := op.obs.StartAttempt(ctx, info)
	if info.Target == TargetAPI || info.Target == TargetSearchHost {
		req = req.Clone(ctx)
		att.Inject(req.Header)
	}
	resp, err := t.next.RoundTrip(req)
	res := AttemptResult{}
	if err != nil {
		res.ErrorType = errorType(err)
		rs.answered(0)
		att.End(res)
		return resp, err
	}
	res.StatusCode = resp.StatusCode
	if resp.StatusCode >= 400 {
		res.ErrorType = strconv.Itoa(resp.StatusCode)
	}
	var ra time.Duration
	if resp.StatusCode >= 400 {
		ra, _ = retry.RetryAfter(resp.Header, t.client.now())
	}
	rs.answered(ra)
	resp.Body = &observedBody{rc: resp.Body, att: att, res: res}
	return resp, nil
}

// answered records the Retry-After of an attempt's answer (0: none).
func (rs *reqState) answered(retryAfter time.Duration) {
	rs.mu.Lock()
	rs.retryAfter = retryAfter
	rs.mu.Unlock()
}

// observedBody ends its attempt when the body is read to its end, fails or
// is closed.
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

// noteLimiterWait reports a wait for the client's rate limiter.
func noteLimiterWait(ctx context.Context, d time.Duration) {
	if d >= time.Millisecond {
		opFrom(ctx).event(Event{Kind: EventRateLimiterWait, Wait: d})
	}
}
