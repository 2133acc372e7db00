package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// attemptLoop is one request's run through go-retryablehttp, the SDK's
// only retry loop, and what it learns on the way. Its methods are the
// loop's hooks, called on the calling goroutine in this order for each
// attempt:
//
//   - begin (RequestLogHook): counts the attempt and, for a retry, tells
//     the observer why and after what wait;
//   - RoundTrip (the attempt's transport, transport.go), once per hop;
//   - checkRetry (CheckRetry): judges the attempt by the retry policy of
//     the request's kind, within the call's retry count and the client's
//     retry budget, and logs it;
//   - handle (the response handler, for answers the SDK decodes): reads
//     the body whole within the attempt and decodes it, or turns a
//     non-2xx answer into the SDK's error; a body cut mid-read is a failed
//     attempt, judged by checkRetry again like a reset connection;
//   - backoff (Backoff): the wait before the next attempt, a server's
//     Retry-After within the call's cap, else exponential with jitter.
type attemptLoop struct {
	o   *operation
	r   *request
	out any
	url *url.URL // the request's address, with its query (never logged)
	// template is the request's url.template for the observer, made at
	// its first observed attempt.
	template string
	// secrets are redacted from what the request's errors quote.
	secrets []string
	// redactor redacts the secrets from every header of the answers.
	redactor redactor
	// seq numbers the request among the call's (WithResponseInto's order).
	seq uint64

	n       int           // attempts begun
	start   time.Time     // when the current attempt began
	reason  string        // why the current attempt follows a retry ("status 503")
	backoff time.Duration // the wait before the current attempt
	waited  time.Duration // of which a server asked for (Retry-After)

	answered bool        // the current attempt got an answer (handle ran)
	status   int         // the last answer's status
	header   http.Header // the last answer's headers (redacted)

	// acted: the last attempt of a call that charges or acts may have
	// reached the server and been acted on; lost: an attempt before it
	// may have, its answer lost.
	acted, lost bool
	// budgetSpent: a retry was due but the client's retry budget was empty.
	budgetSpent bool
	// logged: the current attempt's log line is written.
	logged bool
}

// run sends req through the loop and returns its last response (see
// operation.do).
func (l *attemptLoop) run(req *retryablehttp.Request) (*http.Response, error) {
	c, cfg := l.o.c, l.o.cfg
	maxRetries := cfg.maxRetries
	if l.r.kind == retry.Never {
		maxRetries = 0
	}
	rn := c.runners.Get().(*runner)
	rn.l = l
	rn.rc.RetryWaitMin, rn.rc.RetryWaitMax, rn.rc.RetryMax = cfg.retryBase, cfg.retryMax, maxRetries
	resp, err := rn.rc.Do(req)
	rn.l = nil
	c.runners.Put(rn)
	return resp, err
}

// runner is go-retryablehttp's client and the http.Client under it, with
// the hooks that hand each call to the loop it runs (attemptLoop). Only
// the loop and its retry settings change from one request to the next,
// so a client keeps its runners (Client.runners) and lends each to one
// request at a time: a request takes one, runs, and gives it back empty.
// Nothing but the loop of the request running holds a runner's hooks.
type runner struct {
	rc retryablehttp.Client
	hc http.Client
	l  *attemptLoop // the request running; nil while the runner is idle
}

// newRunners returns the pool of c's runners: each sends through the
// attempt's transport with c's redirect policy, and the cookie jar and
// timeout of the http.Client given by WithHTTPClient.
func (c *Client) newRunners() *sync.Pool {
	return &sync.Pool{New: func() any {
		rn := &runner{}
		rn.hc = http.Client{Transport: rn, CheckRedirect: c.redirect, Jar: c.hc.Jar, Timeout: c.hc.Timeout}
		rn.rc = retryablehttp.Client{HTTPClient: &rn.hc, CheckRetry: rn.checkRetry, Backoff: rn.wait,
			ErrorHandler: rn.giveUp, RequestLogHook: rn.begin}
		return rn
	}}
}

