package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// RoundTrip is the attempt's transport: it runs once for each hop of an
// attempt (a redirect the http.Client follows is a hop of the same
// attempt). For a hop to the API host it adds the call's headers and runs
// the middleware around the rest; then send.
func (l *attemptLoop) RoundTrip(req *http.Request) (*http.Response, error) {
	hop := l.hopTarget(req.URL)
	if hop != TargetAPI {
		return l.send(req, hop)
	}
	cfg := l.o.cfg
	if len(cfg.header) > 0 {
		req = withHeader(req, "", "")
		for name, vs := range cfg.header {
			req.Header[name] = append(req.Header[name], vs...)
		}
	}
	if len(cfg.middleware) == 0 {
		return l.send(req, hop)
	}
	return l.chain(0, req)
}

// chain runs middleware i and those after it around send.
func (l *attemptLoop) chain(i int, req *http.Request) (*http.Response, error) {
	mw := l.o.cfg.middleware
	if i == len(mw) {
		return l.send(req, TargetAPI)
	}
	resp, err := mw[i](req, func(r *http.Request) (*http.Response, error) { return l.chain(i+1, r) })
	if resp == nil && err == nil {
		// net/http would name the SDK's internal transport instead.
		return nil, fmt.Errorf("lendgraph: middleware %d of %d returned no response and no error", i+1, len(mw))
	}
	return resp, err
}

// hopTarget is where a hop goes: the host the request was made for, or,
// after a redirect off it, another host (TargetOther), which gets no
// credential, no call header and no trace context.
func (l *attemptLoop) hopTarget(u *url.URL) Target {
	t := l.r.target()
	var origin *url.URL
	switch t {
	case TargetAPI:
		origin = l.o.c.base
	case TargetSearchHost:
		origin = l.r.host
	default:
		return TargetStorage // a storage host may redirect within itself or to a mirror: links are links
	}
	if !sameOriginURL(u, origin) {
		return TargetOther
	}
	return t
}

// send is one hop: the client's rate limit and the credential (the API
// key for the API host, the search token for the search host, nothing
// for anyone else), whether a call that charges may have been acted on,
// the observer's attempt, the attempt timeout, the client's transport,
// and the redaction of the answer's headers.
func (l *attemptLoop) send(req *http.Request, hop Target) (*http.Response, error) {
	c := l.o.c
	ctx := req.Context()
	switch hop {
	case TargetAPI:
		if err := c.waitRateLimit(ctx, l.o.obs); err != nil {
			return nil, err
		}
		req = withHeader(req, c.auth().header, c.auth().value)
		if l.r.kind != retry.Idempotent || l.r.charges {
			if err := ctx.Err(); err != nil {
				return nil, err // ended before sending: nothing happened
			}
			if l.acted && req.Response == nil {
				// The attempt before this one may have been acted on and
				// its answer lost: the answer this one gets may not say so.
				l.lost = true
			}
			l.acted = true // from here on the server may act
		}
	case TargetSearchHost:
		req = withHeader(req, "Authorization", "Bearer "+l.r.bearer)
	}
	att := l.o.obs.startAttempt(ctx, l, req, hop)
	req, timed := l.timeAttempt(req)
	resp, err := c.transport.RoundTrip(req)
	resp, err = timed(resp, err)
	if l.r.kind != retry.Idempotent || l.r.charges {
		l.judge(resp, err)
	}
	if resp != nil {
		l.redactHeaders(req, resp, hop)
		l.status, l.header = resp.StatusCode, resp.Header
	}
	return att.end(resp, err)
}

// keyForms are the API key in the forms a request uses, worked out once
// per client: the header it travels in and that header's value, the
// secrets every error and header the SDK reads is redacted of, and their
// redactor.
type keyForms struct {
	header, value string
	secrets       []string
	redactor      redactor
}

func newKeyForms(key string, bearer bool) *keyForms {
	k := &keyForms{header: "X-Api-Key", value: key, secrets: []string{key}, redactor: newRedactor(key)}
	if bearer {
		k.header, k.value = "Authorization", "Bearer "+key
	}
	return k
}

