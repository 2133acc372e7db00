package lendgraph

import (
	"cmp"
	"context"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// CallOption changes one call, or every call made with one context, without
// a second client: see WithCallOptions. The client's options stay the
// defaults of every call that has none.
type CallOption func(*callOptions)

// callOptions are the per-call settings carried in a context.
type callOptions struct {
	maxRetries     *int
	attemptTimeout *time.Duration
	header         http.Header
	meta           *ResponseMeta
	lenient        *bool
	invalid        error       // the first bad argument: the call fails before sending
	metaMu         *sync.Mutex // serialises writes to meta by one loop's concurrent requests (a pager's prefetch)
}

type callOptionsKey struct{}

// WithCallOptions returns a context whose calls use opts on top of the
// client's options. Every SDK call takes a context first, so this reaches
// every call without changing its signature: a single call, each page of
// an iterator (All, AllChart, ...), each status poll of a job's Wait, the
// status fetches, re-signs and storage requests of a download (whose
// resumption after a cut connection has its own bound), a search-host
// query. Call headers go to the API host only.
//
//	ctx := lendgraph.WithCallOptions(ctx,
//		lendgraph.CallMaxRetries(0),
//		lendgraph.CallAttemptTimeout(5*time.Second),
//		lendgraph.CallHeader("X-Trace-Id", traceID))
//	agent, err := c.Agents.Get(ctx, id)
//
// Options given to a context that already carries some are added to them:
// a later value of the same option wins, headers accumulate. A bad option
// (nil, a negative retry count, an Authorization header) makes each call made
// with the context fail before sending with an *InvalidArgumentError.
//
// Per-call options were chosen over variadic options on each method
// (openai-go's option.RequestOption) because the service interfaces
// (AgentsAPI, EnrichmentAPI, ...) are a contract that test doubles
// implement, and because an iterator or a Wait makes many requests from
// one context: carrying the options in it reaches them all.
func WithCallOptions(ctx context.Context, opts ...CallOption) context.Context {
	o := callOptions{metaMu: new(sync.Mutex)}
	if prev, ok := ctx.Value(callOptionsKey{}).(*callOptions); ok {
		o = *prev
		o.header = prev.header.Clone()
	}
	for _, opt := range opts {
		if opt == nil {
			o.fail(invalidArg("CallOption", "is nil; pass options such as CallMaxRetries(n), or none"))
			continue
		}
		opt(&o)
	}
	return context.WithValue(ctx, callOptionsKey{}, &o)
}

// callOptionsFrom returns the per-call options of ctx, nil when none.
func callOptionsFrom(ctx context.Context) *callOptions {
	o, _ := ctx.Value(callOptionsKey{}).(*callOptions)
	return o
}

func (o *callOptions) fail(err error) {
	if o.invalid == nil {
		o.invalid = err
	}
}

// CallMaxRetries sets how many times the call is retried at most (0: not
// retried), in place of WithMaxRetries. The call's kind still decides what
// may be retried: a call that charges is never repeated once the server
// may have acted, whatever n is. The client's retry budget still applies.
func CallMaxRetries(n int) CallOption {
	return func(o *callOptions) {
		if n < 0 {
			o.fail(invalidArg("CallMaxRetries", "%d is negative; use 0 to disable retries", n))
			return
		}
		o.maxRetries = &n
	}
}

// CallAttemptTimeout cuts each attempt of the call that takes longer than
// d, in place of WithAttemptTimeout (whose doc tells what an attempt is and
// what a cut attempt does); 0 removes the client's attempt timeout for the
// call.
func CallAttemptTimeout(d time.Duration) CallOption {
	return func(o *callOptions) {
		if d < 0 {
			o.fail(invalidArg("CallAttemptTimeout", "%s is negative; use 0 for no per-attempt timeout", d))
			return
		}
		o.attemptTimeout = &d
	}
}

// CallHeader adds a header to each attempt the call sends to the API host
// (never to the search host, a storage link or another host a redirect
// leads to). The SDK's own headers cannot be replaced: x-api-key,
// Authorization, Cookie, Host, Content-Type, Content-Length, Accept,
// User-Agent (see WithUserAgent), Range and the hop-by-hop headers are
// refused.
func CallHeader(name, value string) CallOption {
	return func(o *callOptions) {
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch canon {
		case "X-Api-Key", "Authorization", "Proxy-Authorization", "Cookie", "Host", "Content-Type",
			"Content-Length", "Accept", "Accept-Encoding", "User-Agent", "Range", "Connection",
			"Transfer-Encoding", "Te", "Trailer", "Upgrade", "Keep-Alive":
			o.fail(invalidArg("CallHeader", "%q is set by the SDK and cannot be replaced per call", name))
			return
		}
		if !validHeader(name, value) {
			o.fail(invalidArg("CallHeader", "%q is not a valid header name, or its value holds a control character", truncate(name, maxQuoted)))
			return
		}
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Add(canon, value)
	}
}

// validHeader reports whether name is an HTTP token and value holds no
// control character but tab.
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || c == ':' || c == '(' || c == ')' || c == ',' || c == '/' ||
			c == ';' || c == '<' || c == '=' || c == '>' || c == '?' || c == '@' || c == '[' ||
			c == '\\' || c == ']' || c == '{' || c == '}' || c == '"' {
			return false
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// CallResponseInto makes the call fill *m with what its last response said
// (request id, status, headers, attempts), as openai-go's
// option.WithResponseInto does. See ResponseMeta.
func CallResponseInto(m *ResponseMeta) CallOption {
	return func(o *callOptions) {
		if m == nil {
			o.fail(invalidArg("CallResponseInto", "the destination is nil; pass a pointer to a ResponseMeta"))
			return
		}
		o.meta = m
	}
}

// CallLenientDecoding sets, for the call, whether a record member of the
// wrong type fails the answer (false, the default) or is set aside on the
// record (true), in place of WithLenientDecoding, whose doc tells how.
func CallLenientDecoding(on bool) CallOption {
	return func(o *callOptions) { o.lenient = &on }
}

// ResponseMeta is what an API response said besides its body: filled by a
// call made with CallResponseInto. The SDK's calls return the decoded
// record only (their signatures are a contract, and most callers want
// nothing more), so the metadata is opt-in, as in openai-go, rather than a
// second return value as go-github's *Response.
//
// A call writes it when it returns, whether it succeeded or failed with an
// answer from the server (an *APIError carries the same request id). An
// iterator or a Wait writes it after each request: when the loop is over
// it holds the last page's or the last poll's. Read it after the call
// returns; one ResponseMeta serves one call (or loop) at a time.
type ResponseMeta struct {
	// Operation names the SDK method that made the request, such as
	// "Agents.List" (see OperationFrom).
	Operation string
	// StatusCode is the HTTP status of the last response; 0 when none came.
	StatusCode int
	// RequestID is the server's X-Request-Id; quote it to support.
	RequestID string
	// Header holds the last response's headers (redacted like every
	// header the SDK reads), rate-limit headers included.
	Header http.Header
	// Attempts is how many attempts the request took, retries included
	// (1 when it was not retried).
	Attempts int
	// EarlierAttemptOutcomeUnknown reports that an attempt before the
	// last one may have reached the server and been acted on although its
	// answer was lost: for a call that charges (Enrich), the answer of the
	// last attempt may say nothing was charged while the lost one did.
	EarlierAttemptOutcomeUnknown bool
}

// RateLimit returns the server's rate-limit headers as sent: the limit,
// what is left, and when the window resets ("" when absent). It reads
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, and each
// one's IETF draft name (RateLimit-Limit, RateLimit-Remaining,
// RateLimit-Reset) when the X- one is absent; the reference shows none, so
// any other shape is in Header.
func (m *ResponseMeta) RateLimit() (limit, remaining, reset string) {
	if m == nil || m.Header == nil {
		return "", "", ""
	}
	get := func(name string) string {
		return cmp.Or(m.Header.Get("X-RateLimit-"+name), m.Header.Get("RateLimit-"+name))
	}
	return get("Limit"), get("Remaining"), get("Reset")
}

type operationKey struct{}

// OperationFrom returns the name of the SDK operation a request belongs to,
// such as "Agents.List", "Properties.Enrich" or "DeliveryJob.Wait": the
// service and the method the caller called. A middleware (WithMiddleware)
// reads it from the request's context. Methods that make several requests
// (a job's Wait, a download) name all of them after themselves; an
// iterator's pages are named after the list call that fetches them. It is
// empty for a context the SDK did not make.
func OperationFrom(ctx context.Context) string {
	s, _ := ctx.Value(operationKey{}).(string)
	return s
}

// withOperation names the operation of the requests made with ctx, unless
// an enclosing method already did (a Wait's polls keep the Wait's name).
func withOperation(ctx context.Context, name string) context.Context {
	if ctx == nil || name == "" || OperationFrom(ctx) != "" {
		return ctx // a nil ctx is refused by the call itself
	}
	return context.WithValue(ctx, operationKey{}, name)
}

// callState follows one call through the pipeline: its attempts, what the
// last response said, and whether a lost attempt may have acted.
type callState struct {
	mu        sync.Mutex
	attempts  int
	lastStart time.Time
	status    int
	header    http.Header
	lost      bool // an attempt before the current one may have acted, its answer lost

	// The current attempt follows a retry for reason, after sleeping backoff.
	reason  string
	backoff time.Duration
	// A retry the pipeline decided itself (a cut body), for the next attempt.
	pendingReason string
	pendingAt     time.Time
}

type callStateKey struct{}

// trackCall returns a context carrying a fresh callState.
func trackCall(ctx context.Context) (context.Context, *callState) {
	st := &callState{}
	return context.WithValue(ctx, callStateKey{}, st), st
}

func callStateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// begin counts an attempt starting at now. policyReason and decided are
// the retry policy's last decision for the request (empty when none).
func (s *callState) begin(now time.Time, policyReason string, decided time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reason, s.backoff = "", 0
	switch {
	case s.attempts == 0:
	case policyReason != "" && decided.After(s.lastStart):
		s.reason, s.backoff = policyReason, now.Sub(decided)
	case s.pendingReason != "":
		s.reason, s.backoff = s.pendingReason, now.Sub(s.pendingAt)
	}
	s.pendingReason = ""
	s.attempts++
	s.lastStart = now
}

// retryNext notes a retry the pipeline decided itself, for the next attempt.
func (s *callState) retryNext(reason string) {
	s.mu.Lock()
	s.pendingReason, s.pendingAt = reason, time.Now()
	s.mu.Unlock()
}

// attempt returns the current attempt's number, and why and after what
// backoff it was sent.
func (s *callState) attempt() (n int, reason string, backoff time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.reason, s.backoff
}

// lostAttempt reports whether an attempt before the last may have acted
// with its answer lost.
func (s *callState) lostAttempt() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost
}

// markLost records that an earlier attempt may have acted.
func (s *callState) markLost() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
}

