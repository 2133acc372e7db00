package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-querystring/query"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// The request path, in the order a call runs through it:
//
//  1. operation (this file): a public method's entry builds the call's
//     settings once (the client's defaults and the call's options,
//     forCall), names the operation and opens it for the observer.
//  2. request (this file): what one HTTP request of the operation is: its
//     target (the API host, the search host, a signed storage link), its
//     path, body and retry kind.
//  3. attemptLoop (attempt.go): go-retryablehttp's loop, the only retry
//     loop. Its hooks are the loop's own methods: RequestLogHook begins an
//     attempt, CheckRetry judges it (the retry policy, the retry budget,
//     the attempt's log line), Backoff picks the wait, the response
//     handler reads and decodes the body inside the attempt, so that a
//     body cut mid-read is a failed attempt like a reset connection.
//  4. the attempt's transport (transport.go): per hop of an attempt (a
//     redirect is a hop), the call's headers and middleware, the rate
//     limit and the credential for the API host, the observer's attempt,
//     the attempt timeout, and the redaction of the answer's headers,
//     over the client's http.RoundTripper.
//
// Nothing travels in the context but what crosses an API boundary: the
// caller's cancellation and deadline, the observer's trace context, and
// the operation's name for middleware and a WithHTTPClient transport
// (OperationFrom).

// operation is one call of a public method, from its entry to its return:
// the client, its name as the caller called it ("Agents.List"), the
// call's settings, and what the observer is told.
type operation struct {
	c    *Client
	name string
	cfg  *callConfig
	obs  *opState // nil unless the client has an observer; then &state
	// state is obs's storage, so that an observed call allocates it with
	// the operation.
	state opState
}

// begin starts the operation name with the call's options: it checks that
// the client and ctx can be used and that every option applies, and
// returns the context its requests are made with.
func (c *Client) begin(ctx context.Context, name string, opts []Option) (context.Context, *operation, error) {
	if err := c.ready(ctx); err != nil {
		return ctx, nil, err
	}
	cfg, err := forCall(&c.defaults, name, opts)
	if err != nil {
		return ctx, nil, err
	}
	ctx, o := c.open(ctx, name, cfg)
	return ctx, o, nil
}

// open starts the operation name with settings cfg.
func (c *Client) open(ctx context.Context, name string, cfg *callConfig) (context.Context, *operation) {
	o := &operation{c: c, name: name, cfg: cfg}
	ctx = context.WithValue(ctx, operationKey{}, o) // a pointer: no allocation for the value
	ctx, o.obs = c.startOp(ctx, name, &o.state)
	return ctx, o
}

// child starts the operation name inside o, with o's settings: a method
// that calls another method the caller could call (Download waiting for
// its job) runs the inner one as an operation of its own.
func (o *operation) child(ctx context.Context, name string) (context.Context, *operation) {
	return o.c.open(ctx, name, o.cfg)
}

// watch is the operation's observed state, nil when it is not observed
// (or o is nil: a pager of NewPager).
func (o *operation) watch() *opState {
	if o == nil {
		return nil
	}
	return o.obs
}

// end ends the operation with the error the method returns.
func (o *operation) end(err error) {
	if o != nil {
		o.obs.end(err)
		if o.c != nil {
			o.c.release()
		}
	}
}

// request is one HTTP request of an operation.
type request struct {
	method string
	// path is relative to the API's base URL (or to host), escaped:
	// ids went through url.PathEscape.
	path  string
	query any // a struct for go-querystring, or url.Values
	body  any // encoded as JSON when non-nil
	kind  retry.Kind
	// charges marks a call that is repeated like a read but may debit a
	// credit (Enrich without Refresh): the pipeline notes whether a lost
	// attempt may have charged before the answer that arrived.
	charges bool
	data    bool // the answer wraps the result in {"data": ...}

	// host, when set, is the search host: the request goes there with
	// bearer as its token, never the API key, and its error bodies are
	// read by parseError.
	host       *url.URL
	bearer     string
	parseError func(status int, h http.Header, body []byte, truncated bool) error
	// link, when set, is a signed storage link: the whole URL of a
	// credential-free download (target TargetStorage); its body is the
	// caller's to read (stream).
	link SignedURL
	// header holds headers of the request's own (a download's Range).
	header http.Header
	// respHeader, when set, receives the headers of the answer decoded
	// (the search token reads the server's Date).
	respHeader *http.Header
	// peek, when set, reads a 2xx answer's body before it is decoded (a
	// list page names the next page's cursor: peekCursor).
	peek func(body []byte)
}

