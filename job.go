package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/poll"
	"github.com/lendgraph/lendgraph-go/internal/retry"
)

// JobState is the state of a bulk enrichment or bulk delivery job. Values the
// SDK does not know yet are kept as sent and count as still running.
type JobState string

// Job states.
const (
	JobQueued    JobState = "queued"
	JobRunning   JobState = "running"
	JobCompleted JobState = "completed"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// Terminal reports whether the state is final: completed, failed or cancelled.
func (s JobState) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// SignedURL is a signed download link. Its signature is a credential of its
// own, so String and GoString print it without the query string; use
// Reveal to read the whole link.
type SignedURL string

// Reveal returns the complete link, signature included.
func (u SignedURL) Reveal() string { return string(u) }

// String returns the link without its query string.
func (u SignedURL) String() string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(string(u))
	if err != nil {
		return "[unparseable signed link]"
	}
	if p.RawQuery != "" {
		p.RawQuery = "REDACTED"
	}
	return p.String()
}

// GoString is String.
func (u SignedURL) GoString() string { return u.String() }

// LogValue keeps the signature out of slog output (a JSON handler would
// otherwise print the string as it is).
func (u SignedURL) LogValue() slog.Value { return slog.StringValue(u.String()) }

// WaitOption configures Wait on either job kind.
type WaitOption func(*waitConfig)

type waitConfig struct {
	progress any // func(*EnrichJobStatus) or func(*DeliveryStatus)
	poll     poll.Config
}

// jobStatus lists the status records WithProgress accepts.
type jobStatus interface {
	EnrichJobStatus | DeliveryStatus
}

// WithProgress calls fn with every status record Wait fetches, the last one
// included. fn runs on the waiting goroutine; keep it quick.
func WithProgress[S jobStatus](fn func(*S)) WaitOption {
	return func(c *waitConfig) { c.progress = fn }
}

// WithPollInterval sets the first wait between status fetches and the bound
// it backs off to (defaults: 200ms growing to 1s).
func WithPollInterval(initial, max time.Duration) WaitOption {
	return func(c *waitConfig) {
		c.poll.Initial = initial
		c.poll.Max = max
	}
}

// job is what both job kinds share: where their status lives and who owns it.
type job struct {
	client *Client
	kind   string // "enrichment" or "delivery", for errors
	path   string // status and cancel path
	id     string
}

func (j job) status(ctx context.Context, out any) error {
	if j.id == "" {
		return invalidArg("id", "the %s job id is empty", j.kind)
	}
	_, err := j.client.send(ctx, request{method: http.MethodGet, path: j.path, kind: retry.Idempotent}, out)
	return err
}

// cancel deletes the job. Repeating a DELETE cannot act twice: a second one
// answers 409 and changes nothing. When that 409 answers a retry (an
// earlier attempt may have cancelled the job before its answer was lost),
// the job's status decides: cancelled is the success the caller asked for.
func (j job) cancel(ctx context.Context, out interface{ jobState() JobState }) error {
	if j.id == "" {
		return invalidArg("id", "the %s job id is empty", j.kind)
	}
	if err := checkCtx(ctx); err != nil {
		return err
	}
	actx, sent := countAttempts(ctx)
	_, err := j.client.send(actx, request{method: http.MethodDelete, path: j.path, kind: retry.Idempotent}, out)
	if errors.Is(err, ErrJobFinished) && sent.Load() > 1 {
		if serr := j.status(ctx, out); serr == nil && out.jobState() == JobCancelled {
			return nil
		}
	}
	return err
}

// waitJob polls the job until it is terminal. state extracts the status and
// error text from a record.
func waitJob[S jobStatus](ctx context.Context, j job, opts []WaitOption, state func(*S) (JobState, string)) (*S, error) {
	fetch := func(ctx context.Context) (*S, error) {
		var st S
		if err := j.status(ctx, &st); err != nil {
			return nil, err
		}
		return &st, nil
	}
	return waitFor(ctx, j.kind, j.id, opts, fetch, state)
}

