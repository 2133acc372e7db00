package lendgraph

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

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
	Agents      *AgentsService
	Originators *OriginatorsService
	Companies   *CompaniesService
	Loans       *LoansService
	Properties  *PropertiesService
	Branches    *BranchesService
	Sales       *SalesService
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

	key    *secret // a pointer: printing a Client copied by value shows an address
	bearer bool
	// insecureLinks lets links use plain http under an https API (WithInsecureHTTPLinks).
	insecureLinks bool
	base          *url.URL
	userAgent     string
	logger        *slog.Logger
	policy        *retry.Policy
	api           *retryablehttp.Client // API host: key added, client-side rate limit
	plain         *retryablehttp.Client // signed links and other hosts: never a credential
	now           func() time.Time
	conns         int       // connections of one download (WithDownloadConnections)
	part          int64     // bytes of one ranged request of a parallel download
	lenient       bool      // WithLenientDecoding
	observer      Observer  // WithObserver; nil: nothing is observed
	charges       *sync.Map // jobs whose charge the observer was told of (opState.chargedBy)

	// idleHook (tests) hears each time a connection of a parallel download
	// gives up, with the bytes left on the busiest other (download_sched.go).
	idleHook func(left int64)
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
	// maxServerWait is WithMaxServerWait's value, nil when not set.
	maxServerWait *time.Duration
	insecureLinks bool
	// invalid holds what options found wrong with their own arguments.
	invalid []error
	// attemptTimeout bounds one attempt (WithAttemptTimeout); 0: none.
	attemptTimeout time.Duration
	// downloadConns is nil for the default.
	downloadConns *int
	// middleware runs around each API attempt (WithMiddleware).
	middleware []Middleware
	// retryBudget is WithRetryBudget's size, nil for the default.
	retryBudget *int
	// lenient is WithLenientDecoding's setting.
	lenient bool
	// observer is WithObserver's.
	observer Observer
}

