package lendgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	method string
	path   string // relative to the base URL, e.g. "/v1/agents"
	query  any    // a struct for go-querystring, or url.Values
	body   any    // encoded as JSON when non-nil
	kind   retry.Kind
	// header, when set, receives the headers of the response decoded
	// into out (the search token reads the server's Date).
	header *http.Header
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
	var acted *outcome
	if r.kind == retry.Unrepeatable || r.kind == retry.Launch {
		ctx, acted = trackOutcome(ctx, r.kind)
	}
	status, err := c.sendRetrying(ctx, r, out)
	if err != nil && acted != nil && acted.mayHaveActed() {
		err = &outcomeUnknownError{err: err}
	}
	return status, err
}

func (c *Client) sendRetrying(ctx context.Context, r request, out any) (int, error) {
	for attempt := 0; ; attempt++ {
		status, err := c.sendOnce(ctx, r, out)
		// A body cut mid-way is a transport failure that retryablehttp
		// never sees (it hands over the response before the body is read):
		// repeat the calls that may be repeated, within the same limits.
		var de *DecodeError
		if err == nil || r.kind != retry.Idempotent || attempt >= c.policy.MaxRetries ||
			!errors.As(err, &de) || !retry.Interrupted(de.Err) || !c.policy.Spend() {
			return status, err
		}
		if retry.Wait(ctx, c.policy.Jitter(attempt)) != nil {
			return status, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, ctxErr(ctx))
		}
		reflect.ValueOf(out).Elem().SetZero() // no half-decoded leftovers
	}
}

func (c *Client) sendOnce(ctx context.Context, r request, out any) (int, error) {
	resp, err := c.open(ctx, r)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if r.header != nil {
		*r.header = resp.Header
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return resp.StatusCode, nil
	}
	if err := decodeBody(resp.Body, out, maxResponseBody); err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return resp.StatusCode, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, cerr)
		}
		return resp.StatusCode, &DecodeError{Method: r.method, Path: r.path, StatusCode: resp.StatusCode,
			ContentType: resp.Header.Get("Content-Type"), RequestID: resp.Header.Get("X-Request-Id"), Err: attemptTimeout(err)}
	}
	return resp.StatusCode, nil
}

// open runs r through the pipeline and returns a 2xx response whose body
// the caller reads and closes. Non-2xx responses become typed errors.
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	if err := c.ready(ctx); err != nil {
		return nil, err
	}
	if *c.key == "" {
		return nil, ErrMissingAPIKey
	}
	u, err := c.url(r.path, r.query)
	if err != nil {
		return nil, err
	}
	var body any
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("lendgraph: encoding %s %s request: %w", r.method, r.path, err)
		}
		body = b
	}
	req, err := retryablehttp.NewRequestWithContext(retry.WithKind(ctx, r.kind), r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("lendgraph: building %s %s: %w", r.method, r.path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.api.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, cerr)
		}
		return nil, &TransportError{Method: r.method, Path: r.path, Err: redactError(attemptTimeout(err))}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, truncated := readCapped(resp.Body, maxErrorBody)
		// A server echoing the key back ("invalid key lg_...") must not
		// put it in an error text.
		b = bytes.ReplaceAll(b, []byte(*c.key), []byte("[redacted]"))
		return nil, parseError(r.method, r.path, resp.StatusCode, resp.Header, b, truncated, c.now())
	}
	return resp, nil
}

// url joins path and the encoded query to the base URL.
func (c *Client) url(path string, q any) (string, error) {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + path
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
			var err error
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
// over limit bytes and anything but whitespace after the value.
func decodeBody(r io.Reader, out any, limit int64) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	if err := unmarshalRead(lr, out); err != nil {
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
	_, err := c.send(ctx, request{method: method, path: p, query: qa, body: body, kind: kind}, out)
	return err
}

// dataEnvelope is the {data: ...} wrapper of the CRM, saved-filter and
// lender-channel answers.
type dataEnvelope[T any] struct {
	Data T `json:"data"`
}

// sendData runs r and returns the decoded data member of the answer.
func sendData[T any](ctx context.Context, c *Client, r request) (*T, error) {
	var env dataEnvelope[T]
	if _, err := c.send(ctx, r, &env); err != nil {
		return nil, err
	}
	return &env.Data, nil
}

// sendAs runs r and returns the decoded answer.
func sendAs[T any](ctx context.Context, c *Client, r request) (*T, error) {
	var out T
	if _, err := c.send(ctx, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
