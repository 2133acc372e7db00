package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// sameOrigin reports whether u is the configured API host (scheme, host and port).
func (c *Client) sameOrigin(u *url.URL) bool {
	return u.Scheme == c.base.Scheme && strings.EqualFold(u.Host, c.base.Host)
}

// checkRedirect refuses to re-send a request body to another origin (a 307
// or 308 after a POST) and otherwise defers to the user's policy. The key is
// not carried across hosts because apiTransport adds it per request, only
// for the API origin, so Go's client never has it to copy.
func (c *Client) checkRedirect(user func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0]
		if !sameOriginURL(req.URL, first.URL) {
			// Go's client keeps Authorization for the same host name on
			// another port or scheme, and for subdomains: a search token
			// (or a key) must not follow a redirect off its origin.
			req.Header.Del("Authorization")
			req.Header.Del("x-api-key")
		}
		if !c.sameOrigin(req.URL) || !sameOriginURL(req.URL, first.URL) {
			if req.Method != http.MethodGet && req.Method != http.MethodHead {
				return fmt.Errorf("lendgraph: refusing to follow a %s redirect to another host (%s): %w",
					req.Method, req.URL.Host, retry.ErrNoRetry)
			}
		}
		if user != nil {
			return user(req, via)
		}
		if len(via) >= 10 {
			return fmt.Errorf("lendgraph: stopped after 10 redirects: %w", retry.ErrNoRetry)
		}
		return nil
	}
}

func sameOriginURL(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
}

// apiTransport adds the credential, the User-Agent and the client-side rate
// limit to requests for the API origin. It sits under the retry layer, so
// every attempt waits for a rate token and carries the key.
type apiTransport struct {
	next    http.RoundTripper
	client  *Client
	limiter *rate.Limiter
}

func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.client
	if !c.sameOrigin(req.URL) {
		// A redirect left the API host: send it bare.
		r := req.Clone(req.Context())
		r.Header.Del("x-api-key")
		r.Header.Del("Authorization")
		return t.next.RoundTrip(r)
	}
	if t.limiter != nil {
		if err := t.limiter.Wait(req.Context()); err != nil {
			if req.Context().Err() != nil {
				return nil, req.Context().Err()
			}
			// rate.Limiter fails at once when the next token comes after
			// the deadline; make that recognisable as a deadline, and
			// final: a retry would fail the same way.
			return nil, retry.Final(fmt.Errorf("lendgraph: client rate limit: no request slot before the context deadline: %w", context.DeadlineExceeded))
		}
	}
	if n, ok := req.Context().Value(attemptsKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	r := req.Clone(req.Context())
	if c.bearer {
		r.Header.Set("Authorization", "Bearer "+string(*c.key))
	} else {
		r.Header.Set("x-api-key", string(*c.key))
	}
	o, _ := req.Context().Value(outcomeKey{}).(*outcome)
	if o != nil {
		if err := req.Context().Err(); err != nil {
			return nil, err // ended before sending: nothing happened
		}
		o.acted.Store(true) // from here on the server may act
	}
	resp, err := t.next.RoundTrip(r)
	if o != nil {
		o.observe(resp, err)
	}
	return resp, err
}

type outcomeKey struct{}

// outcome follows the attempts of one call that charges or acts, to tell
// "nothing happened" from "the server may have acted" when it fails.
type outcome struct {
	kind  retry.Kind
	acted atomic.Bool // the last attempt may have reached the server and been acted on
}

// trackOutcome returns a context in which the API transport records
// whether the call's last attempt may have been acted on.
func trackOutcome(ctx context.Context, k retry.Kind) (context.Context, *outcome) {
	o := &outcome{kind: k}
	return context.WithValue(ctx, outcomeKey{}, o), o
}

// observe judges one attempt's result: a connection that never opened and
// an answer below 500 but 2xx (a refusal: 4xx, 429; a redirect) mean the
// server did not act, and so does a 502 to a Launch call (the reference:
// "job failed to launch; safe to retry"). A 2xx, any other 5xx, or an
// error once the request may have been sent (a reset, a timeout, a cancel
// in flight) leave the outcome unknown.
func (o *outcome) observe(resp *http.Response, err error) {
	switch {
	case err != nil:
		if retry.NotSent(err) {
			o.acted.Store(false)
		}
	case resp.StatusCode < 200 || resp.StatusCode >= 300 && resp.StatusCode < 500,
		resp.StatusCode == http.StatusNotImplemented,
		o.kind == retry.Launch && resp.StatusCode == http.StatusBadGateway:
		o.acted.Store(false)
	}
}

func (o *outcome) mayHaveActed() bool { return o.acted.Load() }

type attemptsKey struct{}

// countAttempts returns a context in which the pipeline counts the attempts
// it sends to the API host, retries included.
func countAttempts(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

// logTransport logs each attempt at debug level: method, host, path, status,
// duration. Never headers, query strings or bodies.
type logTransport struct {
	next   http.RoundTripper
	logger *slog.Logger
}

func (t *logTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.logger == nil {
		return t.next.RoundTrip(req)
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	attrs := []any{"method", req.Method, "host", req.URL.Host, "path", req.URL.Path, "duration", time.Since(start)}
	if err != nil {
		t.logger.LogAttrs(req.Context(), slog.LevelDebug, "lendgraph: request failed", slog.Group("", attrs...), slog.String("error", redactError(err).Error()))
		return resp, err
	}
	attrs = append(attrs, "status", resp.StatusCode)
	if id := resp.Header.Get("X-Request-Id"); id != "" {
		attrs = append(attrs, "request_id", id)
	}
	t.logger.LogAttrs(req.Context(), slog.LevelDebug, "lendgraph: request", slog.Group("", attrs...))
	return resp, nil
}

// redactError strips query strings (signed-link signatures) from the URLs
// that net/http puts in its errors.
func redactError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
			u.RawQuery = "REDACTED"
			cp := *ue
			cp.URL = u.String()
			return &cp
		}
	}
	return err
}

// defaultTransport is the transport of a client built without
// WithHTTPClient: its own connection pool (not the process-wide
// http.DefaultTransport), keeping enough idle connections per host for a
// pager's prefetch, concurrent goroutines and the search host.
func defaultTransport() http.RoundTripper {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport // replaced by the program: respect that
	}
	t := dt.Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}
