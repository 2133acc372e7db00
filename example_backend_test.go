package lendgraph_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// Per-call options, as openai-go's option.RequestOption and
// aws-sdk-go-v2's per-operation option functions: one call without
// retries, with its own attempt timeout and a header, on a shared client.
func ExampleWithMaxRetries() {
	srv := startFake(lendgraphtest.WithRows("agents", 100))
	defer srv.Close()
	c := srv.Client() // 3 retries by default

	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	_, err := c.Agents.List(context.Background(), nil,
		lendgraph.WithMaxRetries(0),
		lendgraph.WithAttemptTimeout(5*time.Second),
		lendgraph.WithHeader("X-Request-Source", "nightly-report"))
	fmt.Println("without retries:", errors.Is(err, lendgraph.ErrUnavailable))

	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	page, err := c.Agents.List(context.Background(), nil) // the client's defaults
	fmt.Println("with the client's retries:", err == nil && page.Total == 100)
	// Output:
	// without retries: true
	// with the client's retries: true
}

// Response metadata of a call that succeeded, as openai-go's
// option.WithResponseInto and go-github's *Response give.
func ExampleWithResponseInto() {
	srv := startFake(lendgraphtest.WithRows("agents", 100))
	defer srv.Close()
	c := srv.Client()

	srv.InjectFault(http.MethodGet, "/v1/agents/{id}", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 502})
	var meta lendgraph.ResponseMeta
	if _, err := c.Agents.Get(context.Background(), srv.Dataset().ID("agents", 0), lendgraph.WithResponseInto(&meta)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(meta.Operation, meta.StatusCode, "after", meta.Attempts, "attempts; request id set:", meta.RequestID != "")
	// Output: Agents.Get 200 after 2 attempts; request id set: true
}

// A middleware around each attempt, as openai-go's option.WithMiddleware
// and a step of aws-sdk-go-v2's middleware stack: here it counts attempts
// per operation.
func ExampleWithMiddleware() {
	srv := startFake(lendgraphtest.WithRows("agents", 100))
	defer srv.Close()

	attempts := map[string]int{}
	count := func(req *http.Request, next lendgraph.MiddlewareNext) (*http.Response, error) {
		attempts[lendgraph.OperationFrom(req.Context())]++ // one goroutine here; guard it in a server
		return next(req)
	}
	c := srv.Client(lendgraph.WithMiddleware(count))
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503})
	if _, err := c.Agents.List(context.Background(), nil); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Agents.Get(context.Background(), srv.Dataset().ID("agents", 1)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(attempts["Agents.List"], attempts["Agents.Get"])
	// Output: 2 1
}

// Each attempt's log line names the operation, the attempt, the retry
// reason and the backoff, as aws-sdk-go-v2's ClientLogMode(LogRetries)
// does; a call that fails after its retries logs a final warning.
func ExampleWithLogger() {
	srv := startFake(lendgraphtest.WithRows("agents", 10))
	defer srv.Close()

	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { // keep the example's output stable
			switch a.Key {
			case "operation", "attempt", "retry_reason", "status", "attempts", "msg", "level":
				return a
			}
			return slog.Attr{}
		},
	}))
	c := srv.Client(lendgraph.WithLogger(logger), lendgraph.WithMaxRetries(1))
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: 2})
	_, err := c.Agents.List(context.Background(), nil)
	fmt.Println(errors.Is(err, lendgraph.ErrUnavailable))
	// Output:
	// level=DEBUG msg="lendgraph: request" operation=Agents.List attempt=1 status=503
	// level=DEBUG msg="lendgraph: request" operation=Agents.List attempt=2 retry_reason="status 503" status=503
	// level=WARN msg="lendgraph: call failed" operation=Agents.List attempts=2
	// true
}

// Lenient decoding, as openai-go's respjson marks a field invalid instead
// of failing: one record with a string where a number belongs does not
// cost the page.
func ExampleWithLenientDecoding() {
	srv := startFake()
	defer srv.Close()
	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 200,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   `{"data":[{"id":"agt_1","transactionCount":"12"},{"id":"agt_2","transactionCount":4}],"total":2,"cursor":""}`})
	c := srv.Client(lendgraph.WithLenientDecoding(true))

	page, err := c.Agents.List(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range page.Data {
		raw, _ := a.Extra.Get("transactionCount") // the value as sent
		fmt.Println(a.ID, a.TransactionCount, a.InvalidFields(), string(raw))
	}
	// Output:
	// agt_1 0 [transactionCount] "12"
	// agt_2 4 []
}

