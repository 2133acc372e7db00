package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// TestSubmitLimitAIMD: an overloaded answer halves the limit once a window
// (the submits already in flight do not halve it again), good answers
// raise it back by one a window, and it stays within 1 and the maximum.
func TestSubmitLimitAIMD(t *testing.T) {
	l := newSubmitLimit(16)
	ctx := context.Background()
	var epochs []int
	for range 16 {
		e, err := l.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, e)
	}
	// A 17th waits for a slot.
	wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	if _, err := l.acquire(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a submit above the limit: %v", err)
	}
	cancel()
	// Every submit of the window answers 429: one halving, not sixteen.
	for _, e := range epochs {
		l.release(e, true)
	}
	if got := l.current(); got != 8 {
		t.Fatalf("after a window of 429s the limit is %d, want 8", got)
	}
	// At most 8 in flight now.
	epochs = epochs[:0]
	for range 8 {
		e, _ := l.acquire(ctx)
		epochs = append(epochs, e)
	}
	wctx, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
	if _, err := l.acquire(wctx); err == nil {
		t.Fatal("a 9th submit went out under a limit of 8")
	}
	cancel()
	// Halving again and again, one window after another, stops at one.
	for _, e := range epochs {
		l.release(e, true)
	}
	for range 10 {
		e, _ := l.acquire(ctx)
		l.release(e, true)
	}
	if got := l.current(); got != 1 {
		t.Fatalf("after ten windows of overloads the limit is %d, want 1", got)
	}
	// Good answers grow it back, one a window, up to the maximum.
	for range 200 {
		e, _ := l.acquire(ctx)
		l.release(e, false)
	}
	if got := l.current(); got != 16 {
		t.Fatalf("after 200 good answers the limit is %d, want 16", got)
	}
}

func TestOverloaded(t *testing.T) {
	for _, tc := range []struct {
		err  error
		took time.Duration
		want bool
	}{
		{nil, time.Millisecond, false},
		{nil, slowSubmit, true},
		{&lendgraph.RateLimitError{APIError: &lendgraph.APIError{StatusCode: http.StatusTooManyRequests}}, 0, true},
		{&lendgraph.APIError{StatusCode: http.StatusServiceUnavailable}, 0, true},
		{&lendgraph.APIError{StatusCode: http.StatusBadRequest}, 0, false},
		{&lendgraph.InsufficientCreditsError{APIError: &lendgraph.APIError{StatusCode: http.StatusPaymentRequired}}, 0, false},
		{&lendgraph.TransportError{Method: "POST", Path: "/v1/agents/bulk-delivery", Err: errors.New("connection reset")}, 0, true},
		{fmt.Errorf("submit: %w", lendgraph.ErrOutcomeUnknown), 0, true},
	} {
		if got := overloaded(tc.err, tc.took); got != tc.want {
			t.Errorf("overloaded(%v, %s) = %v, want %v", tc.err, tc.took, got, tc.want)
		}
	}
}

func TestProbeWait(t *testing.T) {
	rl := &lendgraph.RateLimitError{APIError: &lendgraph.APIError{StatusCode: http.StatusTooManyRequests}}
	for attempt, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := probeWait(rl, attempt); got != want {
			t.Errorf("attempt %d: %s, want %s", attempt, got, want)
		}
	}
	if got := probeWait(rl, 40); got != probeBackoffMax {
		t.Errorf("attempt 40: %s, want the cap %s", got, probeBackoffMax)
	}
	rl.RetryAfter = 7 * time.Second
	if got := probeWait(rl, 0); got != 7*time.Second {
		t.Errorf("with Retry-After 7s: %s", got)
	}
}
