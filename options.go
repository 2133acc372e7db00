package lendgraph

import (
	"log/slog"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/lendgraph/lendgraph-go/internal/poll"
)

// Option configures a client or one call. NewClient takes options, and so
// does every method that sends a request, as its last parameter: given to
// NewClient an option sets the default of every call, given to a method it
// changes that call alone (every request it makes: each page of an
// iterator, each poll of a Wait, each range of a download).
//
//	c, err := lendgraph.NewClient(lendgraph.WithMaxRetries(5))
//	a, err := c.Agents.Get(ctx, id, lendgraph.WithMaxRetries(0), lendgraph.WithHeader("X-Trace", t))
//
// Some options configure the client itself (its key, address, HTTP
// client, rate limit, retry budget, observer, logger): given to a method
// they fail it before anything is sent, with an *InvalidArgumentError
// saying so. WithResponseInto describes one call and is refused by
// NewClient. A nil option, or an option with a bad argument, fails the same
// way.
type Option func(*config)

// scope is where an option may be given.
type scope uint8

const (
	scopeClient scope = 1 << iota // NewClient
	scopeCall                     // a method that sends a request
	scopeDecode                   // DecodeRows, which decodes a file and sends nothing

	anyCall = scopeClient | scopeCall // a call's setting, or the client's default for every call
)

// config is what options write: the client's own settings, a call's
// settings, and what they found wrong.
type config struct {
	client clientConfig
	call   callConfig
	// used lists the options given with the scopes each may go to, so
	// that NewClient, a method or DecodeRows can refuse the others.
	used []optionUse
	// invalid is the first option whose own argument is wrong.
	invalid error
	// headerOwned reports that call.header is this config's own, not the
	// client's default map it was copied from.
	headerOwned bool
}

type optionUse struct {
	name   string
	scopes scope
}

// use records that option name was given; it may go to scopes.
func (c *config) use(name string, scopes scope) { c.used = append(c.used, optionUse{name, scopes}) }

// fail records the first bad argument.
func (c *config) fail(err error) {
	if c.invalid == nil {
		c.invalid = err
	}
}

// check refuses an option given where it does not apply: where names the
// entry point ("NewClient", "Agents.Get", "DecodeRows").
func (c *config) check(s scope, where string) error {
	if c.invalid != nil {
		return c.invalid
	}
	for _, u := range c.used {
		if u.scopes&s != 0 {
			continue
		}
		switch {
		case u.scopes&scopeClient != 0 && u.scopes&scopeCall == 0:
			return invalidArg(u.name, "configures a client: pass it to lendgraph.NewClient, not to %s", where)
		case s == scopeClient:
			return invalidArg(u.name, "describes one call: pass it to the method, not to lendgraph.NewClient")
		case s == scopeDecode:
			return invalidArg(u.name, "has no effect on %s, which decodes a file and sends nothing", where)
		default:
			return invalidArg(u.name, "has no effect on %s", where)
		}
	}
	return nil
}

// clientConfig holds the settings only NewClient takes.
type clientConfig struct {
	key           *string
	baseURL       *string
	httpClient    *http.Client
	limiter       *rate.Limiter
	logger        *slog.Logger
	userAgent     string
	bearer        bool
	insecureLinks bool
	linkHosts     []string
	retryBudget   *int
	observer      Observer
}

// callConfig holds the settings of one call: the client's defaults, with
// the call's own options applied.
type callConfig struct {
	maxRetries     int
	retryBase      time.Duration
	retryMax       time.Duration
	maxServerWait  time.Duration
	attemptTimeout time.Duration
	header         http.Header
	middleware     []Middleware
	lenient        bool
	maxLine        int
	downloadConns  int
	poll           poll.Config
	// meta receives what the call's responses said (WithResponseInto);
	// metaOrder orders its writes by the call's concurrent requests (a
	// pager's prefetch, a download's ranges).
	meta      *ResponseMeta
	metaOrder *metaOrder
	// maxDownloadBytes caps what a download may write (0: no cap).
	maxDownloadBytes int64
}

// defaultCallConfig is the settings of a call on a client built with no
// options.
func defaultCallConfig() callConfig {
	return callConfig{
		maxRetries:    DefaultMaxRetries,
		retryBase:     250 * time.Millisecond,
		retryMax:      8 * time.Second,
		maxServerWait: time.Minute,
		downloadConns: DefaultDownloadConnections,
		poll:          poll.Default,
	}
}

// DefaultMaxRetries is how many times a call is retried at most when
// WithMaxRetries does not say otherwise.
const DefaultMaxRetries = 3