// A unit test of a search-token endpoint with a stub token provider and an
// error hook: no fake server, no API key.
func ExampleNewTokenHandler() {
	stub := stubProvider{err: lendgraph.NewAPIError(http.MethodGet, "/v1/search-token", http.StatusTooManyRequests,
		http.Header{"Retry-After": {"30"}}, []byte(`{"error":"rate limited"}`))}
	h := lendgraph.NewTokenHandler(stub, lendgraph.OnTokenError(func(r *http.Request, err error) {
		fmt.Println("logged:", errors.Is(err, lendgraph.ErrRateLimited))
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/search-token", nil))
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	// Output:
	// logged: true
	// 503 30
}

type stubProvider struct {
	tok *lendgraph.SearchToken
	err error
}

func (s stubProvider) Token(context.Context) (*lendgraph.SearchToken, error) { return s.tok, s.err }

// A stub returns the errors the SDK returns, an unknown outcome included,
// as stripe-go's tests build *stripe.Error values.
func ExampleNewOutcomeUnknownError() {
	lost := lendgraph.NewOutcomeUnknownError(&lendgraph.TransportError{Method: http.MethodPost,
		Path: "/v1/properties/prop_1/enrich", Err: errors.New("connection reset")})
	broke := lendgraph.NewAPIError(http.MethodPost, "/v1/properties/prop_1/enrich", http.StatusPaymentRequired, nil,
		[]byte(`{"error":"insufficient credits","balance":0,"cost":1}`))

	var te *lendgraph.TransportError
	fmt.Println(errors.Is(lost, lendgraph.ErrOutcomeUnknown), errors.As(lost, &te))
	var ic *lendgraph.InsufficientCreditsError
	fmt.Println(errors.As(broke, &ic), ic.Cost)
	// Output:
	// true true
	// true 1
}

// A repeat after a lost answer may describe a free cache hit although the
// lost attempt was charged: count such answers apart when summing spend.
func ExampleEnrichResult_earlierAttemptMayHaveCharged() {
	srv := startFake(lendgraphtest.WithDefaultRows(200))
	defer srv.Close()
	c := srv.Client()
	var id string
	for i := range srv.Dataset().Len("properties") {
		if id = srv.Dataset().ID("properties", i); srv.EnrichOutcome(id) == lendgraphtest.OutcomeMatch {
			break
		}
	}
	// The server charges, then the connection drops before the answer ends.
	srv.InjectFault(http.MethodPost, "/v1/properties/{id}/enrich", lendgraphtest.Fault{Kind: lendgraphtest.DropMidBody})
	r, err := c.Properties.Enrich(context.Background(), id, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("charged:", r.Charged, "reason:", r.Reason, "an earlier attempt may have charged:", r.EarlierAttemptMayHaveCharged)
	fmt.Println("debits at the server:", len(srv.Debits(lendgraphtest.DefaultOrg)))
	// Output:
	// charged: false reason: member_cache_hit an earlier attempt may have charged: true
	// debits at the server: 1
}

// A client-side rate limit: every attempt to the API host, retries
// included, waits for a token; a call whose deadline comes before the next
// token fails at once, nothing sent.
func ExampleWithRateLimit() {
	srv := startFake(lendgraphtest.WithRows("agents", 100))
	defer srv.Close()
	c := srv.Client(lendgraph.WithRateLimit(1, 1)) // one request a second, no burst

	ctx := context.Background()
	if _, err := c.Agents.List(ctx, nil); err != nil { // takes the only token
		log.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.Agents.List(short, nil) // the next token is a second away
	var rl *lendgraph.ClientRateLimitError
	fmt.Println("refused before sending:", errors.As(err, &rl), "requests the API saw:", len(srv.Requests()))
	// Output: refused before sending: true requests the API saw: 1
}

// A retry budget shared by every call of a client: while the API fails,
// calls stop retrying once it is spent, and their errors say so.
func ExampleWithRetryBudget() {
	srv := startFake(lendgraphtest.WithRows("agents", 100))
	defer srv.Close()
	c := srv.Client(lendgraph.WithRetryBudget(10)) // two retries after a 5xx, then none

	srv.InjectFault(http.MethodPost, "/v1/agents", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: 503, Times: -1})
	for i := range 2 {
		_, err := c.Agents.List(context.Background(), nil)
		fmt.Printf("call %d: 503 %v, budget spent %v\n", i+1, errors.Is(err, lendgraph.ErrUnavailable), errors.Is(err, lendgraph.ErrRetryBudgetExhausted))
	}
	fmt.Println("attempts the API saw:", len(srv.Requests()))
	// Output:
	// call 1: 503 true, budget spent true
	// call 2: 503 true, budget spent true
	// attempts the API saw: 4
}