// RoundTrip is the runner's transport: the loop's (attemptLoop.RoundTrip).
func (rn *runner) RoundTrip(req *http.Request) (*http.Response, error) { return rn.l.RoundTrip(req) }

func (rn *runner) begin(lg retryablehttp.Logger, req *http.Request, retryNumber int) {
	rn.l.begin(lg, req, retryNumber)
}

func (rn *runner) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	return rn.l.checkRetry(ctx, resp, err)
}

func (rn *runner) wait(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
	return rn.l.wait(lo, hi, attempt, resp)
}

func (rn *runner) giveUp(resp *http.Response, err error, n int) (*http.Response, error) {
	return rn.l.giveUp(resp, err, n)
}

// begin is the loop's RequestLogHook: attempt retryNumber+1 starts.
func (l *attemptLoop) begin(_ retryablehttp.Logger, _ *http.Request, retryNumber int) {
	l.n = retryNumber + 1
	if l.o.c.logger != nil {
		l.start = time.Now() // for the log line's duration
	}
	l.answered, l.logged = false, false
	op := l.o.obs
	if op == nil || l.n == 1 {
		return
	}
	if l.waited > 0 {
		op.event(Event{Kind: EventServerWait, Reason: "retry-after", Wait: l.waited})
	}
	op.event(Event{Kind: EventRetry, Reason: l.reason, Wait: l.backoff})
	op.update(func(s *Summary) { s.Retries++ })
}

// checkRetry is the loop's CheckRetry. It is called once for each attempt,
// and once more, with the response handler's verdict in err, for an
// attempt whose answer the handler read.
func (l *attemptLoop) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		l.logAttempt(resp, err, false)
		return false, ctx.Err()
	}
	cfg := l.o.cfg
	budget := l.o.c.budget
	reason, cost := "", 0
	switch {
	case l.answered:
		// The handler's verdict: only a body cut mid-read is retried, as
		// a transport failure of a request that may be repeated.
		if err != nil && l.r.kind == retry.Idempotent && bodyCut(err) {
			reason, cost = "response body cut", retry.CostTransport
		}
	case err == nil && resp.StatusCode < 400:
		budget.Refund()
		if l.r.stream() {
			l.logAttempt(resp, nil, false) // the caller reads it
		}
		return false, nil // the handler reads it
	default:
		var ok bool
		ok, reason, cost = retry.Decide(l.r.kind, resp, err, cfg.maxServerWait)
		if !ok {
			reason = ""
		}
	}
	retrying := reason != "" && l.n <= cfg.maxRetries && l.r.kind != retry.Never
	if retrying && !budget.Take(cost) {
		retrying, l.budgetSpent = false, true
	}
	if retrying {
		l.reason = reason
	}
	if retrying || err != nil || l.answered || l.r.stream() {
		l.logAttempt(resp, err, retrying)
	}
	return retrying, nil
}

// bodyCut reports whether err is a *DecodeError of a body cut mid-read.
func bodyCut(err error) bool {
	var de *DecodeError
	return errors.As(err, &de) && de.cut()
}

// wait is the loop's Backoff: a server's Retry-After within the call's cap
// (a longer one is never retried: see retry.Decide), else exponential
// backoff with jitter.
func (l *attemptLoop) wait(_, _ time.Duration, attempt int, resp *http.Response) time.Duration {
	l.waited = 0
	if resp != nil {
		if d, ok := retry.RetryAfter(resp.Header, l.o.c.now()); ok {
			l.waited = min(d, l.o.cfg.maxServerWait)
			l.backoff = l.waited
			return l.backoff
		}
	}
	l.backoff = retry.Jitter(l.o.cfg.retryBase, l.o.cfg.retryMax, attempt)
	return l.backoff
}

