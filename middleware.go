package lendgraph

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// Middleware runs around each attempt the SDK sends to the API host: it may
// read or change req (add a header, start a span, read
// OperationFrom(req.Context())), call next to send it, and read or replace
// what comes back, as openai-go's option.WithMiddleware does. It runs once
// per attempt: a retried call passes through it again, and so does each
// redirect within the API host.
//
// It sits above the SDK's own layers: the request it sees carries no API
// key (added below it), and its response's headers are already redacted.
// Requests to other hosts (signed storage links, the search host, a
// redirect elsewhere) do not pass through it, so a middleware never sees a
// link signature or a search token. A middleware must return next's
// response or close its body.
type Middleware func(req *http.Request, next MiddlewareNext) (*http.Response, error)

// MiddlewareNext sends the request on through the rest of the chain.
type MiddlewareNext func(req *http.Request) (*http.Response, error)

// WithMiddleware adds middleware around each attempt to the API host (see
// Middleware). The first one given is the outermost. It works with
// WithHTTPClient: the given client's transport stays at the bottom.
func WithMiddleware(mw ...Middleware) Option {
	return func(s *settings) {
		for _, m := range mw {
			if m == nil {
				s.invalid = append(s.invalid, invalidArg("WithMiddleware", "a middleware is nil"))
				return
			}
		}
		s.middleware = append(s.middleware, mw...)
	}
}

// WithRetryBudget sets the size of the client's retry budget (default
// DefaultRetryBudget tokens). Every goroutine using the client shares it,
// after aws-sdk-go-v2's retry quota: a retry after a 429 or a 5xx takes 5
// tokens, a retry after a transport error (a reset, an attempt timeout, a
// cut body) 10, and each successful attempt gives one back, up to the size.
// When it is empty, calls fail at their first error instead of piling onto
// an API that is already failing, until successes refill it. 0 turns the
// budget off (retries are bounded by the retry counts alone); a negative
// size is an error.
func WithRetryBudget(tokens int) Option {
	return func(s *settings) {
		if tokens < 0 {
			s.invalid = append(s.invalid, invalidArg("WithRetryBudget", "%d is negative; use 0 to turn the budget off", tokens))
			return
		}
		s.retryBudget = &tokens
	}
}

// DefaultRetryBudget is the size of a client's retry budget: with the
// default 3 retries, about 33 calls failing through every retry after a
// 503 empty a full budget.
const DefaultRetryBudget = retry.DefaultBudget

// callTransport is the top of the API client's transport, once per
// attempt: it adds the call's own headers (CallHeader) and runs the
// middleware, for requests to the API origin only.
type callTransport struct {
	next       http.RoundTripper
	client     *Client
	middleware []Middleware
}

func (t *callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.client.sameOrigin(req.URL) {
		return t.next.RoundTrip(req)
	}
	if o := callOptionsFrom(req.Context()); o != nil && len(o.header) > 0 {
		req = req.Clone(req.Context())
		for name, vs := range o.header {
			for _, v := range vs {
				req.Header.Add(name, v)
			}
		}
	}
	if len(t.middleware) == 0 {
		return t.next.RoundTrip(req)
	}
	return t.chain(0, req)
}

func (t *callTransport) chain(i int, req *http.Request) (*http.Response, error) {
	if i == len(t.middleware) {
		return t.next.RoundTrip(req)
	}
	return t.middleware[i](req, func(r *http.Request) (*http.Response, error) { return t.chain(i+1, r) })
}

// beginAttempt is the retry client's RequestLogHook: it counts the attempt
// in the call's state and notes why it follows a retry and how long the
// backoff slept.
func beginAttempt(_ retryablehttp.Logger, req *http.Request, _ int) {
	if st := callStateFrom(req.Context()); st != nil {
		reason, at := retry.LastRetry(req.Context())
		st.begin(time.Now(), reason, at)
	}
}

// WithLenientDecoding sets whether a record member of the wrong type fails
// the whole answer (false, the default: a *DecodeError) or is set aside on
// its record (true), as openai-go's respjson marks a field invalid instead
// of failing. In lenient mode a record whose member does not fit its
// field ("transactionCount":"12" for an integer) keeps the field zero, keeps
// the value as sent in Extra under the member's name, and lists the member
// in its InvalidFields; the other members and records decode as usual.
// Malformed JSON and an answer that is not an object where one is
// expected still fail. It applies to every answer of the API and the
// search host, pages of iterators included, and to DeliveryJob.Rows;
// CallLenientDecoding sets it for one call, and WithLenientRows for
// DecodeRows.
func WithLenientDecoding(on bool) Option { return func(s *settings) { s.lenient = on } }
