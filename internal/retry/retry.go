// Package retry holds the retry policy of the SDK's request pipeline: which
// failures are retried for which kind of call, how long to wait between
// attempts, and the retry budget a client shares across goroutines.
//
// It plugs into go-retryablehttp as its CheckRetry and Backoff functions; the
// kind of the call travels in the request's context so one client can serve
// calls that may be repeated and calls that must not be.
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
	"sync/atomic"
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
	// Never is for calls whose failures are handled by the caller itself (a
	// resumable download reports a cut body to its own loop).
	Never
	// Launch calls start a job that charges credits when it completes (a
	// bulk delivery submit). They are retried like Unrepeatable calls, and
	// also on a 502, which the reference documents as "the job failed to
	// launch; safe to retry". Any other 5xx, a reset after sending or a
	// cut response may mean a job started: repeating it could charge twice.
	Launch
)

type kindKey struct{}

// call is what the policy knows about one call: its kind and how many of
// its attempts it has judged so far.
type call struct {
	kind       Kind
	maxRetries int // < 0: the policy's MaxRetries
	attempts   atomic.Int32

	mu      sync.Mutex
	reason  string    // why the last retry was decided
	decided time.Time // when it was decided
}

// WithKind returns a context that tells the policy what kind of call travels
// in it. Use a fresh one per call: it also counts the call's attempts.
func WithKind(ctx context.Context, k Kind) context.Context {
	return WithCall(ctx, k, -1)
}

// WithCall is WithKind for a call with its own retry limit: maxRetries
// replaces the policy's MaxRetries when it is not negative.
func WithCall(ctx context.Context, k Kind, maxRetries int) context.Context {
	return context.WithValue(ctx, kindKey{}, &call{kind: k, maxRetries: maxRetries})
}