// forCall returns the settings of a call made with opts on top of base (the
// client's defaults): base itself when there are none. where names the
// method, for errors.
func forCall(base *callConfig, where string, opts []Option) (*callConfig, error) {
	if len(opts) == 0 {
		return base, nil
	}
	cfg := config{call: *base}
	if err := cfg.apply(opts); err != nil {
		return nil, err
	}
	if err := cfg.check(scopeCall, where); err != nil {
		return nil, err
	}
	if err := cfg.call.validate(); err != nil {
		return nil, err
	}
	return &cfg.call, nil
}

// apply runs opts, refusing a nil one.
func (c *config) apply(opts []Option) error {
	for i, o := range opts {
		if o == nil {
			return invalidArg("option", "option %d of %d is nil; leave an option out of the list instead of passing nil", i+1, len(opts))
		}
		o(c)
	}
	return nil
}

// validate checks the settings options cannot check alone.
func (c *callConfig) validate() error {
	if c.poll.Initial <= 0 || c.poll.Max < c.poll.Initial {
		return invalidArg("WithPollInterval", "need 0 < initial <= max, got %s and %s", c.poll.Initial, c.poll.Max)
	}
	return nil
}

// WithAPIKey sets the API key (a client setting). Without it NewClient
// reads $LENDGRAPH_API_KEY. The key is sent to the configured API host
// only, never to signed download links, the search host, or another host
// after a redirect.
func WithAPIKey(key string) Option {
	return func(c *config) { c.use("WithAPIKey", scopeClient); c.client.key = &key }
}

// WithBaseURL sets the API base address (a client setting). Without it
// NewClient reads $LENDGRAPH_BASE_URL, then uses DefaultBaseURL. The SDK
// adds the API's /v1 itself: a base ending in /v1 or /v1/ has it dropped,
// a path before it (a gateway's prefix) is kept, and one ending in /v1/v1
// is refused. It needs a scheme (http or https) and no query.
func WithBaseURL(u string) Option {
	return func(c *config) { c.use("WithBaseURL", scopeClient); c.client.baseURL = &u }
}

// WithHTTPClient makes the SDK send through hc (a client setting). Its
// Transport (and CheckRedirect, Jar, Timeout) are kept: the SDK wraps the
// transport with its own layers and never replaces or mutates hc, and
// clients built with the same hc share its connection pool. A nil hc is
// refused: leave the option out for the SDK's own client.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) {
		c.use("WithHTTPClient", scopeClient)
		if hc == nil {
			c.fail(invalidArg("WithHTTPClient", "the *http.Client is nil; leave the option out for the SDK's own client"))
			return
		}
		c.client.httpClient = hc
	}
}

// WithMaxRetries sets how many times a call is retried at most
// (DefaultMaxRetries when not set; 0 disables retries). The call's kind
// still decides what may be retried: a call that charges is never
// repeated once the server may have acted, whatever n is. The client's
// retry budget (WithRetryBudget) applies too.
func WithMaxRetries(n int) Option {
	return func(c *config) {
		c.use("WithMaxRetries", anyCall)
		if n < 0 {
			c.fail(invalidArg("WithMaxRetries", "%d is negative; use 0 to disable retries", n))
			return
		}
		c.call.maxRetries = n
	}
}

// WithRetryBackoff sets the first step and the bound of the exponential
// backoff between retries (defaults 250ms and 8s); 0 < base <= maxWait,
// else the option is an *InvalidArgumentError. A server's Retry-After
// replaces the backoff, within the cap of WithMaxServerWait. Tests against
// lendgraphtest use a few milliseconds.
func WithRetryBackoff(base, maxWait time.Duration) Option {
	return func(c *config) {
		c.use("WithRetryBackoff", anyCall)
		if base <= 0 || maxWait < base {
			c.fail(invalidArg("WithRetryBackoff", "need 0 < base <= max, got %s and %s", base, maxWait))
			return
		}
		c.call.retryBase, c.call.retryMax = base, maxWait
	}
}

// WithMaxServerWait sets the cap on every wait a server asks for (default
// one minute): a Retry-After on any response (the retries of every call,
// the status polls of both job kinds' Wait, signed-link downloads) and
// market movement's retryAfterMs. A wait up to the cap is slept through
// (and ends when the context does); a longer one is not waited for: the
// call returns a *RateLimitError carrying the server's value at once, so a
// script is never parked for a day by "Retry-After: 86400". d must be
// positive.
func WithMaxServerWait(d time.Duration) Option {
	return func(c *config) {
		c.use("WithMaxServerWait", anyCall)
		if d <= 0 {
			c.fail(invalidArg("WithMaxServerWait", "%s is not positive; the cap on server-requested waits must be above 0", d))
			return
		}
		c.call.maxServerWait = d
	}
}