// withHeader returns a copy of req for one hop, whose headers are its
// own: req's, with name set to value (when name is not empty). The copy
// shares the rest of req (its URL, its body), as Request.Clone's shallow
// fields do; nothing below the attempt's transport changes them.
func withHeader(req *http.Request, name, value string) *http.Request {
	r2 := new(http.Request)
	*r2 = *req
	n := 1
	for _, vs := range req.Header {
		n += len(vs)
	}
	// One backing array for every value, as Header.Clone does, each value
	// a slice of its own capacity so that an append copies.
	vals := make([]string, n)
	h := make(http.Header, len(req.Header)+1)
	for k, vs := range req.Header {
		if vs == nil {
			h[k] = nil // a nil value means something to the transport (no User-Agent)
			continue
		}
		m := copy(vals, vs)
		h[k], vals = vals[:m:m], vals[m:]
	}
	if name != "" {
		vals[0] = value
		h[name] = vals[:1:1]
	}
	r2.Header = h
	return r2
}

// judge records whether the server may have acted on a hop of a call that
// charges or acts: a connection that never opened and an answer below 500
// but 2xx (a refusal: 4xx, 429; a redirect) mean it did not, and so does a
// 502 to a Launch call (the reference: "job failed to launch; safe to
// retry"). A 2xx, any other 5xx, or an error once the request may have
// been sent (a reset, a timeout, a cancel in flight) leave the outcome
// unknown.
func (l *attemptLoop) judge(resp *http.Response, err error) {
	switch {
	case err != nil:
		if retry.NotSent(err) {
			l.acted = false
		}
	case resp.StatusCode < 200 || resp.StatusCode >= 300 && resp.StatusCode < 500,
		resp.StatusCode == http.StatusNotImplemented,
		l.r.kind == retry.Launch && resp.StatusCode == http.StatusBadGateway:
		l.acted = false
	}
}

// redactHeaders applies redact to every header of the answer before
// anything reads it (the loop, Go's redirect logic, the logger, the
// caller), so that a server echoing a secret in X-Request-Id,
// Content-Type, Content-Range or a redirect's Location puts it in no error
// and no log line. The secrets are the client's key, the credential the
// request carried and, for a signed link (whatever its host), the values
// of its query string; Location is spared the latter, since a storage
// host may legitimately redirect with the same signed query.
func (l *attemptLoop) redactHeaders(req *http.Request, resp *http.Response, hop Target) {
	red := l.redactor
	if extra := l.hopSecrets(req); len(extra) > 0 {
		red = newRedactor(append(slices.Clip(l.secrets), extra...)...)
	}
	var sig redactor
	if hop == TargetStorage || hop == TargetOther {
		var vals []string
		for _, vs := range req.URL.Query() {
			vals = append(vals, vs...)
		}
		sig = newRedactor(vals...)
	}
	for name, vs := range resp.Header {
		for i, v := range vs {
			v = red.redact(v)
			if name != "Location" {
				v = sig.redact(v)
			}
			vs[i] = v
		}
	}
}

// hopSecrets returns the credentials req carries (x-api-key, a bearer
// token) that are not among the request's secrets already: none unless
// a middleware or a redirect put another one there.
func (l *attemptLoop) hopSecrets(req *http.Request) []string {
	var extra []string
	for _, v := range [...]string{req.Header.Get("X-Api-Key"), strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")} {
		if len(v) >= minSecret && !slices.Contains(l.secrets, v) && !slices.Contains(extra, v) {
			extra = append(extra, v)
		}
	}
	return extra
}

// waitRateLimit takes a token of the client's rate limit (WithRateLimit)
// for an attempt to the API host.
func (c *Client) waitRateLimit(ctx context.Context, op *opState) error {
	if c.limiter == nil {
		return nil
	}
	start := time.Now()
	err := c.limiter.Wait(ctx)
	if d := time.Since(start); d >= time.Millisecond {
		op.event(Event{Kind: EventRateLimiterWait, Wait: d})
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// rate.Limiter fails at once when the next token comes after the
	// deadline, while the context is live: nothing was sent, and a retry
	// would fail the same way.
	return retry.Final(&ClientRateLimitError{})
}

// checkRedirect is the redirect policy of every request: it refuses to
// re-send a request body to another origin (a 307 or 308 after a POST),
// refuses a redirect to an address checkLink refuses, and otherwise defers
// to the policy of the http.Client given by WithHTTPClient. The key is not
// carried across hosts because the attempt's transport adds it per hop,
// only for the API origin, so Go's client never has it to copy.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
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
	if c.hc.CheckRedirect != nil {
		return c.hc.CheckRedirect(req, via)
	}
	if len(via) >= 10 {
		return fmt.Errorf("lendgraph: stopped after 10 redirects: %w", retry.ErrNoRetry)
	}
	return nil
}