// giveUp is the loop's ErrorHandler: the attempts are over without
// success. A transport failure or the handler's error is returned as it
// is; a response that comes with an error (a context cancelled right after
// the headers arrived) is closed and dropped.
func (l *attemptLoop) giveUp(resp *http.Response, err error, _ int) (*http.Response, error) {
	if resp != nil && (err != nil || !l.r.stream()) {
		_ = resp.Body.Close()
		resp = nil
	}
	if err == nil && resp == nil {
		err = errors.New("the request ended without an answer") // not reached: the handler reads every answer
	}
	return resp, attemptTimeout(err)
}

// handle is the response handler of an answer the SDK decodes: it reads
// the body whole, within the attempt, and decodes a 2xx into the
// request's destination; any other status becomes the SDK's typed error.
func (l *attemptLoop) handle(resp *http.Response) error {
	l.answered = true
	defer resp.Body.Close()
	if h := l.r.respHeader; h != nil {
		*h = resp.Header
	}
	if resp.StatusCode >= 300 {
		return l.apiError(resp)
	}
	r := l.r
	body, err := readBody(resp.Body, resp.ContentLength, maxResponseBody)
	if err == nil && r.peek != nil {
		r.peek(body)
	}
	if err == nil && l.out != nil {
		err = unmarshalMode(body, l.out, l.o.cfg.lenient)
	}
	if err != nil {
		// The headers are redacted already (the attempt's transport); the
		// decoder's message may quote the body.
		return &DecodeError{Method: r.method, Path: r.wirePath(l.o.c), StatusCode: resp.StatusCode,
			ContentType: resp.Header.Get("Content-Type"), RequestID: resp.Header.Get("X-Request-Id"),
			Err: redactError(attemptTimeout(err), l.secrets...)}
	}
	return nil
}

// readBody reads a 2xx body whole, refusing one over limit bytes. size is
// the length the answer declared (-1 when unknown): a body of known length
// is read into a buffer of that size, in one allocation.
func readBody(r io.Reader, size, limit int64) ([]byte, error) {
	var b []byte
	if size >= 0 && size < limit {
		b = make([]byte, 0, size+1) // one byte more: the end shows without growing
		for len(b) < cap(b) {
			n, err := r.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if err == io.EOF {
				return b, nil
			}
			if err != nil {
				return nil, err
			}
		}
		// Longer than declared (a transport that does not hold the
		// server to its Content-Length): the rest as for an unknown size.
	}
	rest, err := io.ReadAll(io.LimitReader(r, limit+1-int64(len(b))))
	if err != nil {
		return nil, err
	}
	if b == nil {
		b = rest
	} else {
		b = append(b, rest...)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("response body larger than %d bytes", limit)
	}
	return b, nil
}

// apiError turns a non-2xx answer into the SDK's error: the search host's
// own, or the API's typed errors; an answer asking to wait longer than
// the call waits (Retry-After above WithMaxServerWait) is a
// *RateLimitError, whatever its status.
func (l *attemptLoop) apiError(resp *http.Response) error {
	status, h := resp.StatusCode, resp.Header
	body, truncated := readCapped(resp.Body, maxErrorBody)
	// A server echoing the key back ("invalid key lg_...") must not put it
	// in an error text (its headers are redacted already).
	body = []byte(redact(string(body), l.secrets...))
	r, c := l.r, l.o.c
	var err error
	if r.parseError != nil {
		err = r.parseError(status, h, body, truncated)
	} else {
		err = parseError(r.method, r.wirePath(c), status, h, body, truncated, c.now())
	}
	if d, ok := retry.RetryAfter(h, c.now()); ok {
		var base *APIError
		if errors.As(err, &base) {
			if rl := l.o.cfg.refuseWait(base, d); rl != nil {
				return rl
			}
		}
	}
	return err
}

