package lendgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-querystring/query"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// DefaultBaseURL is the LendGraph API used when neither WithBaseURL nor
// $LENDGRAPH_BASE_URL says otherwise.
const DefaultBaseURL = "https://api.lendgraph.com"

// Version is the SDK version, sent in the User-Agent header.
const Version = "0.1.0"

// Environment variables read by NewClient when the matching option is absent.
const (
	EnvAPIKey  = "LENDGRAPH_API_KEY"
	EnvBaseURL = "LENDGRAPH_BASE_URL"
)

// Client is the entry point of the SDK. It is safe for concurrent use by
// many goroutines; create one and share it.
type Client struct {
	// Resource services: list, iterate, fetch and analyse records.
	Agents      *ResourceService[Agent]
	Originators *OriginatorsService
	Companies   *CompaniesService
	Loans       *ResourceService[Loan]
	Properties  *PropertiesService
	Branches    *ResourceService[Branch]
	Sales       *ResourceService[Sale]
	Market      *MarketService

	// Search is instant search, the search token and the search host.
	Search *SearchService
	// Locations is location autocomplete and retrieval.
	Locations *LocationsService
	// CRM holds tasks, meetings, calls, notes, shares and lender channels.
	CRM *CRMService
	// SavedFilters holds saved filters and saved CRM views.
	SavedFilters *SavedFiltersService
	// Integrations pushes records to a connected external CRM.
	Integrations *IntegrationsService

	key       *secret // a pointer: printing a Client copied by value shows an address
	bearer    bool
	base      *url.URL
	userAgent string
	logger    *slog.Logger
	policy    *retry.Policy
	api       *retryablehttp.Client // API host: key added, client-side rate limit
	plain     *retryablehttp.Client // signed links and other hosts: never a credential
	now       func() time.Time
}

type settings struct {
	key        *string
	baseURL    *string
	httpClient *http.Client
	maxRetries int
	limiter    *rate.Limiter
	logger     *slog.Logger
	userAgent  string
	bearer     bool
	retryBase  time.Duration
	retryMax   time.Duration
}

// Option configures a Client.
type Option func(*settings)

// WithAPIKey sets the API key. Without it NewClient reads $LENDGRAPH_API_KEY.
// The key is sent to the configured API host only, never to signed download
// links, the search host, or another host after a redirect.
func WithAPIKey(key string) Option { return func(s *settings) { s.key = &key } }

// WithBaseURL sets the API base address. Without it NewClient reads
// $LENDGRAPH_BASE_URL, then uses DefaultBaseURL.
func WithBaseURL(u string) Option { return func(s *settings) { s.baseURL = &u } }

// WithHTTPClient makes the SDK send through hc. Its Transport (and
// CheckRedirect, Jar, Timeout) are kept; the SDK wraps the transport with its
// own layers and never replaces or mutates hc.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.httpClient = hc } }

// WithMaxRetries sets how many times one call is retried at most (default 3;
// 0 disables retries).
func WithMaxRetries(n int) Option { return func(s *settings) { s.maxRetries = n } }

// WithRetryBackoff sets the first step and the bound of the exponential
// backoff between retries (defaults 250ms and 8s). A server's Retry-After is
// honoured regardless (up to a minute). Tests against lendgraphtest use a few
// milliseconds.
func WithRetryBackoff(base, max time.Duration) Option {
	return func(s *settings) { s.retryBase, s.retryMax = base, max }
}

// WithRateLimit limits the requests this client sends to the API host to r
// per second with bursts of burst. Every attempt, retries included, takes a
// token; waiting honours the call's context.
func WithRateLimit(r rate.Limit, burst int) Option {
	return func(s *settings) { s.limiter = rate.NewLimiter(r, burst) }
}

// WithLogger logs each attempt (method, path, status, duration; never a key,
// token, header or query string) at debug level. Nothing is logged by default.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithUserAgent prepends ua to the SDK's User-Agent header.
func WithUserAgent(ua string) Option { return func(s *settings) { s.userAgent = ua } }

// WithBearerAuth sends the key as "Authorization: Bearer <key>" instead of
// the x-api-key header.
func WithBearerAuth() Option { return func(s *settings) { s.bearer = true } }

