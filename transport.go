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
// or 308 after a POST), refuses a redirect to an address checkLink refuses
// (another scheme than http(s), or plain http when the API is https), and
// otherwise defers to the user's policy. The key is not carried across
// hosts because apiTransport adds it per request, only for the API origin,
// so Go's client never has it to copy.
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
		if err := c.checkLink("redirect", req.URL); err != nil {
			return fmt.Errorf("%w: %w", err, retry.ErrNoRetry)
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

// linkError is a link checkLink refused. It never quotes the link, whose
// query string is a signature.
type linkError struct {
	what   string // "results link", "search host address", "redirect"
	host   string
	reason string
}

func (e *linkError) Error() string {
	s := "lendgraph: refusing to follow the " + e.what
	if e.host != "" {
		s += " to " + e.host
	}
	return s + ": " + e.reason
}

// Is matches ErrUnsafeLink.
func (e *linkError) Is(target error) bool { return target == ErrUnsafeLink }

// checkLink is the one rule for every address the SDK follows that the
// user did not configure: results and download links, the search host a
// token names, redirects. It must be an absolute http or https URL; plain
// http only when the API itself is http (a loopback fake) or the client was
// built WithInsecureHTTPLinks, so that a signed link, a search token and
// the data never cross the network unencrypted behind an https API. A link
// carrying the API key is refused too: the key goes to the API host only.
func (c *Client) checkLink(what string, u *url.URL) error {
	switch {
	case u.Scheme == "":
		return &linkError{what: what, reason: "it is not an absolute URL (no scheme); only http and https links are followed"}
	case u.Opaque != "" && strings.Trim(u.Opaque, "0123456789") == "":
		// "evil.example:443" parses as scheme "evil.example": a host and
		// port with no scheme (nothing else to quote, so no secret).
		return &linkError{what: what, reason: fmt.Sprintf("%q has no http or https scheme; only absolute http and https addresses are followed", u.Scheme+":"+u.Opaque)}
	case u.Scheme != "http" && u.Scheme != "https":
		return &linkError{what: what, reason: fmt.Sprintf("its scheme %q is not http or https", u.Scheme)}
	case u.Host == "":
		return &linkError{what: what, reason: "it names no host"}
	case u.Scheme == "http" && c.base.Scheme == "https" && !c.insecureLinks:
		return &linkError{what: what, host: u.Host, reason: "it is plain http while the API is https: the link and the data " +
			"would cross the network unencrypted (lendgraph.WithInsecureHTTPLinks allows it)"}
	}
	if redact(u.String(), string(*c.key)) != u.String() {
		return &linkError{what: what, host: u.Host, reason: "it carries the API key, which goes to the API host only"}
	}
	return nil
}

// checkLinkString is checkLink for a link as the server sent it.
func (c *Client) checkLinkString(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return &linkError{what: what, reason: "it is not a URL"}
	}
	return c.checkLink(what, u)
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
		var start time.Time
		if c.observer != nil {
			start = time.Now()
		}
		err := t.limiter.Wait(req.Context())
		if c.observer != nil {
			noteLimiterWait(req.Context(), time.Since(start))
		}
		if err != nil {
			if req.Context().Err() != nil {
				return nil, req.Context().Err()
			}
			// rate.Limiter fails at once when the next token comes after
			// the deadline, while the context is live: nothing was sent,
			// and a retry would fail the same way.
			return nil, retry.Final(&ClientRateLimitError{})
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
		if o.acted.Load() && req.Response == nil {
			// The attempt before this one may have been acted on and its
			// answer lost: the answer this one gets may not say so.
			if st := callStateFrom(req.Context()); st != nil {
				st.markLost()
			}
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

// logTransport logs each attempt at debug level: the operation, the
// attempt's number, why it follows a retry and how long the backoff slept,
// method, host, path (cut to maxQuoted bytes), status, duration. Never
// headers, query strings or bodies.
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
	var attrs []any
	if op := OperationFrom(req.Context()); op != "" {
		attrs = append(attrs, "operation", op)
	}
	if st := callStateFrom(req.Context()); st != nil {
		n, reason, backoff := st.attempt()
		attrs = append(attrs, "attempt", n)
		if reason != "" {
			attrs = append(attrs, "retry_reason", reason, "backoff", backoff)
		}
	}
	attrs = append(attrs, "method", req.Method, "host", req.URL.Host, "path", truncate(req.URL.Path, maxQuoted), "duration", time.Since(start))
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

// minSecret is the shortest string the redaction treats as a secret. A
// real key, search token or link signature is far longer; replacing a
// one-letter test key everywhere would garble every message and header.
const minSecret = 8

// redacted replaces a secret in text.
const redacted = "[redacted]"

// redact is the one redaction of text that may hold a secret: error bodies,
// response header values, URLs in errors. It replaces every secret (as it
// is and URL-escaped) with [redacted]; secrets shorter than minSecret are
// ignored.
func redact(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		s = strings.ReplaceAll(s, sec, redacted)
		if e := url.PathEscape(sec); e != sec {
			s = strings.ReplaceAll(s, e, redacted)
		}
		if e := url.QueryEscape(sec); e != sec {
			s = strings.ReplaceAll(s, e, redacted)
		}
	}
	return s
}

// redactError strips query strings (signed-link signatures) from the URLs
// that net/http puts in its errors, and applies redact with secrets to the
// URL and to the whole message. The result still unwraps to err's chain.
func redactError(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		cp := *ue
		if u, perr := url.Parse(ue.URL); perr == nil && u.RawQuery != "" {
			u.RawQuery = "REDACTED"
			cp.URL = u.String()
		} else if perr != nil {
			if base, _, found := strings.Cut(ue.URL, "?"); found {
				cp.URL = base + "?REDACTED"
			}
		}
		cp.URL = redact(cp.URL, secrets...)
		if cp.URL != ue.URL {
			err = &cp
		}
	}
	if msg := err.Error(); redact(msg, secrets...) != msg {
		return &redactedError{msg: redact(msg, secrets...), err: err}
	}
	return err
}

// redactedError is an error whose text held a secret: it prints the
// redacted text and unwraps to the original, for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactTransport applies redact to every response header before anything
// reads it (the pipeline, Go's redirect logic, the logger), so that a
// server echoing a secret in X-Request-Id, Content-Type, Content-Range or
// a redirect's Location puts it in no error and no log line. The secrets
// are the client's key, the credential the request carried (the key, or a
// search token as Bearer) and, for a request off the API origin (a signed
// link), the values of its query string; Location is spared the latter,
// since a storage host may legitimately redirect with the same signed
// query.
type redactTransport struct {
	next   http.RoundTripper
	client *Client
}

func (t *redactTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp == nil {
		return resp, err
	}
	creds := []string{string(*t.client.key), req.Header.Get("x-api-key"),
		strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")}
	var sig []string
	if !t.client.sameOrigin(req.URL) {
		for _, vs := range req.URL.Query() {
			sig = append(sig, vs...)
		}
	}
	for name, vs := range resp.Header {
		for i, v := range vs {
			v = redact(v, creds...)
			if name != "Location" {
				v = redact(v, sig...)
			}
			vs[i] = v
		}
	}
	return resp, err
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
