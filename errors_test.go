package lendgraph_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

// errorFor makes the fake answer one unrepeatable POST with status and body
// and returns the SDK's error.
func errorFor(t *testing.T, status int, body string, header map[string]string) error {
	t.Helper()
	srv := smallServer(t)
	srv.InjectFault("POST", "/v1/anything", lendgraphtest.Fault{Kind: lendgraphtest.Respond, Status: status, Body: body,
		Header: header, Times: -1})
	err := srv.Client(lendgraph.WithMaxRetries(0)).Do(context.Background(), "POST", "/v1/anything", map[string]any{"a": 1}, nil)
	if err == nil {
		t.Fatalf("status %d: no error", status)
	}
	var apiErr *lendgraph.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("status %d: %T is not an *APIError", status, err)
	}
	if apiErr.StatusCode != status || apiErr.Method != "POST" || apiErr.Path != "/v1/anything" {
		t.Fatalf("APIError %+v", apiErr)
	}
	if apiErr.RequestID == "" || !strings.Contains(err.Error(), "[request "+apiErr.RequestID+"]") {
		t.Fatalf("request id missing from %q", err)
	}
	if string(apiErr.Body) != body {
		t.Fatalf("raw body %q, want %q", apiErr.Body, body)
	}
	return err
}

func TestErrors_Shapes(t *testing.T) {
	t.Run("plain error body and sentinels", func(t *testing.T) {
		for status, sentinel := range map[int]error{
			401: lendgraph.ErrUnauthorized, 403: lendgraph.ErrForbidden, 404: lendgraph.ErrNotFound,
			409: lendgraph.ErrJobFinished, 503: lendgraph.ErrUnavailable, 402: lendgraph.ErrInsufficientCredits,
			429: lendgraph.ErrRateLimited, 400: lendgraph.ErrBadRequest,
		} {
			err := errorFor(t, status, `{"error":"nope"}`, nil)
			if !errors.Is(err, sentinel) {
				t.Errorf("%d: %v is not %v", status, err, sentinel)
			}
			for _, other := range []error{lendgraph.ErrUnauthorized, lendgraph.ErrNotFound, lendgraph.ErrJobFinished, lendgraph.ErrBadRequest} {
				if other != sentinel && errors.Is(err, other) {
					t.Errorf("%d matches %v too", status, other)
				}
			}
			var apiErr *lendgraph.APIError
			errors.As(err, &apiErr)
			if apiErr.Message != "nope" || !strings.Contains(err.Error(), "nope") {
				t.Errorf("%d: message %q / %q", status, apiErr.Message, err)
			}
		}
	})
	t.Run("402 balance and cost", func(t *testing.T) {
		err := errorFor(t, 402, `{"error":"insufficient credits","balance":3,"cost":12.5}`, nil)
		var ic *lendgraph.InsufficientCreditsError
		if !errors.As(err, &ic) || ic.Balance != 3 || ic.Cost != 12.5 {
			t.Fatalf("%#v", err)
		}
		if !strings.Contains(err.Error(), "balance 3 credits, cost 12.5 credits") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("403 entitlement_missing", func(t *testing.T) {
		err := errorFor(t, 403, `{"error":"entitlement_missing","entitlementKey":"bulk-delivery.agents","estimatedTotal":4200,"maxRows":1000}`, nil)
		var ee *lendgraph.EntitlementError
		if !errors.As(err, &ee) || ee.EntitlementKey != "bulk-delivery.agents" || ee.EstimatedTotal != 4200 || ee.MaxRows != 1000 {
			t.Fatalf("%#v", err)
		}
		if !errors.Is(err, lendgraph.ErrForbidden) || !strings.Contains(err.Error(), "bulk-delivery.agents") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("400 delivery_exceeds_max_rows", func(t *testing.T) {
		err := errorFor(t, 400, `{"error":"delivery_exceeds_max_rows","estimatedTotal":90000,"maxRows":50000}`, nil)
		var me *lendgraph.MaxRowsError
		if !errors.As(err, &me) || me.EstimatedTotal != 90000 || me.MaxRows != 50000 || !errors.Is(err, lendgraph.ErrBadRequest) {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("code error issues", func(t *testing.T) {
		err := errorFor(t, 400, `{"code":"invalid_body","error":"validation failed","issues":[{"message":"required","path":["name"]},{"message":"too long","path":"query.q"}]}`, nil)
		var ve *lendgraph.ValidationError
		if !errors.As(err, &ve) || len(ve.Issues) != 2 || ve.Code != "invalid_body" {
			t.Fatalf("%#v", err)
		}
		if ve.Issues[0].PathString() != "name" || ve.Issues[1].PathString() != "query.q" {
			t.Fatalf("issues %+v", ve.Issues)
		}
		if !strings.Contains(err.Error(), "name: required") || !strings.Contains(err.Error(), "(code invalid_body)") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("code details error", func(t *testing.T) {
		err := errorFor(t, 400, `{"code":"crm_not_connected","details":{"provider":"hubspot"},"error":"no CRM account"}`, nil)
		var ve *lendgraph.ValidationError
		if !errors.As(err, &ve) || ve.Code != "crm_not_connected" || ve.Details["provider"] != "hubspot" {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("error limit size", func(t *testing.T) {
		err := errorFor(t, 413, `{"error":"too many ids","limit":100,"size":250}`, nil)
		var le *lendgraph.LimitError
		if !errors.As(err, &le) || le.Limit != 100 || le.Size != 250 {
			t.Fatalf("%#v", err)
		}
		if !strings.Contains(err.Error(), "size 250 over limit 100") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("429 Retry-After", func(t *testing.T) {
		err := errorFor(t, 429, `{"error":"rate limited"}`, map[string]string{"Retry-After": "120"})
		var rl *lendgraph.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Minute || !errors.Is(err, lendgraph.ErrRateLimited) {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("502 HTML body", func(t *testing.T) {
		body := "<html><body><h1>502 Bad Gateway</h1></body></html>"
		err := errorFor(t, 502, body, map[string]string{"Content-Type": "text/html"})
		var apiErr *lendgraph.APIError
		errors.As(err, &apiErr)
		if apiErr.Message != "Bad Gateway" || strings.Contains(err.Error(), "<html>") {
			t.Fatalf("message %q / %q", apiErr.Message, err)
		}
		var ve *lendgraph.ValidationError
		if errors.As(err, &ve) {
			t.Fatal("HTML body became a ValidationError")
		}
	})
	t.Run("empty body", func(t *testing.T) {
		err := errorFor(t, 500, "", nil)
		if !strings.Contains(err.Error(), "500 Internal Server Error") {
			t.Fatalf("message %q", err)
		}
	})
}

func TestErrors_InvalidArgumentBeforeRequest(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client()
	ctx := context.Background()
	for name, do := range map[string]func() error{
		"page size 101": func() error {
			_, err := c.Agents.List(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 101}})
			return err
		},
		"page size -1": func() error {
			_, err := c.Loans.List(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: -1}})
			return err
		},
		"both filter kinds": func() error {
			_, err := c.Agents.List(ctx, &lendgraph.ListRequest{FlatFilters: map[string]any{"state": "CA"},
				AdvancedFilters: lendgraph.Eq("state", "CA")})
			return err
		},
		"sort without field": func() error {
			_, err := c.Agents.List(ctx, &lendgraph.ListRequest{Sort: []lendgraph.Sort{{Order: lendgraph.Desc}}})
			return err
		},
		"filter node with two kinds": func() error {
			_, err := c.Agents.List(ctx, &lendgraph.ListRequest{AdvancedFilters: &lendgraph.Filter{
				And: []*lendgraph.Filter{lendgraph.Eq("a", 1)}, Field: "b", Op: lendgraph.OpEq}})
			return err
		},
		"nil child": func() error {
			_, err := c.Agents.List(ctx, &lendgraph.ListRequest{AdvancedFilters: lendgraph.And(nil)})
			return err
		},
		"empty id":      func() error { _, err := c.Agents.Get(ctx, ""); return err },
		"relative path": func() error { return c.Do(ctx, "GET", "v1/agents", nil, nil) },
		"All with size 500": func() error {
			for _, err := range c.Agents.All(ctx, &lendgraph.ListRequest{Pagination: &lendgraph.Pagination{Size: 500}}) {
				return err
			}
			return nil
		},
	} {
		err := do()
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || ia.Problem == "" {
			t.Errorf("%s: err = %v, want *InvalidArgumentError", name, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid arguments", n)
	}
}

func TestJobError_Error(t *testing.T) {
	failed := &lendgraph.JobError{Kind: "delivery", JobID: "j1", Status: "failed", Message: "storage down"}
	if !errors.Is(failed, lendgraph.ErrJobFailed) || errors.Is(failed, lendgraph.ErrJobCancelled) ||
		failed.Error() != "lendgraph: delivery job j1 failed: storage down" {
		t.Fatalf("%v", failed)
	}
	cancelled := &lendgraph.JobError{Kind: "enrichment", JobID: "j2", Status: "cancelled"}
	if !errors.Is(cancelled, lendgraph.ErrJobCancelled) || errors.Is(cancelled, lendgraph.ErrJobFailed) {
		t.Fatalf("%v", cancelled)
	}
}

// Every exported error type prints something sensible, and never panics,
// as its zero value or as a value built by hand; errors.Is on it never
// panics either.
func TestErrors_ZeroAndHandBuilt(t *testing.T) {
	cases := []error{
		&lendgraph.APIError{},
		&lendgraph.APIError{StatusCode: 404},
		&lendgraph.InsufficientCreditsError{},
		&lendgraph.InsufficientCreditsError{Balance: 1, Cost: 2},
		&lendgraph.EntitlementError{},
		&lendgraph.MaxRowsError{},
		&lendgraph.ValidationError{},
		&lendgraph.ValidationError{Issues: []lendgraph.Issue{{Message: "bad"}}},
		&lendgraph.LimitError{},
		&lendgraph.RateLimitError{},
		&lendgraph.RateLimitError{RetryAfter: 3 * time.Second},
		&lendgraph.InvalidArgumentError{},
		&lendgraph.JobError{},
		&lendgraph.JobError{JobID: "ejob_1", Status: "failed"},
		&lendgraph.DecodeError{},
		&lendgraph.TransportError{},
		&lendgraph.DownloadError{},
		&lendgraph.PushIncompleteError{},
		&lendgraph.SearchHostError{},
	}
	for _, err := range cases {
		msg := err.Error()
		if !strings.HasPrefix(msg, "lendgraph: ") {
			t.Errorf("%T %+v prints %q: no lendgraph: prefix", err, err, msg)
		}
		for _, bad := range []string{"  ", ": :", "<nil>", "%!", " : "} {
			if strings.Contains(msg, bad) {
				t.Errorf("%T %+v prints %q (contains %q)", err, err, msg, bad)
			}
		}
		for _, target := range []error{lendgraph.ErrNotFound, lendgraph.ErrRateLimited, lendgraph.ErrJobFailed, context.Canceled} {
			_ = errors.Is(err, target)
		}
	}
	if got := (&lendgraph.APIError{StatusCode: 404}).Error(); got != "lendgraph: 404 Not Found" {
		t.Errorf("hand-built APIError prints %q", got)
	}
	if got := (&lendgraph.RateLimitError{RetryAfter: 3 * time.Second}).Error(); got != "lendgraph: 429 Too Many Requests: retry after 3s" {
		t.Errorf("hand-built RateLimitError prints %q", got)
	}
	// A typed error built by hand still matches its sentinel.
	if !errors.Is(&lendgraph.RateLimitError{}, lendgraph.ErrRateLimited) || !errors.Is(&lendgraph.InsufficientCreditsError{}, lendgraph.ErrInsufficientCredits) {
		t.Error("a hand-built typed error does not match its sentinel")
	}
}

// Nil pointers of every typed error print and unwrap without a panic.
func TestErrors_NilPointers(t *testing.T) {
	var apiErr *lendgraph.APIError
	for _, err := range []error{
		(*lendgraph.InsufficientCreditsError)(nil), (*lendgraph.EntitlementError)(nil), (*lendgraph.MaxRowsError)(nil),
		(*lendgraph.ValidationError)(nil), (*lendgraph.LimitError)(nil), (*lendgraph.RateLimitError)(nil),
		(*lendgraph.JobError)(nil), (*lendgraph.DecodeError)(nil), (*lendgraph.TransportError)(nil),
		(*lendgraph.DownloadError)(nil), (*lendgraph.PushIncompleteError)(nil), (*lendgraph.APIError)(nil),
	} {
		if msg := err.Error(); !strings.HasPrefix(msg, "lendgraph: ") {
			t.Errorf("%T(nil) prints %q", err, msg)
		}
		_ = errors.As(err, &apiErr)
		for _, target := range []error{lendgraph.ErrJobCancelled, lendgraph.ErrJobFailed, lendgraph.ErrRateLimited, lendgraph.ErrInsufficientCredits} {
			_ = errors.Is(err, target)
		}
	}
}

// An error repeats a bounded part of what the caller sent.
func TestErrors_BoundedCallerInput(t *testing.T) {
	srv := smallServer(t)
	c := srv.Client(lendgraph.WithMaxRetries(0))
	huge := strings.Repeat("a", 100_000)
	_, err := c.Agents.Get(context.Background(), huge)
	var apiErr *lendgraph.APIError
	if !errors.As(err, &apiErr) || apiErr.Path != "/v1/agents/"+huge {
		t.Fatalf("err = %T %.200v, want an *APIError keeping the whole path", err, err)
	}
	if n := len(err.Error()); n > 2048 {
		t.Fatalf("a 100,000-byte id made a %d-byte message", n)
	}
	if !strings.Contains(err.Error(), "(100011 bytes)") {
		t.Fatalf("the message does not say the path was cut: %.400s", err)
	}
	// A transport error with the same id: bounded too.
	c, _ = lendgraph.NewClient(lendgraph.WithBaseURL("http://"+closedAddr(t)), lendgraph.WithAPIKey("k"), lendgraph.WithMaxRetries(0))
	_, err = c.Agents.Get(context.Background(), huge)
	if err == nil || len(err.Error()) > 2048 {
		t.Fatalf("transport error of %d bytes", len(err.Error()))
	}
	// ... and it keeps its cause, whatever the path's length.
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("the transport error lost its cause: %.400s...%s", err, err.Error()[max(len(err.Error())-200, 0):])
	}
	// An invalid argument quoting the id: bounded too.
	_, err = c.Properties.Enrich(context.Background(), "..", nil)
	if err == nil || len(err.Error()) > 2048 {
		t.Fatalf("err = %v", err)
	}
}

// APIError.Path names the path the request went to, a gateway's prefix
// included.
func TestAPIError_PathWithBasePrefix(t *testing.T) {
	srv := smallServer(t)
	target, _ := url.Parse(srv.URL)
	gw := httptest.NewServer(http.StripPrefix("/gw", httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(gw.Close)
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(gw.URL+"/gw/v1"), lendgraph.WithAPIKey(srv.DefaultCaller().Key))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Agents.Get(context.Background(), "nope")
	var apiErr *lendgraph.APIError
	if !errors.As(err, &apiErr) || apiErr.Path != "/gw/v1/agents/nope" || !strings.Contains(err.Error(), "GET /gw/v1/agents/nope") {
		t.Fatalf("err = %v (path %q), want the gateway's prefix", err, apiErr.Path)
	}
}

func TestNewClient_VersionSuffix(t *testing.T) {
	for raw, want := range map[string]string{
		"https://api.example.com/v1":     "https://api.example.com",
		"https://api.example.com/V1/":    "https://api.example.com",
		"https://api.example.com/gw/v1":  "https://api.example.com/gw",
		"https://api.example.com/gw":     "https://api.example.com/gw",
		"https://api.example.com/v1beta": "https://api.example.com/v1beta",
	} {
		c, err := lendgraph.NewClient(lendgraph.WithBaseURL(raw))
		if err != nil || c.BaseURL() != want {
			t.Errorf("%s: base %q, %v; want %q", raw, c.BaseURL(), err, want)
		}
	}
	for _, raw := range []string{"https://api.example.com/v1/v1", "https://api.example.com/V1/v1/"} {
		_, err := lendgraph.NewClient(lendgraph.WithBaseURL(raw))
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) || !strings.Contains(err.Error(), "/v1/v1") {
			t.Errorf("%s: err = %v, want an *InvalidArgumentError naming /v1/v1", raw, err)
		}
	}
}

func TestNewClient_NilsRefused(t *testing.T) {
	for name, opts := range map[string][]lendgraph.Option{
		"nil option":         {lendgraph.WithAPIKey("k"), nil},
		"WithHTTPClient nil": {lendgraph.WithHTTPClient(nil)},
	} {
		_, err := lendgraph.NewClient(opts...)
		var ia *lendgraph.InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s: err = %v, want *InvalidArgumentError", name, err)
		}
	}
}

func TestMissingAPIKeyError(t *testing.T) {
	t.Setenv(lendgraph.EnvAPIKey, "")
	srv := smallServer(t)
	c, err := lendgraph.NewClient(lendgraph.WithBaseURL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Agents.List(context.Background(), nil)
	var mk *lendgraph.MissingAPIKeyError
	if !errors.As(err, &mk) || !errors.Is(err, lendgraph.ErrMissingAPIKey) || mk.Operation != "Agents.List" {
		t.Fatalf("err = %v, want a *MissingAPIKeyError for Agents.List matching ErrMissingAPIKey", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// A stub returns the errors the SDK returns through the exported constructors.
func TestErrorConstructors(t *testing.T) {
	err := lendgraph.NewOutcomeUnknownError(&lendgraph.TransportError{Method: "POST", Path: "/v1/properties/p1/enrich", Err: errors.New("reset")})
	var te *lendgraph.TransportError
	if !errors.Is(err, lendgraph.ErrOutcomeUnknown) || !errors.As(err, &te) || !strings.Contains(err.Error(), "outcome unknown") {
		t.Fatalf("NewOutcomeUnknownError: %v", err)
	}
	if !errors.Is(lendgraph.NewOutcomeUnknownError(nil), lendgraph.ErrOutcomeUnknown) {
		t.Fatal("NewOutcomeUnknownError(nil)")
	}
	err = lendgraph.NewAPIError("POST", "/v1/properties/p1/enrich", 402, http.Header{"X-Request-Id": {"req-1"}}, []byte(`{"error":"insufficient_credits","balance":0,"cost":1}`))
	var ic *lendgraph.InsufficientCreditsError
	if !errors.As(err, &ic) || ic.Cost != 1 || ic.RequestID != "req-1" || !errors.Is(err, lendgraph.ErrInsufficientCredits) {
		t.Fatalf("NewAPIError 402: %#v", err)
	}
	err = lendgraph.NewAPIError("GET", "/v1/agents", 429, http.Header{"Retry-After": {"3"}}, nil)
	var rl *lendgraph.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 3*time.Second {
		t.Fatalf("NewAPIError 429: %v", err)
	}
	if err := lendgraph.NewAPIError("GET", "/v1/agents/x", 404, nil, nil); !errors.Is(err, lendgraph.ErrNotFound) {
		t.Fatalf("NewAPIError 404: %v", err)
	}
	err = lendgraph.NewSearchHostError("POST", "/indexes/agents/search", lendgraph.IndexAgents, 403, nil,
		[]byte(`{"message":"The provided API key is invalid.","code":"invalid_api_key","type":"auth","link":"https://docs"}`))
	var he *lendgraph.SearchHostError
	if !errors.As(err, &he) || he.Index != lendgraph.IndexAgents || he.Code != "invalid_api_key" || he.Type != "auth" ||
		!errors.Is(err, lendgraph.ErrForbidden) || he.APIError == nil || he.StatusCode != 403 {
		t.Fatalf("NewSearchHostError 403: %#v", err)
	}
}