// WithInsecureHTTPLinks lets the SDK follow plain http:// links (signed
// download links, the search host a search token names, redirects) while
// the API is https (a client setting). Without it such a link fails with
// an error matching ErrUnsafeLink before anything is sent, because the
// link's signature, the search token and the data would cross the network
// unencrypted. A client whose API base URL is itself http (a loopback
// fake) follows http links without it. Links that are not http or https
// are never followed.
func WithInsecureHTTPLinks() Option {
	return func(c *config) { c.use("WithInsecureHTTPLinks", scopeClient); c.client.insecureLinks = true }
}

// WithLinkHosts restricts the hosts the SDK follows a link to (a client
// setting): the storage host of a results or download link, the search
// host a search token names, the target of a redirect off the API host.
// Each pattern is a host name ("storage.lendgraph.com") or a suffix after
// a dot (".lendgraph.com" allows every subdomain); a port is ignored. A
// link to another host fails before anything is sent, with an error
// matching ErrUnsafeLink. Without it every host is followed, within the
// SDK's link rules (see ErrUnsafeLink).
func WithLinkHosts(patterns ...string) Option {
	return func(c *config) {
		c.use("WithLinkHosts", scopeClient)
		if len(patterns) == 0 {
			c.fail(invalidArg("WithLinkHosts", "no host given; name the hosts links may go to, or leave the option out"))
			return
		}
		for _, p := range patterns {
			p = strings.ToLower(strings.TrimSpace(p))
			if p == "" || p == "." || strings.ContainsAny(p, "/:@ ") {
				c.fail(invalidArg("WithLinkHosts", "%q is not a host name or a .suffix (such as storage.example.com or .example.com)", truncate(p, maxQuoted)))
				return
			}
			c.client.linkHosts = append(c.client.linkHosts, p)
		}
	}
}

// WithAttemptTimeout cuts one attempt of a call that takes longer than d
// (default: no per-attempt timeout; the call's context bounds it all): an
// API or search-host attempt from sending the request to the end of the
// response body; a download while it waits for the headers and whenever no
// byte arrives for d (a download that keeps moving is never cut). A cut
// attempt is a transport error like a reset connection: reads, list
// queries, polls, searches and downloads are retried (a download resumes
// where it stopped); a call that charges or acts is not, and its error
// matches ErrOutcomeUnknown. Only the call's own context ends the retries.
// A bulk delivery submit (Deliver) is cut only until its request is sent:
// after that, a cut would lose the answer of a job that may have started,
// which is charged when it completes and which no endpoint lists, so only
// the call's context ends the wait for its answer. 0 removes a timeout the
// client set; d must not be negative.
//
// Pick d well above the slowest answer you expect: market movement
// (MostGained) may hold a request up to 25 seconds before answering 202.
// The same rules apply to the timeouts of a client given by
// WithHTTPClient (http.Client.Timeout, the transport's
// ResponseHeaderTimeout): the error of such an attempt is a net.Error
// whose Timeout reports true, and matches context.DeadlineExceeded only
// when the call's own context ended. Those timeouts are the given
// client's own, and cut a bulk delivery submit too.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *config) {
		c.use("WithAttemptTimeout", anyCall)
		if d < 0 {
			c.fail(invalidArg("WithAttemptTimeout", "%s is negative; use 0 for no per-attempt timeout", d))
			return
		}
		c.call.attemptTimeout = d
	}
}

// WithRateLimit limits the requests this client sends to the API host to
// perSecond a second with bursts of burst (a client setting), with
// golang.org/x/time/rate's token bucket. Every attempt, retries included,
// takes a token; waiting honours the call's context. When the next token
// comes after the context's deadline, the call fails at once with a
// *ClientRateLimitError: nothing was sent.
func WithRateLimit(perSecond float64, burst int) Option {
	return func(c *config) {
		c.use("WithRateLimit", scopeClient)
		if !(perSecond > 0) || burst < 1 {
			c.fail(invalidArg("WithRateLimit", "%v a second with a burst of %d lets no request through; use a positive rate and a burst of at least 1, or leave the option out", perSecond, burst))
			return
		}
		c.client.limiter = rate.NewLimiter(rate.Limit(perSecond), burst)
	}
}