// NewClient returns a client configured by opts. Bad options (an empty or
// relative base URL, an API key with a line break, negative retries, a nil
// option or http.Client) are an *InvalidArgumentError. A missing API key is
// not an error here: calls that need it fail with a *MissingAPIKeyError,
// which matches ErrMissingAPIKey.
func NewClient(opts ...Option) (*Client, error) {
	s := settings{maxRetries: 3}
	for i, o := range opts {
		if o == nil {
			return nil, invalidArg("option", "option %d of %d is nil; leave an option out of the list instead of passing nil", i+1, len(opts))
		}
		o(&s)
	}
	if len(s.invalid) > 0 {
		return nil, s.invalid[0]
	}
	key := os.Getenv(EnvAPIKey)
	if s.key != nil {
		key = *s.key
	}
	if strings.ContainsAny(key, "\r\n") {
		return nil, invalidArg("WithAPIKey", "the API key contains a line break; check how it was read (a trailing newline from a file?)")
	}
	key = strings.TrimSpace(key)
	raw := os.Getenv(EnvBaseURL)
	if s.baseURL != nil {
		if *s.baseURL == "" {
			return nil, invalidArg("WithBaseURL", "the base URL is empty; pass an absolute http or https URL, or leave the option out for %s", DefaultBaseURL)
		}
		raw = *s.baseURL
	}
	if raw == "" {
		raw = DefaultBaseURL
	}
	base, err := parseBaseURL(raw)
	if err != nil {
		return nil, err
	}
	if s.attemptTimeout < 0 {
		return nil, fmt.Errorf("lendgraph: WithAttemptTimeout(%s): use 0 for no per-attempt timeout", s.attemptTimeout)
	}
	if s.maxRetries < 0 {
		return nil, invalidArg("WithMaxRetries", "%d is negative; use 0 to disable retries", s.maxRetries)
	}
	conns := DefaultDownloadConnections
	if s.downloadConns != nil {
		conns = *s.downloadConns
		if conns < 1 || conns > maxDownloadConnections {
			return nil, fmt.Errorf("lendgraph: WithDownloadConnections(%d): use 1 to %d (1 downloads over a single connection)", conns, maxDownloadConnections)
		}
	}
	policy := retry.New()
	policy.MaxRetries = s.maxRetries
	if s.retryBase > 0 {
		policy.BaseDelay = s.retryBase
	}
	if s.retryMax > 0 {
		policy.MaxDelay = max(s.retryMax, policy.BaseDelay)
	}
	if s.maxServerWait != nil {
		if *s.maxServerWait <= 0 {
			return nil, fmt.Errorf("lendgraph: WithMaxServerWait(%s): the cap must be positive", *s.maxServerWait)
		}
		policy.MaxServerWait = *s.maxServerWait
	}
	if s.retryBudget != nil {
		policy.Budget = nil // 0: no budget
		if *s.retryBudget > 0 {
			policy.Budget = retry.NewBudget(*s.retryBudget)
		}
	}
	ua := "lendgraph-go/" + Version
	if s.userAgent != "" {
		ua = s.userAgent + " " + ua
	}
	c := &Client{
		key:           (*secret)(&key),
		bearer:        s.bearer,
		base:          base,
		insecureLinks: s.insecureLinks,
		userAgent:     ua,
		logger:        s.logger,
		policy:        policy,
		now:           time.Now,
		conns:         conns,
		part:          defaultPartSize,
		lenient:       s.lenient,
		observer:      s.observer,
		charges:       new(sync.Map),
	}
	hc := s.httpClient
	if hc == nil {
		hc = &http.Client{Transport: defaultTransport()}
	}
	inner := hc.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	// Always there: a call may set its own attempt timeout (CallAttemptTimeout).
	inner = &attemptTransport{next: inner, timeout: s.attemptTimeout}
	// Every response's headers are redacted before anything reads them.
	var logged http.RoundTripper = &logTransport{next: &redactTransport{next: inner, client: c}, logger: c.logger}
	if c.observer != nil {
		logged = &observeTransport{next: logged, client: c}
	}
	apiHC := *hc
	apiHC.Transport = &callTransport{next: &apiTransport{next: logged, client: c, limiter: s.limiter}, client: c, middleware: s.middleware}
	apiHC.CheckRedirect = c.checkRedirect(hc.CheckRedirect)
	plainHC := *hc
	plainHC.Transport = logged
	plainHC.CheckRedirect = c.checkRedirect(hc.CheckRedirect)
	c.api = c.newRetryClient(&apiHC)
	c.plain = c.newRetryClient(&plainHC)

	c.Agents = &AgentsService{newResource[Agent](c, "agents"), &AnalyticsService{c, "agents"}, &DeliveryService[Agent]{c, "agents"}}
	c.Originators = &OriginatorsService{newResource[Originator](c, "originators"), &AnalyticsService{c, "originators"}, &DeliveryService[Originator]{c, "originators"}, c}
	c.Companies = &CompaniesService{newResource[Company](c, "companies"), &DeliveryService[Company]{c, "companies"}, c}
	c.Loans = &LoansService{newResource[Loan](c, "loans"), &AnalyticsService{c, "loans"}, &DeliveryService[Loan]{c, "loans"}}
	c.Properties = &PropertiesService{newResource[Property](c, "properties"), &DeliveryService[Property]{c, "properties"}, c}
	c.Branches = &BranchesService{newResource[Branch](c, "branches"), &DeliveryService[Branch]{c, "branches"}}
	c.Sales = &SalesService{newResource[Sale](c, "sales"), &AnalyticsService{c, "sales"}}
	c.Market = &MarketService{newResource[MarketRecord](c, "market"), &AnalyticsService{c, "market"}, c}
	c.Search = &SearchService{client: c}
	c.Locations = &LocationsService{client: c}
	c.CRM = &CRMService{client: c}
	c.SavedFilters = &SavedFiltersService{client: c}
	c.Integrations = &IntegrationsService{client: c}
	return c, nil
}

