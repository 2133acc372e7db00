package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// attemptTransport cuts an attempt that takes longer than timeout
// (WithAttemptTimeout, or the call's CallAttemptTimeout; 0: never): an API or search-host attempt from sending the
// request to the end of its body; a download (a streaming attempt) while
// it waits for the headers and then whenever no byte arrives for timeout.
// A cut attempt is a transport error like a reset connection, retried by
// the policy for the calls that may be repeated; only the call's own
// context ends the retries.
type attemptTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

// errAttemptCut is the cause attemptTransport cancels an attempt with.
var errAttemptCut = errors.New("attempt timeout")

type streamingKey struct{}

// streaming marks ctx as a download's: the attempt timeout bounds the
// gaps between bytes, not the whole body.
func streaming(ctx context.Context) context.Context {
	return context.WithValue(ctx, streamingKey{}, true)
}

func (t *attemptTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	timeout := t.timeout
	if o := callOptionsFrom(parent); o != nil && o.attemptTimeout != nil {
		timeout = *o.attemptTimeout
	}
	if timeout <= 0 {
		return t.next.RoundTrip(req)
	}
	t = &attemptTransport{next: t.next, timeout: timeout}
	ctx, cancel := context.WithCancelCause(parent)
	timer := time.AfterFunc(t.timeout, func() { cancel(errAttemptCut) })
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		if context.Cause(ctx) == errAttemptCut && parent.Err() == nil {
			err = &attemptTimeoutError{what: fmt.Sprintf("no response within the attempt timeout of %s (WithAttemptTimeout)", t.timeout)}
		}
		cancel(nil)
		return nil, err
	}
	idle, _ := parent.Value(streamingKey{}).(bool)
	if idle {
		timer.Reset(t.timeout)
	}
	resp.Body = &attemptBody{rc: resp.Body, ctx: ctx, parent: parent, cancel: cancel, timer: timer, idle: idle, timeout: t.timeout}
	return resp, nil
}

// attemptBody is the body of an attempt under a timeout: closing it (or
// reading it to the end) stops the timer; a read cut by the timer fails
// with an attemptTimeoutError.
type attemptBody struct {
	rc      io.ReadCloser
	ctx     context.Context
	parent  context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	idle    bool
	timeout time.Duration
}

func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.idle {
		b.timer.Reset(b.timeout)
	}
	if err != nil && err != io.EOF && context.Cause(b.ctx) == errAttemptCut && b.parent.Err() == nil {
		what := fmt.Sprintf("the response body stalled past the attempt timeout of %s (WithAttemptTimeout)", b.timeout)
		if b.idle {
			what = fmt.Sprintf("no byte of the response body for the attempt timeout of %s (WithAttemptTimeout)", b.timeout)
		}
		err = &attemptTimeoutError{what: what, body: true}
	}
	return n, err
}

func (b *attemptBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// attemptTimeoutError is an attempt cut by a per-attempt timeout: the
// SDK's (WithAttemptTimeout), the http.Client's Timeout or the transport's
// ResponseHeaderTimeout, while the call's own context was still live. It
// is a net.Error whose Timeout is true; it does not match
// context.DeadlineExceeded, which only the caller's context produces.
type attemptTimeoutError struct {
	what string
	body bool // cut while reading the body: the body ended early
}

func (e *attemptTimeoutError) Error() string   { return "attempt timed out: " + e.what }
func (e *attemptTimeoutError) Timeout() bool   { return true }
func (e *attemptTimeoutError) Temporary() bool { return true }

// Is makes a body cut by the timeout read as a body that ended early.
func (e *attemptTimeoutError) Is(target error) bool { return e.body && target == io.ErrUnexpectedEOF }

// attemptTimeout rewords an error of one attempt that matches
// context.DeadlineExceeded although it is not the call's context's (the
// caller checks that first): the http.Client's Timeout or the transport's
// ResponseHeaderTimeout cut the attempt. Other errors are returned as they
// are.
func attemptTimeout(err error) error {
	if err == nil || err == context.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, retry.ErrNoRetry) { // the rate limiter's: the call's deadline
		return err
	}
	var at *attemptTimeoutError
	if errors.As(err, &at) {
		return at
	}
	msg := err.Error()
	what := "the attempt's own timeout passed"
	switch {
	case strings.Contains(msg, "Client.Timeout exceeded while awaiting headers"):
		what = "no response headers within the http.Client's Timeout"
	case strings.Contains(msg, "timeout awaiting response headers"):
		what = "no response headers within the transport's ResponseHeaderTimeout"
	case strings.Contains(msg, "Client.Timeout"):
		what = "the response body did not finish within the http.Client's Timeout"
		return &attemptTimeoutError{what: what, body: true}
	}
	return &attemptTimeoutError{what: what}
}