// NewClient returns a client configured by opts. A missing API key is not an
// error here: calls that need it fail with ErrMissingAPIKey.
func NewClient(opts ...Option) (*Client, error) {
	s := settings{maxRetries: 3}
	for _, o := range opts {
		o(&s)
	}
	key := os.Getenv(EnvAPIKey)
	if s.key != nil {
		key = *s.key
	}
	if strings.ContainsAny(key, "\r\n") {
		return nil, errors.New("lendgraph: the API key contains a line break; check how it was read (a trailing newline from a file?)")
	}
	key = strings.TrimSpace(key)
	raw := os.Getenv(EnvBaseURL)
	if s.baseURL != nil {
		raw = *s.baseURL
	}
	if raw == "" {
		raw = DefaultBaseURL
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("lendgraph: base URL %q must be an absolute http or https URL", raw)
	}
	if s.maxRetries < 0 {
		return nil, fmt.Errorf("lendgraph: WithMaxRetries(%d): use 0 to disable retries", s.maxRetries)
	}
	policy := retry.New()
	policy.MaxRetries = s.maxRetries
	if s.retryBase > 0 {
		policy.BaseDelay = s.retryBase
	}
	if s.retryMax > 0 {
		policy.MaxDelay = max(s.retryMax, policy.BaseDelay)
	}
	ua := "lendgraph-go/" + Version
	if s.userAgent != "" {
		ua = s.userAgent + " " + ua
	}
	c := &Client{
		key:       (*secret)(&key),
		bearer:    s.bearer,
		base:      base,
		userAgent: ua,
		logger:    s.logger,
		policy:    policy,
		now:       time.Now,
	}
	hc := s.httpClient
	if hc == nil {
		hc = &http.Client{Transport: defaultTransport()}
	}
	inner := hc.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	logged := &logTransport{next: inner, logger: c.logger}
	apiHC := *hc
	apiHC.Transport = &apiTransport{next: logged, client: c, limiter: s.limiter}
	apiHC.CheckRedirect = c.checkRedirect(hc.CheckRedirect)
	plainHC := *hc
	plainHC.Transport = logged
	plainHC.CheckRedirect = c.checkRedirect(hc.CheckRedirect)
	c.api = c.newRetryClient(&apiHC, s.maxRetries)
	c.plain = c.newRetryClient(&plainHC, s.maxRetries)

	c.Agents = newResource[Agent](c, resAgents)
	c.Originators = &OriginatorsService{ResourceService: newResource[Originator](c, resOriginators)}
	c.Companies = &CompaniesService{ResourceService: newResource[Company](c, resCompanies)}
	c.Loans = newResource[Loan](c, resLoans)
	c.Properties = &PropertiesService{ResourceService: newResource[Property](c, resProperties)}
	c.Branches = newResource[Branch](c, resBranches)
	c.Sales = newResource[Sale](c, resSales)
	c.Market = &MarketService{ResourceService: newResource[MarketRecord](c, resMarket)}
	c.Search = &SearchService{client: c}
	c.Locations = &LocationsService{client: c}
	c.CRM = &CRMService{client: c}
	c.SavedFilters = &SavedFiltersService{client: c}
	c.Integrations = &IntegrationsService{client: c}
	return c, nil
}

func (c *Client) newRetryClient(hc *http.Client, maxRetries int) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:   hc,
		Logger:       nil, // retryablehttp would print every URL to stderr
		RetryWaitMin: c.policy.BaseDelay,
		RetryWaitMax: c.policy.MaxDelay,
		RetryMax:     maxRetries,
		CheckRetry:   c.policy.CheckRetry,
		Backoff:      c.policy.Backoff,
		// Keep the last response so its status and body become an APIError.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
}

// BaseURL returns the API base address the client sends to.
func (c *Client) BaseURL() string { return c.base.String() }

// String describes the client without its credentials.
func (c *Client) String() string {
	return fmt.Sprintf("lendgraph.Client{BaseURL: %s, APIKey: %s}", c.base, *c.key)
}

// GoString is String: %#v must not print the key either.
func (c *Client) GoString() string { return c.String() }