// logAttempt writes the attempt's debug line: the operation, the
// attempt's number, why it follows a retry and how long the wait before it
// was, method, host, path (cut to maxQuoted bytes), status or error,
// request id and duration. Never headers, query strings or bodies.
func (l *attemptLoop) logAttempt(resp *http.Response, err error, retrying bool) {
	logger := l.o.c.logger
	if logger == nil || l.logged {
		return
	}
	l.logged = true
	ctx := context.Background()
	if !logger.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("operation", l.o.name), slog.Int("attempt", l.n))
	if l.n > 1 {
		attrs = append(attrs, slog.String("retry_reason", l.reason), slog.Duration("backoff", l.backoff))
	}
	host, path := l.url.Host, l.url.EscapedPath()
	if path == "" {
		path = "/"
	}
	attrs = append(attrs, slog.String("method", l.r.method), slog.String("host", host),
		slog.String("path", truncate(path, maxQuoted)), slog.Duration("duration", time.Since(l.start)))
	msg := "lendgraph: request"
	if resp != nil {
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
		if id := resp.Header.Get("X-Request-Id"); id != "" {
			attrs = append(attrs, slog.String("request_id", id))
		}
	}
	var apiErr *APIError
	switch {
	case err == nil, resp != nil && errors.As(err, &apiErr):
		// The status says it.
	case resp == nil:
		msg = "lendgraph: request failed"
		fallthrough
	default: // an answer that could not be read
		attrs = append(attrs, slog.String("error", redactError(unwrapURLError(err), l.secrets...).Error()))
	}
	if retrying {
		attrs = append(attrs, slog.Bool("retrying", true))
	}
	logger.LogAttrs(ctx, slog.LevelDebug, msg, attrs...)
}

// logFailure writes the warning line of a failed call that was retried,
// could not be retried for want of budget, or whose outcome is unknown.
func (c *Client) logFailure(ctx context.Context, l *attemptLoop, err error) {
	attrs := []slog.Attr{slog.String("operation", l.o.name), slog.String("method", l.r.method),
		slog.String("path", truncate(l.r.wirePath(c), maxQuoted)), slog.Int("attempts", l.n)}
	if l.budgetSpent {
		attrs = append(attrs, slog.Bool("retry_budget_exhausted", true))
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		attrs = append(attrs, slog.Bool("outcome_unknown", true))
	}
	attrs = append(attrs, slog.String("error", err.Error()))
	c.logger.LogAttrs(ctx, slog.LevelWarn, "lendgraph: call failed", attrs...)
}

// refuseWait returns the *RateLimitError of an answer that asked to wait
// d, longer than the call waits (WithMaxServerWait), and nil when the call
// waits that long.
func (cfg *callConfig) refuseWait(base *APIError, d time.Duration) *RateLimitError {
	if d <= cfg.maxServerWait {
		return nil
	}
	return &RateLimitError{APIError: base, RetryAfter: d, limit: cfg.maxServerWait}
}

// errAttemptCut is the cause the attempt timeout cancels an attempt with.
var errAttemptCut = errors.New("attempt timeout")