// sameOrigin reports whether u is the configured API host (scheme, host and port).
func (c *Client) sameOrigin(u *url.URL) bool { return sameOriginURL(u, c.base) }

func sameOriginURL(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host)
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
// http only when the API itself is http (a loopback fake) or the client
// was built WithInsecureHTTPLinks, so that a signed link, a search token
// and the data never cross the network unencrypted behind an https API;
// never a link-local address (a cloud's metadata service) unless the API
// itself is on a local address; and, when the client has an allow-list
// (WithLinkHosts), one of its hosts. A link carrying the API key is
// refused too: the key goes to the API host only.
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
	if c.sameOrigin(u) {
		return nil // the API host itself serves it
	}
	host := strings.ToLower(u.Hostname())
	if linkLocal(host) && !c.localAPI {
		return &linkError{what: what, host: u.Host, reason: "it is a link-local address (such as a cloud's metadata service), " +
			"which a link from a remote API never names"}
	}
	if len(c.linkHosts) > 0 && !slices.ContainsFunc(c.linkHosts, func(p string) bool { return hostMatches(host, p) }) {
		return &linkError{what: what, host: u.Host, reason: "the host is not among the client's link hosts (WithLinkHosts)"}
	}
	if redact(u.String(), string(*c.key)) != u.String() {
		return &linkError{what: what, host: u.Host, reason: "it carries the API key, which goes to the API host only"}
	}
	return nil
}

// hostMatches reports whether host is pattern, or under it when pattern
// starts with a dot.
func hostMatches(host, pattern string) bool {
	if strings.HasPrefix(pattern, ".") {
		return strings.HasSuffix(host, pattern)
	}
	return host == pattern
}

// linkLocal reports whether host is a link-local IP address (169.254/16,
// fe80::/10).
func linkLocal(host string) bool {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && (a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast())
}

// localAddress reports whether host is a loopback, private or link-local
// address, or localhost: an API served there (a fake, a proxy on the same
// network) may hand out links to such addresses too.
func localAddress(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && (a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast())
}

// checkLinkString is checkLink for a link as the server sent it.
func (c *Client) checkLinkString(what, raw string) error {
	_, err := c.parseLink(what, raw)
	return err
}

// parseLink parses a link as the server sent it and checks it (checkLink).
func (c *Client) parseLink(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &linkError{what: what, reason: "it is not a URL"}
	}
	if err := c.checkLink(what, u); err != nil {
		return nil, err
	}
	return u, nil
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
	return newRedactor(secrets...).redact(s)
}

// redactor is redact with its secrets' forms worked out once: each secret
// as it is, path-escaped and query-escaped (the forms that differ), in
// that order. A client keeps the one of its key (Client.redactor), which
// redacts every header of every answer.
type redactor []string

// newRedactor returns the redactor of secrets.
func newRedactor(secrets ...string) redactor {
	var r redactor
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		r = append(r, sec)
		if e := url.PathEscape(sec); e != sec {
			r = append(r, e)
		}
		if e := url.QueryEscape(sec); e != sec {
			r = append(r, e)
		}
	}
	return r
}

// redact replaces every form of r's secrets in s with [redacted].
func (r redactor) redact(s string) string {
	for _, f := range r {
		s = strings.ReplaceAll(s, f, redacted)
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

// newTransport is the transport of a client built without WithHTTPClient:
// its own connection pool (released by Client.Close), keeping enough idle
// connections per host for a pager's prefetch, concurrent goroutines, a
// parallel download and the search host.
func newTransport() *http.Transport {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		dt = &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext}
	}
	t := dt.Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}

// portOf is u's port, or the scheme's default.
func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}