// target is the kind of host r goes to.
func (r *request) target() Target {
	switch {
	case r.link != "":
		return TargetStorage
	case r.host != nil:
		return TargetSearchHost
	}
	return TargetAPI
}

// stream reports whether the caller reads the body (a download), rather
// than the loop reading and decoding it within the attempt.
func (r *request) stream() bool { return r.link != "" }

// label names r for errors: its method and the path it is sent to.
func (r *request) wirePath(c *Client) string {
	if r.link != "" {
		return r.link.String()
	}
	base := c.base
	if r.host != nil {
		base = r.host
	}
	return strings.TrimRight(base.EscapedPath(), "/") + r.path
}

// maxResponseBody caps a JSON response read into memory.
const maxResponseBody = 64 << 20

// send runs r through the pipeline and decodes a 2xx JSON body into out
// (when out is non-nil). It returns the final status code. A failed call
// that charges or acts (kind Unrepeatable or Launch) whose request may
// have reached the server returns an error matching ErrOutcomeUnknown.
func (o *operation) send(ctx context.Context, r request, out any) (int, error) {
	resp, l, err := o.do(ctx, &r, out)
	if resp != nil {
		resp.Body.Close()
	}
	if err == nil {
		o.obs.page()
	}
	return l.status, err
}

// stream runs r, a signed link's GET, through the pipeline and returns the
// last response, whatever its status, with its body for the caller to read
// and close: 429, 5xx and transport failures were retried as for a read.
func (o *operation) stream(ctx context.Context, r request) (*http.Response, error) {
	resp, _, err := o.do(ctx, &r, nil)
	return resp, err
}

// do is the one way a request is sent: it builds the request, runs the
// retry loop and turns its outcome into the SDK's errors.
func (o *operation) do(ctx context.Context, r *request, out any) (*http.Response, *attemptLoop, error) {
	l := &attemptLoop{o: o, r: r, out: out}
	if o.cfg.meta != nil {
		l.seq = o.cfg.metaOrder.next()
	}
	c := o.c
	if r.target() == TargetAPI && *c.key == "" {
		return nil, l, &MissingAPIKeyError{Operation: o.name}
	}
	u, err := r.url(c)
	if err != nil {
		return nil, l, err
	}
	l.url = u
	var body any
	if r.body != nil {
		b, err := marshal(r.body)
		if err != nil {
			// Only what the caller put in the request can fail to encode
			// (a filter value such as a channel, a func or a NaN).
			return nil, l, &InvalidArgumentError{Arg: "request body", Problem: fmt.Sprintf("cannot be encoded as JSON for %s %s: %v", r.method, truncate(r.path, maxQuoted), err)}
		}
		body = b
	}
	hreq, err := newHTTPRequest(ctx, r.method, u)
	if err != nil {
		return nil, l, fmt.Errorf("lendgraph: building %s %s: %w", r.method, truncate(r.wirePath(c), maxQuoted), redactError(err))
	}
	req, err := retryablehttp.FromRequest(hreq)
	if err == nil {
		err = req.SetBody(body)
	}
	if err != nil {
		return nil, l, fmt.Errorf("lendgraph: building %s %s: %w", r.method, truncate(r.wirePath(c), maxQuoted), redactError(err))
	}
	// The SDK's own headers share one backing array, each value a slice
	// of its own capacity, so that an append by a middleware copies.
	h := req.Header
	vals := make([]string, 3)
	vals[0] = c.userAgent
	h["User-Agent"] = vals[0:1:1]
	if r.stream() {
		// Ask for the stored bytes as they are: offsets for Range then
		// count the same bytes, and a gzip file stays gzip (Go's transport
		// would otherwise ask for gzip and silently decode it).
		vals[1] = "identity"
		h["Accept-Encoding"] = vals[1:2:2]
	} else {
		vals[1] = "application/json"
		h["Accept"] = vals[1:2:2]
		req.SetResponseHandler(l.handle)
	}
	if r.body != nil {
		vals[2] = "application/json"
		h["Content-Type"] = vals[2:3:3]
	}
	for name, vs := range r.header {
		h[name] = vs
	}
	l.secrets, l.redactor = c.auth().secrets, c.auth().redactor
	if r.bearer != "" {
		l.secrets = append(slices.Clip(l.secrets), r.bearer)
		l.redactor = newRedactor(l.secrets...)
	}
	resp, err := l.run(req)
	l.report(ctx)
	if err != nil {
		err = l.fail(ctx, err)
		return nil, l, err
	}
	return resp, l, nil
}

