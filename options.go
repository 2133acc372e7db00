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

// WithDownloadConnections sets how many connections one download of a
// delivery file opens at once (default DefaultDownloadConnections; 1 for a
// single connection, at most 64). Object stores cap the speed of each
// connection, so a file of 16 MiB or more comes down in ranges fetched in
// parallel, as aws s3 cp and s5cmd do: Download and Rows keep at most n
// ranges of 4 MiB in memory and hand the bytes over in order; DownloadFile
// writes ranges of 8 MiB in place. Smaller files always use one connection.
func WithDownloadConnections(n int) Option { return func(s *settings) { s.downloadConns = &n } }

// WithBearerAuth sends the key as "Authorization: Bearer <key>" instead of
// the x-api-key header.
func WithBearerAuth() Option { return func(s *settings) { s.bearer = true } }

// NewClient returns a client configured by opts. A missing API key is not an
// error here: calls that need it fail with ErrMissingAPIKey.
