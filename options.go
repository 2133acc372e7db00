package lendgraph

import (
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

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
// own layers and never replaces or mutates hc. A nil hc is refused by
// NewClient: leave the option out for the SDK's own client.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) {
		if hc == nil {
			s.invalid = append(s.invalid, invalidArg("WithHTTPClient", "the *http.Client is nil; leave the option out for the SDK's own client"))
			return
		}
		s.httpClient = hc
	}
}

// WithMaxRetries sets how many times one call is retried at most (default 3;
// 0 disables retries). CallMaxRetries changes it for one call.
func WithMaxRetries(n int) Option { return func(s *settings) { s.maxRetries = n } }

// WithRetryBackoff sets the first step and the bound of the exponential
// backoff between retries (defaults 250ms and 8s). A server's Retry-After
// replaces the backoff, within the cap of WithMaxServerWait. Tests against
// lendgraphtest use a few milliseconds.
func WithRetryBackoff(base, max time.Duration) Option {
	return func(s *settings) { s.retryBase, s.retryMax = base, max }
}

// WithMaxServerWait sets the cap on every wait a server asks for (default
// one minute): a Retry-After on any response (the retries of every call, the
// status polls of both job kinds' Wait, signed-link downloads) and market
// movement's retryAfterMs. A wait up to the cap is slept through (and ends
// when the context does); a longer one is not waited for: the call returns
// a *RateLimitError carrying the server's value at once, so a script is
// never parked for a day by "Retry-After: 86400". d must be positive.
func WithMaxServerWait(d time.Duration) Option {
	return func(s *settings) { s.maxServerWait = &d }
}

// WithInsecureHTTPLinks lets the SDK follow plain http:// links (signed
// download links, the search host a search token names, redirects) while
// the API is https. Without it such a link fails with an error matching
// ErrUnsafeLink before anything is sent, because the link's signature, the
// search token and the data would cross the network unencrypted. A client
// whose API base URL is itself http (a loopback fake) follows http links
// without it. Links that are not http or https are never followed.
func WithInsecureHTTPLinks() Option { return func(s *settings) { s.insecureLinks = true } }

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
// the call's context ends the wait for its answer.
//
// Pick d well above the slowest answer you expect: market movement
// (MostGained) may hold a request up to 25 seconds before answering 202.
// The same rules apply to the timeouts of a client given by
// WithHTTPClient (http.Client.Timeout, the transport's
// ResponseHeaderTimeout): the error of such an attempt is a net.Error
// whose Timeout reports true, and matches context.DeadlineExceeded only
// when the call's own context ended. Those timeouts are the given
// client's own, and cut a bulk delivery submit too. CallAttemptTimeout
// changes d for one call.
func WithAttemptTimeout(d time.Duration) Option { return func(s *settings) { s.attemptTimeout = d } }

// WithRateLimit limits the requests this client sends to the API host to r
// per second with bursts of burst. Every attempt, retries included, takes a
// token; waiting honours the call's context. When the next token comes after
// the context's deadline, the call fails at once with a
// *ClientRateLimitError: nothing was sent.
func WithRateLimit(r rate.Limit, burst int) Option {
	return func(s *settings) {
		s.limiter = rate.NewLimiter(r, burst)
		if r <= 0 || burst < 1 {
			s.invalid = append(s.invalid, invalidArg("WithRateLimit", "rate %v and burst %d let no request through; use a positive rate and a burst of at least 1, or leave the option out", r, burst))
		}
	}
}

// WithLogger logs each attempt at debug level: the operation ("Agents.List",
// see OperationFrom), the attempt number, for a retry its reason ("status
// 503", "transport error", "response body cut") and the backoff slept, the
// method, host, path, status, request id and duration; never a key, token,
// header or query string. A call that fails after retries logs one more
// line, at warn level, with the attempts and the error. Nothing is logged
// by default.
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithUserAgent prepends ua to the SDK's User-Agent header.
func WithUserAgent(ua string) Option { return func(s *settings) { s.userAgent = ua } }

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
func WithDownloadConnections(n int) Option { return func(s *settings) { s.downloadConns = &n } }

// WithBearerAuth sends the key as "Authorization: Bearer <key>" instead of
// the x-api-key header.
func WithBearerAuth() Option { return func(s *settings) { s.bearer = true } }
