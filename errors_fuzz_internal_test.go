package lendgraph

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzParseError: any status, headers and body give a typed error that
// unwraps to an *APIError with the status, never a panic, and whose text
// stays bounded by the capped body.
func FuzzParseError(f *testing.F) {
	for _, s := range []struct {
		status int
		ra     string
		body   string
	}{
		{400, "", `{"error":"bad"}`},
		{402, "", `{"error":"insufficient credits","balance":1.5,"cost":3}`},
		{403, "", `{"error":"entitlement_missing","entitlementKey":"bulk-delivery.agents","estimatedTotal":5000,"maxRows":1000}`},
		{400, "", `{"error":"delivery_exceeds_max_rows","estimatedTotal":1e9,"maxRows":1000000}`},
		{422, "", `{"code":"invalid","error":"x","issues":[{"message":"m","path":["a",0]}]}`},
		{400, "", `{"code":"c","details":{"a":1},"error":"e"}`},
		{413, "", `{"error":"too big","limit":10,"size":20}`},
		{429, "3", `{"error":"slow down"}`},
		{429, "Wed, 21 Oct 2015 07:28:00 GMT", ``},
		{429, "NaN", `{"error":1}`},
		{502, "-1", `<html>bad gateway</html>`},
		{500, "99999999999999999999", `{"error":null,"issues":null,"balance":"x"}`},
		{404, "", `{"issues":[{"path":{"x":[1,2]}}]}`},
	} {
		f.Add(s.status, s.ra, []byte(s.body))
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		if len(body) > maxErrorBody {
			body = body[:maxErrorBody]
		}
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Request-Id", "req_1")
		err := parseError("GET", "/v1/x", status, h, body, false, now)
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != status || ae.RequestID != "req_1" {
			t.Fatalf("parseError(%d, %q) = %#v", status, body, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "[request req_1]") {
			t.Fatalf("no request id in %q", msg)
		}
		// The text grows with the body at most a few times over (issues
		// and message quoted), never without bound.
		if len(msg) > 4*len(body)+1024 {
			t.Fatalf("%d-byte message for a %d-byte body", len(msg), len(body))
		}
		var rl *RateLimitError
		if errors.As(err, &rl) && rl.RetryAfter < 0 {
			t.Fatalf("negative RetryAfter %s", rl.RetryAfter)
		}
	})
}