// Format makes every verb (%v, %+v, %#v, %s) print String.
func (c *Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

// secret is a credential that prints as [redacted] with every verb, so even
// a Client copied by value and printed with %v does not show it.
type secret string

func (s secret) String() string {
	if s == "" {
		return "(none)"
	}
	return "[redacted]"
}

// GoString makes %#v print the redacted form too.
func (s secret) GoString() string { return s.String() }

// Format makes every verb print the redacted form.
func (s secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

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
			// the deadline; make that recognisable as a deadline.
			return nil, fmt.Errorf("lendgraph: client rate limit: no request slot before the context deadline: %w", context.DeadlineExceeded)
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
	return t.next.RoundTrip(r)
}

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

// request is one API call as the services describe it.
type request struct {
	method string
	path   string // relative to the base URL, e.g. "/v1/agents"
	query  any    // a struct for go-querystring, or url.Values
	body   any    // encoded as JSON when non-nil
	kind   retry.Kind
	host   *otherHost // nil: the API host, with the API key
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
// (when out is non-nil). It returns the final status code.
func (c *Client) send(ctx context.Context, r request, out any) (int, error) {
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
		if werr := retry.Wait(ctx, c.policy.Jitter(attempt)); werr != nil {
			return status, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, werr)
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
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return resp.StatusCode, nil
	}
	if err := decodeBody(resp.Body, out, maxResponseBody); err != nil {
		return resp.StatusCode, &DecodeError{Method: r.method, Path: r.path, StatusCode: resp.StatusCode,
			ContentType: resp.Header.Get("Content-Type"), RequestID: resp.Header.Get("X-Request-Id"), Err: err}
	}
	return resp.StatusCode, nil
}

// open runs r through the pipeline and returns a 2xx response whose body
// the caller reads and closes. Non-2xx responses become typed errors.
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	base, hc := c.base, c.api
	if r.host != nil {
		base, hc = r.host.base, c.plain
	} else if *c.key == "" {
		return nil, ErrMissingAPIKey
	}
	u, err := joinURL(base, r.path, r.query)
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
	if r.host != nil {
		req.Header.Set("Authorization", "Bearer "+r.host.bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if resp != nil {
			resp.Body.Close()
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lendgraph: %s %s: %w", r.method, r.path, ctx.Err())
		}
		return nil, &TransportError{Method: r.method, Path: r.path, Err: redactError(err)}
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		b, truncated := readCapped(resp.Body, maxErrorBody)
		// A server echoing the key back ("invalid key lg_...") must not
		// put it in an error text.
		b = redactBytes(b, string(*c.key))
		if r.host != nil {
			b = redactBytes(b, r.host.bearer)
			return nil, r.host.parseError(resp.StatusCode, resp.Header, b, truncated)
		}
		return nil, parseError(r.method, r.path, resp.StatusCode, resp.Header, b, truncated, c.now())
	}
	return resp, nil
}

// redactBytes replaces every occurrence of secret in b.
func redactBytes(b []byte, secret string) []byte {
	if secret == "" {
		return b
	}
	return bytes.ReplaceAll(b, []byte(secret), []byte("[redacted]"))
}

// joinURL joins path and the encoded query to base.
func joinURL(base *url.URL, path string, q any) (string, error) {
	u := *base
	u.Path = strings.TrimRight(base.Path, "/") + path
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

// DecodeError is a 2xx response whose body could not be decoded: truncated
// JSON, an HTML page from a proxy, a wrong content type.
type DecodeError struct {
	Method, Path string
	StatusCode   int
	ContentType  string
	RequestID    string
	Err          error
}

// Error implements the error interface.
func (e *DecodeError) Error() string {
	s := fmt.Sprintf("lendgraph: %s %s: decoding %d response", e.Method, e.Path, e.StatusCode)
	if e.ContentType != "" {
		s += " (" + e.ContentType + ")"
	}
	s += ": " + e.Err.Error()
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *DecodeError) Unwrap() error { return e.Err }

// TransportError is a request that got no HTTP response: connection refused
// or reset, a timeout, a refused redirect. URLs in it carry no query string.
type TransportError struct {
	Method, Path string
	Err          error
}

// Error implements the error interface.
func (e *TransportError) Error() string {
	return fmt.Sprintf("lendgraph: %s %s: %v", e.Method, e.Path, e.Err)
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *TransportError) Unwrap() error { return e.Err }

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