// WithLogger logs each attempt at debug level (a client setting): the
// operation ("Agents.List", see OperationFrom), the attempt number, for a
// retry its reason ("status 503", "transport error", "response body cut")
// and the backoff slept, the method, host, path, status, request id and
// duration; never a key, token, header or query string. A call that fails
// after retries, that could not retry because the retry budget was spent,
// or whose outcome is unknown logs one more line, at warn level, with the
// attempts and the error. Nothing is logged by default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.use("WithLogger", scopeClient); c.client.logger = l }
}

// WithUserAgent prepends ua to the SDK's User-Agent header (a client
// setting).
func WithUserAgent(ua string) Option {
	return func(c *config) {
		c.use("WithUserAgent", scopeClient)
		if strings.ContainsAny(ua, "\r\n") {
			c.fail(invalidArg("WithUserAgent", "the user agent contains a line break"))
			return
		}
		c.client.userAgent = ua
	}
}

// WithDownloadConnections sets how many connections one download of a
// delivery file opens at once (default DefaultDownloadConnections; 1 for a
// single connection, at most 64). Object stores cap the speed of each
// connection, so a file of 16 MiB or more comes down in ranges fetched in
// parallel, as aws s3 cp and s5cmd do: Download and Rows keep at most
// n × 4 MiB in memory (Download in ranges of up to 4 MiB, Rows in smaller
// ones) and hand the bytes over in order; DownloadFile writes ranges of up
// to 8 MiB in place. A connection that runs out of ranges takes over half
// of what another has left, so all n stay busy until the end. A range's
// request is sent while the last bytes of the one before it arrive (once
// they are due within the store's latency, as measured), so a download
// holds up to 2n connections open, of which about n stream at once.
// Smaller files always use one connection.
func WithDownloadConnections(n int) Option {
	return func(c *config) {
		c.use("WithDownloadConnections", anyCall)
		if n < 1 || n > maxDownloadConnections {
			c.fail(invalidArg("WithDownloadConnections", "%d is out of range: use 1 to %d (1 downloads over a single connection)", n, maxDownloadConnections))
			return
		}
		c.call.downloadConns = n
	}
}

// WithMaxDownloadBytes caps a download at n bytes (0, the default: no
// cap): the file DownloadFile writes, and the bytes Download and Rows
// fetch. A delivery declaring more fails before anything is fetched, and
// one of unknown size fails when it reaches the cap; either way with an
// error matching *DownloadSpaceError. DownloadFile checks the space free
// on the file system whatever the cap.
func WithMaxDownloadBytes(n int64) Option {
	return func(c *config) {
		c.use("WithMaxDownloadBytes", anyCall)
		if n < 0 {
			c.fail(invalidArg("WithMaxDownloadBytes", "%d is negative; use 0 for no cap", n))
			return
		}
		c.call.maxDownloadBytes = n
	}
}

// WithBearerAuth sends the key as "Authorization: Bearer <key>" instead of
// the x-api-key header (a client setting).
func WithBearerAuth() Option {
	return func(c *config) { c.use("WithBearerAuth", scopeClient); c.client.bearer = true }
}

// WithHeader adds a header to each attempt a call sends to the API host
// (never to the search host, a storage link or another host a redirect
// leads to); given to NewClient, to every call's. The SDK's own headers
// cannot be replaced: x-api-key, Authorization, Cookie, Host,
// Content-Type, Content-Length, Accept, Accept-Encoding, User-Agent (see
// WithUserAgent), Range, the hop-by-hop headers and W3C trace context
// (traceparent, tracestate; see WithObserver) are refused.
func WithHeader(name, value string) Option {
	return func(c *config) {
		c.use("WithHeader", anyCall)
		canon := textproto.CanonicalMIMEHeaderKey(name)
		switch canon {
		case "X-Api-Key", "Authorization", "Proxy-Authorization", "Cookie", "Host", "Content-Type",
			"Content-Length", "Accept", "Accept-Encoding", "User-Agent", "Range", "Connection",
			"Transfer-Encoding", "Te", "Trailer", "Upgrade", "Keep-Alive", "Traceparent", "Tracestate":
			c.fail(invalidArg("WithHeader", "%q is set by the SDK and cannot be replaced", truncate(name, maxQuoted)))
			return
		}
		if !validHeader(name, value) {
			c.fail(invalidArg("WithHeader", "%q is not a valid header name, or its value holds a control character", truncate(name, maxQuoted)))
			return
		}
		if !c.headerOwned {
			c.call.header = c.call.header.Clone()
			if c.call.header == nil {
				c.call.header = http.Header{}
			}
			c.headerOwned = true
		}
		c.call.header.Add(canon, value)
	}
}