// waitFor is the polling loop behind every Wait: fetch a status record,
// show it to the progress callback, stop when state says it is terminal.
// A throttled fetch (429 that outlasted the pipeline's own retries) is not
// a failure: the loop waits for the server's Retry-After and polls again.
// A state the SDK does not know counts as running.
func waitFor[S jobStatus](ctx context.Context, kind, id string, opts []WaitOption, fetch func(context.Context) (*S, error), state func(*S) (JobState, string)) (*S, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	cfg := waitConfig{poll: poll.Default}
	for _, o := range opts {
		o(&cfg)
	}
	var progress func(*S)
	if cfg.progress != nil {
		fn, ok := cfg.progress.(func(*S))
		if !ok {
			var zero S
			return nil, invalidArg("WithProgress", "the callback takes %T, but this %s job reports *%T", cfg.progress, kind, zero)
		}
		progress = fn
	}
	if cfg.poll.Initial <= 0 || cfg.poll.Max < cfg.poll.Initial {
		return nil, invalidArg("WithPollInterval", "need 0 < initial <= max, got %s and %s", cfg.poll.Initial, cfg.poll.Max)
	}
	var last *S
	var eta poll.ETA
	err := poll.Until(ctx, cfg.poll, func(ctx context.Context) (bool, poll.Hint, error) {
		st, err := fetch(ctx)
		if err != nil {
			var rl *RateLimitError
			if errors.As(err, &rl) && ctx.Err() == nil {
				// Throttled polling is not a failed job: wait as asked and poll again.
				return false, poll.Hint{AtLeast: max(rl.RetryAfter, cfg.poll.Max)}, nil
			}
			return false, poll.Hint{}, err
		}
		last = st
		if progress != nil {
			progress(st)
		}
		s, _ := state(st)
		if s.Terminal() {
			return true, poll.Hint{}, nil
		}
		// When the rows done so far say the job ends before the next
		// scheduled poll, poll shortly after that instead.
		var h poll.Hint
		if p, ok := any(st).(interface{ jobProgress() (done, total int64) }); ok {
			done, total := p.jobProgress()
			if d := eta.Observe(time.Now(), done, total); d > 0 {
				h.AtMost = d + d/10 + 20*time.Millisecond
			}
		}
		return false, h, nil
	})
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return last, fmt.Errorf("lendgraph: waiting for %s job %s: %w (the job keeps running on the server; Cancel stops it)", kind, id, cerr)
		}
		return last, err
	}
	s, msg := state(last)
	if s == JobFailed || s == JobCancelled {
		return last, &JobError{Kind: kind, JobID: id, Status: string(s), Message: msg}
	}
	return last, nil
}

func (s *EnrichJobStatus) jobState() JobState { return s.Status }
func (s *DeliveryStatus) jobState() JobState  { return s.Status }

// LogValue keeps the results link's signature out of slog output (a JSON
// handler would marshal the record with the whole link).
func (s DeliveryStatus) LogValue() slog.Value {
	type record DeliveryStatus // without methods: no recursion
	s.ResultsURL = SignedURL(s.ResultsURL.String())
	return slog.AnyValue(record(s))
}

// LogValue keeps the results link's signature out of slog output.
func (s EnrichJobStatus) LogValue() slog.Value {
	type record EnrichJobStatus
	s.ResultsURL = SignedURL(s.ResultsURL.String())
	return slog.AnyValue(record(s))
}

// jobProgress reports the rows handled and the rows to handle, for the
// poller's completion estimate.
func (s *EnrichJobStatus) jobProgress() (done, total int64) {
	return s.Succeeded + s.FromCache + s.Failed, s.Total
}

// jobProgress reports the rows written and the rows expected.
func (s *DeliveryStatus) jobProgress() (done, total int64) { return s.Processed, s.EstimatedTotal }