// newHTTPRequest is http.NewRequestWithContext for a URL already parsed:
// the request carries u as it is, without printing and parsing it again.
func newHTTPRequest(ctx context.Context, method string, u *url.URL) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, "", nil) // checks the method
	if err != nil {
		return nil, err
	}
	// As http.NewRequestWithContext does: a host ending in an empty port
	// ("example.com:") is the host alone.
	u.Host = strings.TrimSuffix(u.Host, ":")
	req.URL, req.Host = u, u.Host
	return req, nil
}

// url is r's address: its path and query joined to the API's base URL or
// the search host's, or its link. It is r's own copy, which the request
// may keep.
func (r *request) url(c *Client) (*url.URL, error) {
	if r.link != "" {
		return c.parseLink("results link", r.link.Reveal())
	}
	base := c.base
	if r.host != nil {
		base = r.host
	}
	return joinURL(base, r.path, r.query)
}

// fail turns the loop's error into the error the call returns.
func (l *attemptLoop) fail(ctx context.Context, err error) error {
	o, r := l.o, l.r
	c := o.c
	if cerr := ctxErr(ctx); cerr != nil {
		err = fmt.Errorf("lendgraph: %s %s: %w", r.method, truncate(r.wirePath(c), maxQuoted), cerr)
	} else if !l.answered {
		// No answer came: the connection, a refused redirect or the
		// client's rate limit.
		var refused *ClientRateLimitError
		switch {
		case errors.As(err, &refused):
			refused.Method, refused.Path = r.method, r.wirePath(c)
			refused.Deadline, _ = ctx.Deadline()
			err = refused
		default:
			err = &TransportError{Method: r.method, Path: r.wirePath(c), Err: redactError(attemptTimeout(unwrapURLError(err)), l.secrets...)}
		}
	}
	if l.budgetSpent {
		err = &budgetError{err: err}
		o.obs.update(func(s *Summary) { s.RetryBudgetExhausted = true })
	}
	if r.kind != retry.Idempotent && l.acted {
		err = &outcomeUnknownError{err: err}
	}
	if c.logger != nil && (l.n > 1 || l.budgetSpent || errors.Is(err, ErrOutcomeUnknown)) {
		c.logFailure(ctx, l, err)
	}
	return err
}

// unwrapURLError drops net/http's *url.Error wrapper, whose message
// repeats the whole URL: the SDK's error names the method and path once,
// cut to a bounded length, so that a long path never pushes the cause
// ("connection refused") out of the message.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// budgetError is the error of a call that was not retried because the
// client's retry budget was spent (see ErrRetryBudgetExhausted).
type budgetError struct{ err error }

func (e *budgetError) Error() string {
	return e.err.Error() + " (not retried: the client's retry budget is spent; see WithRetryBudget)"
}

func (e *budgetError) Unwrap() []error { return []error{e.err, ErrRetryBudgetExhausted} }

// ResponseMeta is what an API response said besides its body: filled by a
// call made with WithResponseInto. The SDK's calls return the decoded
// record only (most callers want nothing more), so the metadata is
// opt-in, as in openai-go, rather than a second return value as
// go-github's *Response.
//
// A call writes it when it returns, whether it succeeded or failed with an
// answer from the server (an *APIError carries the same request id). An
// iterator or a Wait writes it after each request: when the loop is over
// it holds the last page's or the last poll's. Read it after the call
// returns; one ResponseMeta serves one call at a time.
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
		if v := m.Header.Get("X-RateLimit-" + name); v != "" {
			return v
		}
		return m.Header.Get("RateLimit-" + name)
	}
	return get("Limit"), get("Remaining"), get("Reset")
}

// report writes what the request's last answer said to the call's
// ResponseMeta, if it asked for one, and tells the observer about an
// attempt whose answer was lost.
func (l *attemptLoop) report(ctx context.Context) {
	if l.lost {
		l.o.obs.markLost()
	}
	m := l.o.cfg.meta
	if m == nil {
		return
	}
	meta := ResponseMeta{Operation: l.o.name, StatusCode: l.status, Header: l.header, Attempts: l.n,
		EarlierAttemptOutcomeUnknown: l.lost}
	meta.RequestID = l.header.Get("X-Request-Id")
	l.o.cfg.metaOrder.write(l.seq, func() { *m = meta })
}

// metaOrder orders the writes of a call's ResponseMeta by its requests,
// which may run at once (a pager's next page leaves while the page before
// it is decoded; a download's ranges): a request's answer is written
// unless one of a request that started after it was already, so that
// the metadata holds the last request's, whichever ends first.
type metaOrder struct {
	mu      sync.Mutex
	started uint64 // requests begun
	written uint64 // the number of the request whose answer is written
}