// validHeader reports whether name is an HTTP token and value holds no
// control character but tab.
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`:(),/;<=>?@[\]{}"`, c) >= 0 {
			return false
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// WithResponseInto makes the call fill *m with what its last response said
// (request id, status, headers, attempts), as openai-go's
// option.WithResponseInto does. It describes one call: NewClient refuses
// it. See ResponseMeta.
func WithResponseInto(m *ResponseMeta) Option {
	return func(c *config) {
		c.use("WithResponseInto", scopeCall)
		if m == nil {
			c.fail(invalidArg("WithResponseInto", "the destination is nil; pass a pointer to a ResponseMeta"))
			return
		}
		c.call.meta, c.call.metaOrder = m, new(metaOrder)
	}
}

// WithLenientDecoding sets whether a record member of the wrong type fails
// the whole answer (false, the default: a *DecodeError, or a *RowError for
// a delivery row) or is set aside on its record (true), as openai-go's
// respjson marks a field invalid instead of failing. In lenient mode a
// record whose member does not fit its field ("transactionCount":"12" for
// an integer) keeps the field zero, keeps the value as sent in Extra under
// the member's name, and lists the member in its InvalidFields; the other
// members and records decode as usual. Malformed JSON and an answer that
// is not an object where one is expected still fail. It applies to every
// answer of the API and the search host (pages of iterators included), to
// the rows of DeliveryJob.Rows, and to DecodeRows.
func WithLenientDecoding(on bool) Option {
	return func(c *config) { c.use("WithLenientDecoding", anyCall|scopeDecode); c.call.lenient = on }
}

// WithMaxLineSize sets the longest ndjson line or json array element (one
// delivery row) accepted by DeliveryJob.Rows and DecodeRows; a longer one
// is an error naming it. The default is 64 MiB; 0 means the default.
func WithMaxLineSize(n int) Option {
	return func(c *config) {
		c.use("WithMaxLineSize", anyCall|scopeDecode)
		if n < 0 {
			c.fail(invalidArg("WithMaxLineSize", "%d is negative; use 0 for the default of 64 MiB", n))
			return
		}
		c.call.maxLine = n
	}
}

// WithPollInterval sets the first wait between a job's status fetches in
// Wait and the bound it backs off to (defaults: 200ms growing to 1s).
func WithPollInterval(initial, max time.Duration) Option {
	return func(c *config) {
		c.use("WithPollInterval", anyCall)
		c.call.poll.Initial, c.call.poll.Max = initial, max
	}
}

// WithMiddleware adds middleware around each attempt to the API host (see
// Middleware); given to NewClient, around every call's. The first one
// given is the outermost, and the client's run outside a call's. It works
// with WithHTTPClient: the given client's transport stays at the bottom.
func WithMiddleware(mw ...Middleware) Option {
	return func(c *config) {
		c.use("WithMiddleware", anyCall)
		for _, m := range mw {
			if m == nil {
				c.fail(invalidArg("WithMiddleware", "a middleware is nil"))
				return
			}
		}
		// Never append into the client's slice: a call's middleware is its own.
		c.call.middleware = append(slices.Clip(c.call.middleware), mw...)
	}
}

// WithRetryBudget sets the size of the client's retry budget (a client
// setting; default DefaultRetryBudget tokens). Every goroutine using the
// client shares it, after aws-sdk-go-v2's retry quota: a retry after a 429
// or a 5xx takes 5 tokens, a retry after a transport error (a reset, an
// attempt timeout, a cut body) 10, and each successful attempt gives one
// back, up to the size. When it is empty, calls fail at their first error
// instead of piling onto an API that is already failing, until successes
// refill it: such an error matches ErrRetryBudgetExhausted, a warning is
// logged (WithLogger) and the observer is told (Summary.RetryBudgetExhausted).
// 0 turns the budget off (retries are bounded by the retry counts alone);
// a negative size is an error.
func WithRetryBudget(tokens int) Option {
	return func(c *config) {
		c.use("WithRetryBudget", scopeClient)
		if tokens < 0 {
			c.fail(invalidArg("WithRetryBudget", "%d is negative; use 0 to turn the budget off", tokens))
			return
		}
		c.client.retryBudget = &tokens
	}
}

// WithObserver makes the client report its operations, attempts and
// events to o (a client setting; see Observer). Without it the SDK reports
// nothing and does no work for it.
func WithObserver(o Observer) Option {
	return func(c *config) {
		c.use("WithObserver", scopeClient)
		if o == nil {
			c.fail(invalidArg("WithObserver", "the observer is nil; leave the option out to observe nothing"))
			return
		}
		c.client.observer = o
	}
}
