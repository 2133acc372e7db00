package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/google/go-querystring/query"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// request is one API call as the services describe it.
type request struct {
	// op names the SDK operation ("Agents.List"): see OperationFrom. It is
	// what the logs, a middleware and a trace call the request.
	op     string
	method string
	path   string // relative to the base URL, e.g. "/v1/agents"
	query  any    // a struct for go-querystring, or url.Values
	body   any    // encoded as JSON when non-nil
	kind   retry.Kind
	// charges marks a call that is repeated like a read but may debit a
	// credit (Enrich without Refresh): the pipeline notes whether a lost
	// attempt may have charged before the answer that arrived.
	charges bool
	data    bool       // the answer wraps the result in {"data": ...}
	host    *otherHost // nil: the API host, with the API key
	// header, when set, receives the headers of the response decoded
	// into out (the search token reads the server's Date).
	header *http.Header
}

// otherHost is a host other than the API's (the search host). Requests to
// it go through the credential-free client with its own bearer token,
// never the API key, and its error bodies are read by its own parser.
type otherHost struct {
	base       *url.URL
	bearer     string // sent as "Authorization: Bearer"; redacted from error bodies
	parseError func(status int, h http.Header, body []byte, truncated bool) error
}

// maxResponseBody caps a JSON response read into memory.
const maxResponseBody = 64 << 20

// send runs r through the pipeline and decodes a 2xx JSON body into out
// (when out is non-nil). It returns the final status code. A failed call
// that charges or acts (kind Unrepeatable or Launch) whose request may
// have reached the server returns an error matching ErrOutcomeUnknown.
func (c *Client) send(ctx context.Context, r request, out any) (int, error) {
	if err := c.ready(ctx); err != nil {
		return 0, err
	}
	if o := callOptionsFrom(ctx); o != nil && o.invalid != nil {
		return 0, o.invalid
	}
	ctx = withOperation(ctx, r.op)
	st := callStateFrom(ctx)
	if st == nil {
		ctx, st = trackCall(ctx)
	}
	ctx, op := c.joinOp(ctx, r.opLabel())
	ctx = c.trackRequest(ctx, r.target(), r.origin(c), r.path)
	var acted *outcome
	if r.kind == retry.Unrepeatable || r.kind == retry.Launch || r.charges {
		ctx, acted = trackOutcome(ctx, r.kind)
	}
	status, err := c.sendRetrying(ctx, r, out, st)
	if err != nil && acted != nil && r.kind != retry.Idempotent && acted.mayHaveActed() {
		err = &outcomeUnknownError{err: err}
	}
	if err == nil {
		opFrom(ctx).page()
	}
	if st.lostAttempt() {
		opFrom(ctx).markLost()
	}
	st.report(ctx, OperationFrom(ctx))
	if err != nil {
		if n, _, _ := st.attempt(); n > 1 && c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "lendgraph: call failed after retries",
				slog.String("operation", OperationFrom(ctx)), slog.String("method", r.method),
				slog.String("path", truncate(r.path, maxQuoted)), slog.Int("attempts", n), slog.String("error", err.Error()))
		}
	}
	op.end(err)
	return status, err
}

// opLabel names r's operation: its op, or for a request no method names
// (Client.Do) its method and templated path.
func (r request) opLabel() string {
	if r.op != "" {
		return r.op
	}
	return r.method + " " + urlTemplate(r.path)
}

// target is the kind of host r goes to.
func (r request) target() Target {
	if r.host != nil {
		return TargetSearchHost
	}
	return TargetAPI
}

// origin is the base URL r is sent under.
func (r request) origin(c *Client) *url.URL {
	if r.host != nil {
		return r.host.base
	}
	return c.base
}