// parseBaseURL checks the API's base URL. Every path the SDK sends starts
// with /v1, so a base URL that already ends in /v1 (as copied from the
// reference, in any case: /V1 too) has it removed; a path prefix before it
// (a gateway) is kept. A base URL ending in /v1/v1 is refused: it would
// send /v1/v1/... whichever /v1 was meant.
func parseBaseURL(raw string) (*url.URL, error) {
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, invalidArg("base URL", "%q must be an absolute http or https URL such as %s", raw, DefaultBaseURL)
	}
	if base.RawQuery != "" || base.Fragment != "" || base.User != nil {
		return nil, invalidArg("base URL", "%s must not carry a query, a fragment or credentials", base.Scheme+"://"+base.Host+base.Path)
	}
	p := strings.TrimRight(base.Path, "/")
	if hasVersionSuffix(p) {
		p = p[:len(p)-len("/v1")]
		if hasVersionSuffix(p) {
			return nil, invalidArg("base URL", "%s ends in /v1/v1; the SDK adds /v1 itself: end it before the version (%s)",
				truncate(raw, maxQuoted), base.Scheme+"://"+base.Host+strings.TrimRight(p[:len(p)-len("/v1")], "/"))
		}
	}
	base.Path = p
	base.RawPath = ""
	return base, nil
}

// newRetryClient returns the retry layer over hc. Its RetryMax is only a
// backstop: the policy's CheckRetry stops each call at its own limit
// (WithMaxRetries, or CallMaxRetries for the call).
// hasVersionSuffix reports whether p ends in the path segment /v1, in any case.
func hasVersionSuffix(p string) bool {
	return len(p) >= 3 && strings.EqualFold(p[len(p)-3:], "/v1")
}

func (c *Client) newRetryClient(hc *http.Client) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient:     hc,
		Logger:         nil, // retryablehttp would print every URL to stderr
		RetryWaitMin:   c.policy.BaseDelay,
		RetryWaitMax:   c.policy.MaxDelay,
		RetryMax:       math.MaxInt32,
		CheckRetry:     c.policy.CheckRetry,
		Backoff:        c.policy.Backoff,
		ErrorHandler:   keepLastResponse,
		RequestLogHook: beginAttempt,
	}
}

// keepLastResponse is the retry client's ErrorHandler: the last response of
// a call whose retries ended is returned, so that its status and body
// become an APIError. A response that comes with an error (a context
// cancelled right after the headers arrived) is closed and dropped: the
// caller gets the error alone, and net/http, when the retry client sits
// under an http.Client (the search host), gets no response to drop unclosed
// and log about. An attempt's own timeout is reworded (attemptTimeout):
// when the call's context ended, the retry policy returned its bare error.
func keepLastResponse(resp *http.Response, err error, _ int) (*http.Response, error) {
	if err != nil && resp != nil {
		_ = resp.Body.Close()
		resp = nil
	}
	return resp, attemptTimeout(err)
}

// errNotSetUp is what a call on a Client not made by NewClient returns.
var errNotSetUp error = &InvalidArgumentError{Arg: "Client",
	Problem: "is not set up: create clients with lendgraph.NewClient (a zero lendgraph.Client{} or a nil *Client has no address, key or transport)"}

// ready checks what every call needs before it sends anything: a client
// made by NewClient and a non-nil context.
func (c *Client) ready(ctx context.Context) error {
	if c == nil || c.api == nil || c.key == nil || c.base == nil {
		return errNotSetUp
	}
	return checkCtx(ctx)
}

// BaseURL returns the API base address the client sends to (empty for a
// Client not made by NewClient).
func (c *Client) BaseURL() string {
	if c == nil || c.base == nil {
		return ""
	}
	return c.base.String()
}

// String describes the client without its credentials.
func (c *Client) String() string {
	if c == nil || c.base == nil || c.key == nil {
		return "lendgraph.Client{not set up: use lendgraph.NewClient}"
	}
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

// Ptr returns a pointer to v, for optional fields where the zero value is
// meaningful (OrgMembersQuery.Limit: lendgraph.Ptr(0)).
func Ptr[T any](v T) *T { return &v }
