package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"math"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0":     0,
		"7":     7 * time.Second,
		" 120 ": 2 * time.Minute,
		"86400": 24 * time.Hour,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0, // a date in the past: now
	} {
		got, ok := RetryAfter(http.Header{"Retry-After": {v}}, now)
		if !ok || got != want {
			t.Errorf("Retry-After %q = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-3", "1.5", "Thu, 99 Foo 2026"} {
		if d, ok := RetryAfter(http.Header{"Retry-After": {v}}, now); ok {
			t.Errorf("Retry-After %q accepted as %v", v, d)
		}
	}
	if d, ok := RetryAfter(http.Header{"Retry-After": {"99999999999999999"}}, now); !ok || d <= 0 {
		t.Errorf("overflowing Retry-After = %v, %v", d, ok)
	}
}

func TestFromMillis(t *testing.T) {
	maxMillis := int64(math.MaxInt64 / time.Millisecond)
	for _, tc := range []struct {
		ms   int64
		want time.Duration
		ok   bool
	}{
		{math.MinInt64, 0, false},
		{-1, 0, false},
		{0, 0, false},
		{1, time.Millisecond, true},
		{59_999, time.Minute - time.Millisecond, true},
		{60_001, time.Minute + time.Millisecond, true},
		{maxMillis, time.Duration(maxMillis) * time.Millisecond, true},
		{maxMillis + 1, math.MaxInt64, true},
		{1e15, math.MaxInt64, true}, // overflowed to 1,076,616 hours when converted first
		{math.MaxInt64, math.MaxInt64, true},
	} {
		if got, ok := FromMillis(tc.ms); got != tc.want || ok != tc.ok {
			t.Errorf("FromMillis(%d) = %v, %v; want %v, %v", tc.ms, got, ok, tc.want, tc.ok)
		}
	}
}

// One cap for every server-requested wait: at the cap a 429 or 503 is
// retried, a second above it is not.
func TestDecideCap(t *testing.T) {
	for ra, want := range map[string]bool{"2": true, "3": false} {
		for _, status := range []int{429, 503} {
			resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {ra}}}
			if got, _, _ := Decide(Idempotent, resp, nil, 2*time.Second); got != want {
				t.Errorf("%d Retry-After %s with a 2s cap: retry %v, want %v", status, ra, got, want)
			}
		}
	}
}

func TestJitter(t *testing.T) {
	base, maxWait := 250*time.Millisecond, 8*time.Second
	for attempt := range 40 {
		d := Jitter(base, maxWait, attempt)
		ceiling := min(base<<min(attempt, 20), maxWait)
		if d < ceiling/2 || d > ceiling {
			t.Errorf("attempt %d: backoff %v outside [%v, %v]", attempt, d, ceiling/2, ceiling)
		}
	}
}

func TestDecideKinds(t *testing.T) {
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		kind   Kind
		status int
		err    error
		want   bool
		cost   int
	}{
		{Idempotent, 503, nil, true, CostStatus},
		{Unrepeatable, 503, nil, false, 0},
		{Unrepeatable, 429, nil, true, CostStatus},
		{Idempotent, 501, nil, false, 0},
		{Idempotent, 404, nil, false, 0},
		{Idempotent, 0, reset, true, CostTransport},
		{Unrepeatable, 0, reset, false, 0},
		{Unrepeatable, 0, refused, true, CostTransport},
		// The call's context is live (the loop checks it first): a
		// deadline in err is the attempt's own timeout
		// (http.Client.Timeout, ResponseHeaderTimeout), a transport
		// failure like any other.
		{Idempotent, 0, context.DeadlineExceeded, true, CostTransport},
		{Unrepeatable, 0, context.DeadlineExceeded, false, 0},
		{Idempotent, 0, ErrNoRetry, false, 0},
		{Idempotent, 0, Final(context.DeadlineExceeded), false, 0},
		{Never, 503, nil, false, 0},
		{Launch, 502, nil, true, CostStatus},
		{Launch, 500, nil, false, 0},
		{Launch, 503, nil, false, 0},
		{Launch, 504, nil, false, 0},
		{Launch, 429, nil, true, CostStatus},
		{Launch, 0, reset, false, 0},
		{Launch, 0, refused, true, CostTransport},
		{Idempotent, 0, &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, false, 0},
		{Idempotent, 599, nil, true, CostStatus},
		{Idempotent, 600, nil, false, 0}, // not a 5xx: a broken server, not a busy one
		{Idempotent, 999, nil, false, 0},
	} {
		var resp *http.Response
		if tc.err == nil {
			resp = &http.Response{StatusCode: tc.status, Header: http.Header{}}
		}
		got, _, cost := Decide(tc.kind, resp, tc.err, DefaultMaxServerWait)
		if got != tc.want || cost != tc.cost {
			t.Errorf("kind %d status %d err %v: retry=%v cost %d, want %v cost %d", tc.kind, tc.status, tc.err, got, cost, tc.want, tc.cost)
		}
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(12)
	for i, want := range []bool{true, true, false} {
		if got := b.Take(CostStatus); got != want {
			t.Fatalf("take %d: %v, want %v", i, got, want)
		}
	}
	if b.Tokens() != 2 {
		t.Fatalf("tokens %d, want 2 (a refused take takes none)", b.Tokens())
	}
	b.Refund()
	if b.Tokens() != 3 {
		t.Fatalf("tokens %d after a refund, want 3", b.Tokens())
	}
	for range 100 {
		b.Refund()
	}
	if b.Tokens() != 12 {
		t.Fatalf("tokens %d after many refunds, want the size, 12", b.Tokens())
	}
	var none *Budget
	if !none.Take(1000) {
		t.Fatal("no budget refused a retry")
	}
	none.Refund()
}
