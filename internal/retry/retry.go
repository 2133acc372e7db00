// Package retry holds the retry policy of the SDK's request pipeline: which
// failures are retried for which kind of call, how long to wait between
// attempts, and the retry budget a client shares across goroutines. The
// loop that applies it is go-retryablehttp's, driven by the root package.
package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind says whether repeating a call can act or charge twice.
type Kind int

const (
	// Idempotent calls (reads, list queries, polls, cancels, and submits the
	// reference calls safe to retry) are retried on 429, on 5xx and on any
	// transport error.
	Idempotent Kind = iota
	// Unrepeatable calls (anything that may debit credits or act twice) are
	// retried only when the server certainly did not act: a 429, or a
	// connection that could not be opened.
	Unrepeatable
	// Never is for calls whose failures are handled by the caller itself.
	Never
	// Launch calls start a job that charges credits when it completes (a
	// bulk delivery submit). They are retried like Unrepeatable calls, and
	// also on a 502, which the reference documents as "the job failed to
	// launch; safe to retry". Any other 5xx, a reset after sending or a
	// cut response may mean a job started: repeating it could charge twice.
	Launch
)

// DefaultMaxServerWait is the default cap on server-requested waits.
const DefaultMaxServerWait = time.Minute

// Decide judges one failed attempt of a call of kind k: an answer resp
// (status 400 or above), or a transport error err. It reports whether the
// call may be repeated, why ("status 503", "transport error"), and the
// budget the retry costs. maxServerWait caps the Retry-After the client
// waits for: an answer asking for longer is not retried, so that the
// caller gets the typed error with the server's value at once.
func Decide(k Kind, resp *http.Response, err error, maxServerWait time.Duration) (ok bool, reason string, cost int) {
	if k == Never {
		return false, "", 0
	}
	if err != nil {
		// The call's context is live (the caller checks that first): a
		// deadline or a cancellation in err is the attempt's own (the
		// http.Client's Timeout, the transport's ResponseHeaderTimeout, a
		// per-attempt timeout), a transport failure like a reset.
		if errors.Is(err, ErrNoRetry) || permanent(err) {
			return false, "", 0
		}
		if k != Idempotent && !NotSent(err) {
			return false, "", 0
		}
		return true, "transport error", CostTransport
	}
	status := resp.StatusCode
	switch {
	case status == http.StatusTooManyRequests:
	case status >= 500 && status < 600 && status != http.StatusNotImplemented:
		if k != Idempotent && (k != Launch || status != http.StatusBadGateway) {
			return false, "", 0
		}
	default:
		return false, "", 0
	}
	if d, ok := RetryAfter(resp.Header, time.Now()); ok && d > maxServerWait {
		return false, "", 0
	}
	return true, "status " + strconv.Itoa(status), CostStatus
}

// FromMillis converts a wait a server sent in milliseconds (market
// movement's retryAfterMs) to a duration, clamping before converting: a
// value past the largest duration is the largest duration, never an
// overflow. Zero and negative values report false.
func FromMillis(ms int64) (time.Duration, bool) {
	if ms <= 0 {
		return 0, false
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return time.Duration(math.MaxInt64), true
	}
	return time.Duration(ms) * time.Millisecond, true
}

// Jitter returns a full-jitter exponential wait for the given attempt (0
// first): a step of base doubling per attempt, bounded by maxWait, half of
// it fixed and half random, so that it is never zero and still spread out.
func Jitter(base, maxWait time.Duration, attempt int) time.Duration {
	step := float64(base) * math.Pow(2, float64(min(attempt, 30)))
	ceiling := time.Duration(min(step, float64(maxWait)))
	if ceiling <= 0 {
		return 0
	}
	return ceiling/2 + rand.N(ceiling/2+1)
}

// ErrNoRetry marks a transport error that must not be retried (a refused
// redirect, a rate-limit wait that cannot finish before the deadline).
var ErrNoRetry = errors.New("not retryable")

// Final marks err as not retryable (it then matches ErrNoRetry) and keeps
// it, message and chain, as it is.
func Final(err error) error { return finalError{err} }

type finalError struct{ error }

func (e finalError) Unwrap() []error { return []error{e.error, ErrNoRetry} }

// permanent reports transport errors that a retry cannot fix: a
// certificate the client does not trust.
func permanent(err error) bool {
	var cv *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	return errors.As(err, &cv) || errors.As(err, &ua) || errors.As(err, &hn)
}

// NotSent reports whether err shows that the request never reached the
// server (the connection could not be opened), so repeating it cannot make
// the server act twice.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

// RetryAfter parses a Retry-After header, in seconds or as an HTTP date.
// Garbage, negative values and absent headers report false.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Interrupted reports whether err, met while reading a response body, shows
// the connection was cut (the body ended early or was reset), as opposed
// to a body that arrived whole but was not what the caller expected.
func Interrupted(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne)
}

// Wait sleeps for d, returning early with the context's error when it ends.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// DefaultBudget is the number of retry tokens a client starts with.
const DefaultBudget = 500

// CostStatus and CostTransport are the tokens one retry takes from the
// budget: after a status (429, 5xx) and after a transport error (a reset,
// an attempt timeout, a cut body).
const (
	CostStatus    = 5
	CostTransport = 10
)

// Budget is a client-wide retry quota, after aws-sdk-go-v2's retry quota:
// each retry takes tokens (CostStatus or CostTransport), each successful
// attempt gives one back up to the size, and when the bucket is empty
// calls fail at their first error instead of piling onto an API that is
// already failing. A nil *Budget is unlimited.
type Budget struct {
	mu     sync.Mutex
	tokens int
	max    int
}

// NewBudget returns a budget holding n tokens.
func NewBudget(n int) *Budget { return &Budget{tokens: n, max: n} }

// Take takes cost tokens, reporting false (and taking none) when fewer
// are left.
func (b *Budget) Take(cost int) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < cost {
		return false
	}
	b.tokens -= cost
	return true
}

// Refund gives one token back, up to the size.
func (b *Budget) Refund() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.tokens < b.max {
		b.tokens++
	}
	b.mu.Unlock()
}

// Tokens reports the tokens left (for tests and diagnostics).
func (b *Budget) Tokens() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