// answered records the last response's status and headers.
func (s *callState) answered(status int, h http.Header) {
	s.mu.Lock()
	s.status, s.header = status, h
	s.mu.Unlock()
}

// snapshot is the state as ResponseMeta reports it.
func (s *callState) snapshot(op string) ResponseMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ResponseMeta{Operation: op, StatusCode: s.status, RequestID: s.header.Get("X-Request-Id"),
		Header: s.header, Attempts: s.attempts, EarlierAttemptOutcomeUnknown: s.lost}
}

// report writes the call's metadata to the caller's ResponseMeta, if any.
func (s *callState) report(ctx context.Context, op string) {
	o := callOptionsFrom(ctx)
	if o == nil || o.meta == nil {
		return
	}
	m := s.snapshot(op)
	o.metaMu.Lock()
	*o.meta = m
	o.metaMu.Unlock()
}

// opName names an operation of a resource service from its path name:
// ("agents", "List") is "Agents.List".
func opName(resource, method string) string {
	if resource == "" {
		return method
	}
	return strings.ToUpper(resource[:1]) + resource[1:] + "." + method
}

// analyticsMethod maps an analytics path to the AnalyticsService method.
var analyticsMethod = map[string]string{"summary": "Summary", "time-series": "TimeSeries", "chart": "Chart"}
