package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
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

// One cap for every server-requested wait: at the cap the client waits, a
// nanosecond above it does not, and CheckRetry follows the same rule.
func TestHonoursCap(t *testing.T) {
	p := New()
	p.Budget = nil
	p.MaxServerWait = 2 * time.Second
	if !p.Honours(2*time.Second) || p.Honours(2*time.Second+1) || !p.Honours(0) {
		t.Fatal("Honours does not draw the line at MaxServerWait")
	}
	for ra, want := range map[string]bool{"2": true, "3": false} {
		for _, status := range []int{429, 503} {
			resp := &http.Response{StatusCode: status, Header: http.Header{"Retry-After": {ra}}}
			if got, _ := p.CheckRetry(WithKind(context.Background(), Idempotent), resp, nil); got != want {
				t.Errorf("%d Retry-After %s with a 2s cap: retry %v, want %v", status, ra, got, want)
			}
		}
	}
}

func TestBackoff(t *testing.T) {
	p := New()
	resp := func(ra string) *http.Response {
		h := http.Header{}
		if ra != "" {
			h.Set("Retry-After", ra)
		}
		return &http.Response{StatusCode: 503, Header: h}
	}
	if d := p.Backoff(0, 0, 0, resp("5")); d != 5*time.Second {
		t.Errorf("Retry-After 5 → %v", d)
	}
	if d := p.Backoff(0, 0, 0, resp("100000")); d != p.MaxServerWait {
		t.Errorf("huge Retry-After not capped: %v", d)
	}
	for attempt := range 40 {
		d := p.Backoff(0, 0, attempt, resp(""))
		ceiling := min(p.BaseDelay<<min(attempt, 20), p.MaxDelay)
		if d < ceiling/2 || d > ceiling {
			t.Errorf("attempt %d: backoff %v outside [%v, %v]", attempt, d, ceiling/2, ceiling)
		}
	}
}

func TestCheckRetryKinds(t *testing.T) {
	p := New()
	p.Budget = nil
	refused := &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		kind   Kind
		status int
		err    error
		want   bool
	}{
		{Idempotent, 503, nil, true},
		{Unrepeatable, 503, nil, false},
		{Unrepeatable, 429, nil, true},
		{Idempotent, 501, nil, false},
		{Idempotent, 404, nil, false},
		{Idempotent, 0, reset, true},
		{Unrepeatable, 0, reset, false},
		{Unrepeatable, 0, refused, true},
		// The call's context is live: a deadline in err is the attempt's
		// own timeout (http.Client.Timeout, ResponseHeaderTimeout), a
		// transport failure like any other.
		{Idempotent, 0, context.DeadlineExceeded, true},
		{Unrepeatable, 0, context.DeadlineExceeded, false},
		{Idempotent, 0, ErrNoRetry, false},
		{Idempotent, 0, Final(context.DeadlineExceeded), false},
		{Never, 503, nil, false},
		{Launch, 502, nil, true},
		{Launch, 500, nil, false},
		{Launch, 503, nil, false},
		{Launch, 504, nil, false},
		{Launch, 429, nil, true},
		{Launch, 0, reset, false},
		{Launch, 0, refused, true},
		{Idempotent, 0, &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, false},
		{Idempotent, 599, nil, true},
		{Idempotent, 600, nil, false}, // not a 5xx: a broken server, not a busy one
		{Idempotent, 999, nil, false},
	} {
		var resp *http.Response
		if tc.err == nil {
			resp = &http.Response{StatusCode: tc.status, Header: http.Header{}}
		}
		got, _ := p.CheckRetry(WithKind(context.Background(), tc.kind), resp, tc.err)
		if got != tc.want {
			t.Errorf("kind %d status %d err %v: retry=%v, want %v", tc.kind, tc.status, tc.err, got, tc.want)
		}
	}
}

func TestBudget(t *testing.T) {
	p := New()
	p.MaxRetries = 1000
	p.Budget = NewBudget(12)
	ctx := WithKind(context.Background(), Idempotent)
	r503 := &http.Response{StatusCode: 503, Header: http.Header{}}
	for i, want := range []bool{true, true, false} {
		if got, _ := p.CheckRetry(ctx, r503, nil); got != want {
			t.Fatalf("retry %d: %v, want %v", i, got, want)
		}
	}
	p.CheckRetry(ctx, &http.Response{StatusCode: 200}, nil)
	if p.Budget.Tokens() != 3 {
		t.Fatalf("tokens %d after a success, want 3", p.Budget.Tokens())
	}
	// The last attempt of a call spends nothing.
	p.MaxRetries = 0
	p.Budget = NewBudget(10)
	if got, _ := p.CheckRetry(WithKind(context.Background(), Idempotent), r503, nil); got || p.Budget.Tokens() != 10 {
		t.Fatalf("last attempt: retry=%v tokens=%d", got, p.Budget.Tokens())
	}
	if _, err := p.CheckRetry(canceled(), r503, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
	// Only the call's own context ends the retries: once it has ended, no
	// error is retried, a deadline included.
	p.MaxRetries, p.Budget = 3, nil
	expired, cancel := context.WithDeadline(WithKind(context.Background(), Idempotent), time.Now())
	defer cancel()
	if retry, err := p.CheckRetry(expired, nil, context.DeadlineExceeded); retry || err != context.DeadlineExceeded {
		t.Fatalf("expired ctx: retry=%v err=%v", retry, err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
