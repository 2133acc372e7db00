package lendgraph

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
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
	conns     int   // connections of one download (WithDownloadConnections)
	part      int64 // bytes of one ranged request of a parallel download
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
	// downloadConns is nil for the default.
	downloadConns *int
}

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
		conns:     conns,
		part:      defaultPartSize,
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

// Ptr returns a pointer to v, for optional fields where the zero value is
// meaningful (OrgMembersQuery.Limit: lendgraph.Ptr(0)).
func Ptr[T any](v T) *T { return &v }