// LastRetry reports why the policy last decided to retry the call in ctx
// (such as "status 503" or "transport error") and when; empty when it has
// not retried it.
func LastRetry(ctx context.Context) (reason string, at time.Time) {
	c, ok := ctx.Value(kindKey{}).(*call)
	if !ok {
		return "", time.Time{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason, c.decided
}

// retrying records a retry decision for the call in ctx and returns ok.
func retrying(ctx context.Context, ok bool, reason string) bool {
	if c, found := ctx.Value(kindKey{}).(*call); found && ok {
		c.mu.Lock()
		c.reason, c.decided = reason, time.Now()
		c.mu.Unlock()
	}
	return ok
}

// MaxRetriesOf returns the retry limit of the call in ctx: its own, or the
// policy's.
func (p *Policy) MaxRetriesOf(ctx context.Context) int {
	if c, ok := ctx.Value(kindKey{}).(*call); ok && c.maxRetries >= 0 {
		return c.maxRetries
	}
	return p.MaxRetries
}

// KindOf reports the call kind in ctx, Idempotent when none was set.
func KindOf(ctx context.Context) Kind {
	if c, ok := ctx.Value(kindKey{}).(*call); ok {
		return c.kind
	}
	return Idempotent
}

// lastAttempt counts an attempt of the call in ctx and reports whether no
// retry may follow it, so that no budget is spent on a retry that will not
// happen.
func (p *Policy) lastAttempt(ctx context.Context) bool {
	c, ok := ctx.Value(kindKey{}).(*call)
	return ok && int(c.attempts.Add(1)) > p.MaxRetriesOf(ctx)
}

// Policy decides retries and waits. The zero value is not usable; use New.
type Policy struct {
	// BaseDelay is the first backoff step; the step doubles per attempt.
	BaseDelay time.Duration
	// MaxDelay bounds one computed backoff wait.
	MaxDelay time.Duration
	// MaxServerWait is the cap on every wait a server asks for (a
	// Retry-After on any response, a job poll's 429, market movement's
	// retryAfterMs): see Honours.
	MaxServerWait time.Duration
	// MaxRetries is the number of retries of one call unless the call sets
	// its own (WithCall); the retry client's RetryMax must not be lower
	// than any call's.
	MaxRetries int
	// Budget is shared by every call of one client; nil means unlimited.
	Budget *Budget
}

// DefaultMaxServerWait is the default cap on server-requested waits.
const DefaultMaxServerWait = time.Minute

// Honours is the one rule on waits a server asks for: the client sleeps
// through a wait of at most MaxServerWait; a longer one is not waited for
// (and a request that asked for it is not retried), so that the caller gets
// the typed error with the server's value at once and decides, instead of
// a script being parked for a day by Retry-After: 86400.
func (p *Policy) Honours(d time.Duration) bool { return d <= p.MaxServerWait }

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

// New returns the SDK's default policy with a fresh budget.
func New() *Policy {
	return &Policy{
		BaseDelay:     250 * time.Millisecond,
		MaxDelay:      8 * time.Second,
		MaxServerWait: DefaultMaxServerWait,
		MaxRetries:    3,
		Budget:        NewBudget(DefaultBudget),
	}
}

// CheckRetry implements retryablehttp.CheckRetry.
func (p *Policy) CheckRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	kind := KindOf(ctx)
	if kind == Never {
		return false, nil
	}
	if err == nil && resp.StatusCode < 400 {
		p.Budget.refund()
		return false, nil
	}
	if p.lastAttempt(ctx) {
		return false, nil
	}
	if err != nil {
		// The call's context is live (checked above): a deadline or a
		// cancellation in err is the attempt's own (the http.Client's
		// Timeout, the transport's ResponseHeaderTimeout, a per-attempt
		// timeout), a transport failure like a reset connection.
		if errors.Is(err, ErrNoRetry) || permanent(err) {
			return false, nil
		}
		if kind != Idempotent && !NotSent(err) {
			return false, nil
		}
		return retrying(ctx, p.Budget.take(costTransport), "transport error"), nil
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		if d, ok := RetryAfter(resp.Header, time.Now()); ok && !p.Honours(d) {
			return false, nil
		}
		return retrying(ctx, p.Budget.take(costStatus), "status 429"), nil
	case resp.StatusCode >= 500 && resp.StatusCode < 600 && resp.StatusCode != http.StatusNotImplemented:
		if kind != Idempotent && (kind != Launch || resp.StatusCode != http.StatusBadGateway) {
			return false, nil
		}
		if d, ok := RetryAfter(resp.Header, time.Now()); ok && !p.Honours(d) {
			return false, nil
		}
		return retrying(ctx, p.Budget.take(costStatus), "status "+strconv.Itoa(resp.StatusCode)), nil
	}
	return false, nil
}

// Backoff implements retryablehttp.Backoff: a server's Retry-After (bounded
// by MaxServerWait; CheckRetry refuses to retry a longer one) when it sent one, otherwise exponential backoff with full
// jitter bounded by MaxDelay.
func (p *Policy) Backoff(_, _ time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if d, ok := RetryAfter(resp.Header, time.Now()); ok {
			return min(d, p.MaxServerWait)
		}
	}
	return p.Jitter(attempt)
}

// Jitter returns a full-jitter exponential wait for the given attempt (0 first).
func (p *Policy) Jitter(attempt int) time.Duration {
	step := float64(p.BaseDelay) * math.Pow(2, float64(min(attempt, 30)))
	ceiling := time.Duration(min(step, float64(p.MaxDelay)))
	if ceiling <= 0 {
		return 0
	}
	// Half fixed, half random: never zero, still spread out.
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

// Spend takes the budget of one retry of a cut response body, reporting
// false when the client's budget is exhausted.
func (p *Policy) Spend() bool { return p.Budget.take(costTransport) }

// CostStatus and CostTransport are the tokens one retry takes from the
// budget: after a status (429, 5xx) and after a transport error.
const (
	CostStatus    = costStatus
	CostTransport = costTransport
)

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

const (
	costStatus    = 5
	costTransport = 10
)

// Budget is a client-wide retry quota, after aws-sdk-go-v2's retry quota:
// each retry takes tokens (5 after a 429 or 5xx, 10 after a transport
// error), each success gives one back up to the size, and when the bucket
// is empty calls fail at their first error instead of piling onto an API
// that is already failing. The zero size (a nil *Budget) is unlimited.
type Budget struct {
	mu     sync.Mutex
	tokens int
	max    int
}

// NewBudget returns a budget holding n tokens.
func NewBudget(n int) *Budget { return &Budget{tokens: n, max: n} }

func (b *Budget) take(cost int) bool {
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

func (b *Budget) refund() {
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