func (c *Client) sendRetrying(ctx context.Context, r request, out any, st *callState) (int, error) {
	for attempt := 0; ; attempt++ {
		status, err := c.sendOnce(ctx, r, out, st)
		// A body cut mid-way is a transport failure that retryablehttp
		// never sees (it hands over the response before the body is read):
		// repeat the calls that may be repeated, within the same limits.
		var de *DecodeError
		if err == nil || r.kind != retry.Idempotent || attempt >= c.maxRetries(ctx) ||
			!errors.As(err, &de) || !retry.Interrupted(de.Err) || !c.policy.Spend() {
			return status, err
		}
		st.retryNext("response body cut")
		if retry.Wait(ctx, c.policy.Jitter(attempt)) != nil {
			return status, fmt.Errorf("lendgraph: %s %s: %w", r.method, truncate(r.path, maxQuoted), ctxErr(ctx))
		}
		reflect.ValueOf(out).Elem().SetZero() // no half-decoded leftovers
	}
}

// maxRetries is the retry limit of a call made with ctx: its own
// (CallMaxRetries) or the client's.
func (c *Client) maxRetries(ctx context.Context) int {
	if o := callOptionsFrom(ctx); o != nil && o.maxRetries != nil {
		return *o.maxRetries
	}
	return c.policy.MaxRetries
}

// lenientDecoding reports whether a call made with ctx decodes leniently.
func (c *Client) lenientDecoding(ctx context.Context) bool {
	if o := callOptionsFrom(ctx); o != nil && o.lenient != nil {
		return *o.lenient
	}
	return c.lenient
}

func (c *Client) sendOnce(ctx context.Context, r request, out any, st *callState) (int, error) {
	resp, err := c.open(ctx, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	st.answered(resp.StatusCode, resp.Header)
	if r.header != nil {
		*r.header = resp.Header
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return resp.StatusCode, nil
	}
	if err := decodeBody(resp.Body, out, maxResponseBody, c.lenientDecoding(ctx)); err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return resp.StatusCode, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, cerr)
		}
		// The headers are redacted already (redactTransport); the decoder's
		// message may quote the body.
		return resp.StatusCode, &DecodeError{Method: r.method, Path: c.wirePath(r), StatusCode: resp.StatusCode,
			ContentType: resp.Header.Get("Content-Type"), RequestID: resp.Header.Get("X-Request-Id"),
			Err: redactError(attemptTimeout(err), string(*c.key))}
	}
	return resp.StatusCode, nil
}