// next numbers a request of the call as it begins.
func (m *metaOrder) next() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started++
	return m.started
}

// write runs set, the write of request seq's answer, unless a later
// request's is written.
func (m *metaOrder) write(seq uint64, set func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if seq >= m.written {
		m.written = seq
		set()
	}
}

// joinURL joins path and the encoded query to base, in a URL of its own.
func joinURL(base *url.URL, path string, q any) (*url.URL, error) {
	// path arrives escaped (ids went through url.PathEscape), so it is the
	// wire form: keep it as RawPath, with Path its unescaped twin, and
	// url.URL does not escape it a second time.
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			// url.PathEscape keeps dots, and a server would resolve them
			// to another path: no record has such an id.
			return nil, invalidArg("id", "%q cannot be an id: in a URL path it names another resource", seg)
		}
	}
	u := new(url.URL)
	*u = *base
	u.RawPath = strings.TrimRight(base.EscapedPath(), "/") + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("lendgraph: path %q is not escaped correctly: %w", truncate(path, maxQuoted), err)
	}
	u.Path = p
	if q != nil {
		var vals url.Values
		switch v := q.(type) {
		case url.Values:
			vals = v
		default:
			rv := reflect.ValueOf(q)
			if rv.Kind() == reflect.Pointer && rv.IsNil() {
				break
			}
			if vals, err = query.Values(q); err != nil {
				return nil, fmt.Errorf("lendgraph: encoding query for %s: %w", truncate(path, maxQuoted), err)
			}
		}
		u.RawQuery = vals.Encode()
	}
	return u, nil
}

func readCapped(r io.Reader, limit int64) ([]byte, bool) {
	b, _ := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(b)) > limit {
		return b[:limit], true
	}
	return b, false
}

// capReader reads at most left bytes of r. Past that the stream is cut
// (tooLarge nil), or fails with tooLarge once a byte beyond the cap shows
// up; a stream of exactly the cap ends normally either way.
type capReader struct {
	r        io.Reader
	left     int64
	tooLarge error
}

// Read implements io.Reader.
func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.tooLarge == nil {
			return 0, io.EOF
		}
		var one [1]byte
		if n, _ := io.ReadFull(c.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, c.tooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// unmarshalMode decodes b into out, leniently or strictly
// (WithLenientDecoding).
func unmarshalMode(b []byte, out any, lenient bool) error {
	if lenient {
		return jsonv2.Unmarshal(b, out, lenientJSONOptions)
	}
	return unmarshal(b, out)
}

// Do sends an arbitrary request to the API, for endpoints the SDK does not
// wrap yet. path is relative to the base URL (e.g. "/v1/something"), body is
// encoded as JSON when non-nil, and a 2xx JSON response is decoded into out
// when out is non-nil. GET, HEAD, PUT, DELETE and OPTIONS are retried like
// reads; other methods only when the server certainly did not act. Its
// operation is named "Client.Do".
func (c *Client) Do(ctx context.Context, method, path string, body, out any, opts ...Option) error {
	ctx, o, err := c.begin(ctx, "Client.Do", opts)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(path, "/") {
		err = invalidArg("path", "%q must start with / and be relative to the base URL", truncate(path, maxQuoted))
		o.end(err)
		return err
	}
	kind := retry.Unrepeatable
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		kind = retry.Idempotent
	}
	p, q, _ := strings.Cut(path, "?")
	var qa any
	if q != "" {
		vals, perr := url.ParseQuery(q)
		if perr != nil {
			err = invalidArg("path", "query string: %v", perr)
			o.end(err)
			return err
		}
		qa = vals
	}
	_, err = o.send(ctx, request{method: method, path: p, query: qa, body: body, kind: kind}, out)
	o.end(err)
	return err
}

// call runs one request as the whole operation name and returns the
// decoded answer: its data member when r.data is set.
func call[T any](ctx context.Context, c *Client, name string, opts []Option, r request) (*T, error) {
	ctx, o, err := c.begin(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	out, err := sendFor[T](ctx, o, r)
	o.end(err)
	return out, err
}

// sendFor sends r in operation o and returns the decoded answer: its
// data member when r.data is set.
func sendFor[T any](ctx context.Context, o *operation, r request) (*T, error) {
	if r.data {
		var env struct {
			Data T `json:"data"`
		}
		if _, err := o.send(ctx, r, &env); err != nil {
			return nil, err
		}
		return &env.Data, nil
	}
	var out T
	if _, err := o.send(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