// timeAttempt bounds one hop of an attempt by the call's attempt timeout
// (WithAttemptTimeout): from sending the request to the end of the
// response body, or, for a download (stream), while it waits for the
// headers and then whenever no byte arrives for the timeout. A bulk
// delivery submit (retry.Launch) is cut only until its request is
// written: after that a cut would lose the answer of a job that may have
// started, which is charged when it completes and which nobody can find,
// so only the call's context ends it. It returns the request to send and
// a function that wraps the hop's outcome.
func (l *attemptLoop) timeAttempt(req *http.Request) (*http.Request, func(*http.Response, error) (*http.Response, error)) {
	timeout := l.o.cfg.attemptTimeout
	if timeout <= 0 {
		return req, func(resp *http.Response, err error) (*http.Response, error) { return resp, err }
	}
	parent := req.Context()
	ctx, cancel := context.WithCancelCause(parent)
	var (
		mu   sync.Mutex
		sent bool // a launch's request was written: no more cuts
	)
	timer := time.AfterFunc(timeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !sent {
			cancel(errAttemptCut)
		}
	})
	if l.r.kind == retry.Launch {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				mu.Lock()
				sent = true
				mu.Unlock()
			}
		}})
	}
	idle := l.r.stream()
	return req.WithContext(ctx), func(resp *http.Response, err error) (*http.Response, error) {
		if err != nil {
			timer.Stop()
			if context.Cause(ctx) == errAttemptCut && parent.Err() == nil {
				err = &attemptTimeoutError{what: fmt.Sprintf("no response within the attempt timeout of %s (WithAttemptTimeout)", timeout)}
			}
			cancel(nil)
			return nil, err
		}
		if idle {
			timer.Reset(timeout)
		}
		resp.Body = &attemptBody{rc: resp.Body, ctx: ctx, parent: parent, cancel: cancel, timer: timer, idle: idle, timeout: timeout}
		return resp, nil
	}
}

// attemptBody is the body of an attempt under a timeout: closing it (or
// reading it to the end) stops the timer; a read cut by the timer fails
// with an attemptTimeoutError.
type attemptBody struct {
	rc      io.ReadCloser
	ctx     context.Context
	parent  context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	idle    bool
	timeout time.Duration
}

func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.idle {
		b.timer.Reset(b.timeout)
	}
	if err != nil && err != io.EOF && context.Cause(b.ctx) == errAttemptCut && b.parent.Err() == nil {
		what := fmt.Sprintf("the response body stalled past the attempt timeout of %s (WithAttemptTimeout)", b.timeout)
		if b.idle {
			what = fmt.Sprintf("no byte of the response body for the attempt timeout of %s (WithAttemptTimeout)", b.timeout)
		}
		err = &attemptTimeoutError{what: what, body: true}
	}
	return n, err
}

func (b *attemptBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// attemptTimeoutError is an attempt cut by a per-attempt timeout: the
// SDK's (WithAttemptTimeout), the http.Client's Timeout or the transport's
// ResponseHeaderTimeout, while the call's own context was still live. It
// is a net.Error whose Timeout is true; it does not match
// context.DeadlineExceeded, which only the caller's context produces.
type attemptTimeoutError struct {
	what string
	body bool // cut while reading the body: the body ended early
}

func (e *attemptTimeoutError) Error() string   { return "attempt timed out: " + e.what }
func (e *attemptTimeoutError) Timeout() bool   { return true }
func (e *attemptTimeoutError) Temporary() bool { return true }

// Is makes a body cut by the timeout read as a body that ended early.
func (e *attemptTimeoutError) Is(target error) bool { return e.body && target == io.ErrUnexpectedEOF }

// attemptTimeout rewords an error of one attempt that matches
// context.DeadlineExceeded although it is not the call's context's (the
// caller checks that first): the http.Client's Timeout or the transport's
// ResponseHeaderTimeout cut the attempt. Other errors are returned as they
// are.
func attemptTimeout(err error) error {
	if err == nil || err == context.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, retry.ErrNoRetry) { // the rate limiter's: the call's deadline
		return err
	}
	var at *attemptTimeoutError
	if errors.As(err, &at) {
		return at
	}
	msg := err.Error()
	what := "the attempt's own timeout passed"
	switch {
	case strings.Contains(msg, "Client.Timeout exceeded while awaiting headers"):
		what = "no response headers within the http.Client's Timeout"
	case strings.Contains(msg, "timeout awaiting response headers"):
		what = "no response headers within the transport's ResponseHeaderTimeout"
	case strings.Contains(msg, "Client.Timeout"):
		what = "the response body did not finish within the http.Client's Timeout"
		return &attemptTimeoutError{what: what, body: true}
	}
	return &attemptTimeoutError{what: what}
}