// open runs r through the pipeline and returns a 2xx response whose body
// the caller reads and closes. Non-2xx responses become typed errors.
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if o := callOptionsFrom(ctx); o != nil && o.invalid != nil {
		return nil, o.invalid
	}
	ctx = withOperation(ctx, r.op)
	base, hc := c.base, c.api
	if r.host != nil {
		base, hc = r.host.base, c.plain
	} else if *c.key == "" {
		return nil, &MissingAPIKeyError{Operation: OperationFrom(ctx)}
	}
	u, err := joinURL(base, r.path, r.query)
	if err != nil {
		return nil, err
	}
	var body any
	if r.body != nil {
		b, err := marshal(r.body)
		if err != nil {
			// Only what the caller put in the request can fail to encode
			// (a filter value such as a channel, a func or a NaN).
			return nil, &InvalidArgumentError{Arg: "request body", Problem: fmt.Sprintf("cannot be encoded as JSON for %s %s: %v", r.method, r.path, err)}
		}
		body = b
	}
	req, err := retryablehttp.NewRequestWithContext(retry.WithCall(ctx, r.kind, c.maxRetries(ctx)), r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("lendgraph: building %s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	secrets := []string{string(*c.key)}
	if r.host != nil {
		req.Header.Set("Authorization", "Bearer "+r.host.bearer)
		secrets = append(secrets, r.host.bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, fmt.Errorf("lendgraph: %s %s: %w", r.method, truncate(r.path, maxQuoted), cerr)
		}
		var refused *ClientRateLimitError
		if errors.As(err, &refused) {
			refused.Method, refused.Path = r.method, c.wirePath(r)
			refused.Deadline, _ = ctx.Deadline()
			return nil, refused
		}
		return nil, &TransportError{Method: r.method, Path: c.wirePath(r), Err: redactError(attemptTimeout(err), secrets...)}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		if st := callStateFrom(ctx); st != nil {
			st.answered(resp.StatusCode, resp.Header)
		}
		b, truncated := readCapped(resp.Body, maxErrorBody)
		// A server echoing the key back ("invalid key lg_...") must not
		// put it in an error text (its headers are redacted already).
		b = []byte(redact(string(b), secrets...))
		var err error
		if r.host != nil {
			err = r.host.parseError(resp.StatusCode, resp.Header, b, truncated)
		} else {
			err = parseError(r.method, c.wirePath(r), resp.StatusCode, resp.Header, b, truncated, c.now())
		}
		if d, ok := retry.RetryAfter(resp.Header, c.now()); ok {
			// An answer asking for longer than the client waits was not
			// retried: say so, whatever its status.
			var base *APIError
			if errors.As(err, &base) {
				if rl := c.refuseWait(base, d); rl != nil {
					return nil, rl
				}
			}
		}
		return nil, err
	}
	return resp, nil
}

// wirePath is the path r is sent to, as errors name it: the base URL's
// path prefix (a gateway's "/gw") and r's path, without the query.
func (c *Client) wirePath(r request) string {
	base := c.base
	if r.host != nil {
		base = r.host.base
	}
	return strings.TrimRight(base.EscapedPath(), "/") + r.path
}

// joinURL joins path and the encoded query to base.
func joinURL(base *url.URL, path string, q any) (string, error) {
	// path arrives escaped (ids went through url.PathEscape), so it is the
	// wire form: keep it as RawPath, with Path its unescaped twin, and
	// url.URL does not escape it a second time.
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			// url.PathEscape keeps dots, and a server would resolve them
			// to another path: no record has such an id.
			return "", invalidArg("id", "%q cannot be an id: in a URL path it names another resource", seg)
		}
	}
	u := *base
	u.RawPath = strings.TrimRight(base.EscapedPath(), "/") + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return "", fmt.Errorf("lendgraph: path %q is not escaped correctly: %w", path, err)
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
				return "", fmt.Errorf("lendgraph: encoding query for %s: %w", path, err)
			}
		}
		u.RawQuery = vals.Encode()
	}
	return u.String(), nil
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

// decodeBody decodes exactly one JSON value from r into out, refusing bodies
// over limit bytes and anything but whitespace after the value; lenient
// sets aside record members of the wrong type (WithLenientDecoding).
func decodeBody(r io.Reader, out any, limit int64, lenient bool) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	if err := unmarshalReadMode(lr, out, lenient); err != nil {
		if lr.N <= 0 {
			return fmt.Errorf("response body larger than %d bytes", limit)
		}
		return err
	}
	return nil
}

// Do sends an arbitrary request to the API, for endpoints the SDK does not
// wrap yet. path is relative to the base URL (e.g. "/v1/something"), body is
// encoded as JSON when non-nil, and a 2xx JSON response is decoded into out
// when out is non-nil. GET, HEAD, PUT, DELETE and OPTIONS are retried like
// reads; other methods only when the server certainly did not act.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	if !strings.HasPrefix(path, "/") {
		return invalidArg("path", "%q must start with / and be relative to the base URL", path)
	}
	kind := retry.Unrepeatable
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		kind = retry.Idempotent
	}
	p, q, _ := strings.Cut(path, "?")
	var vals url.Values
	if q != "" {
		var err error
		if vals, err = url.ParseQuery(q); err != nil {
			return invalidArg("path", "query string: %v", err)
		}
	}
	var qa any
	if vals != nil {
		qa = vals
	}
	_, err := c.send(ctx, request{op: "Client.Do", method: method, path: p, query: qa, body: body, kind: kind}, out)
	return err
}

// call runs r through the pipeline and returns the decoded answer: its
// data member when r.data is set.
func call[T any](ctx context.Context, c *Client, r request) (*T, error) {
	if r.data {
		var env struct {
			Data T `json:"data"`
		}
		if _, err := c.send(ctx, r, &env); err != nil {
			return nil, err
		}
		return &env.Data, nil
	}
	var out T
	if _, err := c.send(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
