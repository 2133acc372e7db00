package lendgraph

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	// linkHosts is WithLinkHosts' allow-list; localAPI reports an API on a
	// local address, whose links may name local addresses too.
	linkHosts []string
	localAPI  bool
	base      *url.URL
	userAgent string
	logger    *slog.Logger
	limiter   *rate.Limiter
	budget    *retry.Budget // shared by every call; nil: no budget
	// hc is the http.Client given by WithHTTPClient, or the SDK's own;
	// transport is its transport, under the SDK's per-attempt one, and
	// own the pool Close releases (nil for a given client).
	hc        *http.Client
	transport http.RoundTripper
	own       *http.Transport
	redirect  func(*http.Request, []*http.Request) error
	// runners are the retry loops' clients, lent to one request at a
	// time (attempt.go).
	runners *sync.Pool
	// auth returns the key in the forms a request uses: a func, which
	// fmt prints as an address, so that printing a Client (or a struct
	// holding one) with any verb prints none of them.
	auth   func() *keyForms
	closed *atomic.Bool // a pointer: a Client copied by value (to print it) copies no lock
	// defaults are the settings of a call made without options.
	defaults callConfig
	now      func() time.Time
	part     int64    // bytes of one ranged request of a parallel download
	observer Observer // WithObserver; nil: nothing is observed
	charges  *chargeLog

	// idleHook (tests) hears each time a connection of a parallel download
	// gives up, with the bytes left on the busiest other (download_sched.go).
	idleHook func(left int64)
}

// NewClient returns a client configured by opts. Bad options (an empty or
// relative base URL, an API key with a line break, negative retries, a nil
// option or http.Client, an option that describes one call) are an
// *InvalidArgumentError. A missing API key is not an error here: calls
// that need it fail with a *MissingAPIKeyError, which matches
// ErrMissingAPIKey.
func NewClient(opts ...Option) (*Client, error) {
	cfg := config{call: defaultCallConfig()}
	if err := cfg.apply(opts); err != nil {
		return nil, err
	}
	if err := cfg.check(scopeClient, "NewClient"); err != nil {
		return nil, err
	}
	if err := cfg.call.validate(); err != nil {
		return nil, err
	}
	s := cfg.client
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
	budget := retry.NewBudget(DefaultRetryBudget)
	if s.retryBudget != nil {
		budget = nil // 0: no budget
		if *s.retryBudget > 0 {
			budget = retry.NewBudget(*s.retryBudget)
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
		linkHosts:     s.linkHosts,
		localAPI:      localAddress(base.Hostname()),
		userAgent:     ua,
		logger:        s.logger,
		limiter:       s.limiter,
		budget:        budget,
		defaults:      cfg.call,
		now:           time.Now,
		part:          defaultPartSize,
		observer:      s.observer,
		charges:       newChargeLog(),
		closed:        new(atomic.Bool),
		hc:            s.httpClient,
	}
	if c.hc == nil {
		c.own = newTransport()
		c.hc = &http.Client{Transport: c.own}
	}
	c.transport = c.hc.Transport
	if c.transport == nil {
		c.transport = http.DefaultTransport
	}
	c.redirect = c.checkRedirect
	c.runners = c.newRunners()
	forms := newKeyForms(key, c.bearer)
	c.auth = func() *keyForms { return forms }

	c.newServices()
	c.Search = &SearchService{client: c}
	c.Locations = &LocationsService{client: c}
	c.CRM = &CRMService{client: c}
	c.SavedFilters = &SavedFiltersService{client: c}
	c.Integrations = &IntegrationsService{client: c}
	return c, nil
}

// Close releases what the client holds: the idle connections of its own
// connection pool. A client built with WithHTTPClient shares that
// client's pool, which Close leaves to its owner. Calls made after Close
// fail with an error matching ErrClientClosed; calls in flight finish, and
// the last of them releases the connections it used. Close always
// returns nil, and may be called more than once.
func (c *Client) Close() error {
	if c == nil || c.closed == nil || c.closed.Swap(true) {
		return nil
	}
	c.release()
	return nil
}

// release closes the idle connections of the client's own pool once it is
// closed.
func (c *Client) release() {
	if c.own != nil && c.closed.Load() {
		c.own.CloseIdleConnections()
	}
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

// hasVersionSuffix reports whether p ends in the path segment /v1, in any case.
func hasVersionSuffix(p string) bool {
	return len(p) >= 3 && strings.EqualFold(p[len(p)-3:], "/v1")
}

// errNotSetUp is what a call on a Client not made by NewClient returns.
var errNotSetUp error = &InvalidArgumentError{Arg: "Client",
	Problem: "is not set up: create clients with lendgraph.NewClient (a zero lendgraph.Client{} or a nil *Client has no address, key or transport)"}

// ready checks what every call needs before it sends anything: a client
// made by NewClient and a non-nil context.
func (c *Client) ready(ctx context.Context) error {
	if c == nil || c.transport == nil || c.key == nil || c.base == nil || c.closed == nil {
		return errNotSetUp
	}
	if c.closed.Load() {
		return ErrClientClosed
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

// Format makes every verb (%v, %+v, %#v, %s) print String, for a *Client
// and for a Client copied by value alike: fmt never walks its fields (the
// connection pool's among them, which other goroutines change).
func (c Client) Format(f fmt.State, _ rune) { io.WriteString(f, c.String()) }

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
// meaningful (OrgMembersRequest.Limit: lendgraph.Ptr(0)).
func Ptr[T any](v T) *T { return &v }
