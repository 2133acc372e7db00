package lendgraph

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// secrets are the values of the link's query string: its signature and
// what goes with it, which nothing the SDK prints may repeat.
func (u SignedURL) secrets() []string {
	p, err := url.Parse(string(u))
	if err != nil {
		return nil
	}
	var out []string
	for _, vs := range p.Query() {
		out = append(out, vs...)
	}
	return out
}

// LogValue keeps the signature out of slog output (a JSON handler would
// otherwise print the string as it is).
func (u SignedURL) LogValue() slog.Value { return slog.StringValue(u.String()) }

// jobStatus lists the status records of the two job kinds.
type jobStatus interface {
	EnrichJobStatus | DeliveryStatus
}

// JobBackend serves the calls of a job handle: its status, its
// cancellation and its result file. Handles from the SDK's services talk to
// the API; NewEnrichJob and NewDeliveryJob make a handle over any other
// backend, such as the scripted doubles of lendgraphtest, so a test can run
// EnrichBulk → Wait → ResultRows or Deliver → Wait → Rows without a server.
// The handle adds what is the same for every backend: Wait's polling and
// progress, the terminal-state errors, and decoding the file.
type JobBackend[S jobStatus] interface {
	// Status returns the job's current status record.
	Status(ctx context.Context, id string) (*S, error)
	// Cancel cancels the job and returns its settled status record.
	Cancel(ctx context.Context, id string) (*S, error)
	// Open returns the result file of a completed job, as delivered (the
	// bytes Download writes: gzipped ndjson stays gzipped).
	Open(ctx context.Context, id string) (io.ReadCloser, error)
}

// job is what both job kinds share: where their status lives and who owns it.
type job struct {
	client *Client
	kind   string // "enrichment" or "delivery", for errors
	path   string // status and cancel path
	id     string
}

// usable reports why a handle cannot reach its job: one decoded from JSON
// or built as a struct literal has an ID but no client.
func (j job) usable(kind, id, attach string) error {
	if j.client == nil {
		return &InvalidArgumentError{Arg: kind + " job handle",
			Problem: fmt.Sprintf("it has no client (was it decoded from JSON or built as a struct literal?); get a usable handle for job %q with %s, or a test double with lendgraphtest", id, attach)}
	}
	if id == "" {
		return invalidArg(kind+" job id", "is empty")
	}
	return nil
}

// status fetches the job's status record into out, as a request of
// operation o.
func (j job) status(ctx context.Context, o *operation, out any) error {
	_, err := o.send(ctx, request{method: http.MethodGet, path: j.path, kind: retry.Idempotent}, out)
	return err
}

// cancel deletes the job. Repeating a DELETE cannot act twice: a second one
// answers 409 and changes nothing. When that 409 answers a retry (an
// earlier attempt may have cancelled the job before its answer was lost),
// the job's status decides: cancelled is the success the caller asked for.
func (j job) cancel(ctx context.Context, o *operation, out interface{ jobState() JobState }) error {
	resp, l, err := o.do(ctx, &request{method: http.MethodDelete, path: j.path, kind: retry.Idempotent}, out)
	if resp != nil {
		resp.Body.Close()
	}
	if errors.Is(err, ErrJobFinished) && l.n > 1 {
		if serr := j.status(ctx, o, out); serr == nil && out.jobState() == JobCancelled {
			return nil
		}
	}
	return err
}

// jobCall runs one request of a job handle as the operation name: over
// the API, or over the handle's test double (which has no client and no
// request options to apply).
func jobCall[S jobStatus](ctx context.Context, j job, double JobBackend[S], name string, opts []Option,
	api func(ctx context.Context, o *operation, out *S) error, viaDouble func(ctx context.Context, id string) (*S, error)) (*S, error) {
	if double != nil {
		if _, err := waitSettings(nil, name, opts); err != nil {
			return nil, err
		}
		return viaDouble(ctx, j.id)
	}
	ctx, o, err := j.client.begin(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	var st S
	err = api(ctx, o, &st)
	o.end(err)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// wait is Wait on a job handle: its operation, over the API or over the
// handle's test double.
func wait[S jobStatus](ctx context.Context, j job, double JobBackend[S], name string, opts []Option, progress func(*S), state func(*S) (JobState, string)) (*S, error) {
	if double != nil {
		cfg, err := waitSettings(nil, name, opts)
		if err != nil {
			return nil, err
		}
		if err := checkCtx(ctx); err != nil {
			return nil, err
		}
		return waitFor(ctx, nil, cfg, j.kind, j.id, progress, func(ctx context.Context) (*S, error) { return double.Status(ctx, j.id) }, state)
	}
	ctx, o, err := j.client.begin(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	st, err := waitIn(ctx, o, j, progress, state)
	o.end(err)
	return st, err
}

// waitIn polls job j in operation o.
func waitIn[S jobStatus](ctx context.Context, o *operation, j job, progress func(*S), state func(*S) (JobState, string)) (*S, error) {
	return waitFor(ctx, o, o.cfg, j.kind, j.id, progress, func(ctx context.Context) (*S, error) {
		var st S
		if err := j.status(ctx, o, &st); err != nil {
			return nil, err
		}
		return &st, nil
	}, state)
}

// waitSettings are the settings of a call on a job handle: its client's
// with opts, or for a test double's handle (c nil) the defaults with opts.
func waitSettings(c *Client, name string, opts []Option) (*callConfig, error) {
	if c != nil {
		return forCall(&c.defaults, name, opts)
	}
	base := defaultCallConfig()
	return forCall(&base, name, opts)
}

// waitFor is the polling loop behind every Wait: fetch a status record,
// show it to the progress callback, stop when state says it is terminal.
// A throttled fetch (429 that outlasted the pipeline's own retries) is not
// a failure: the loop waits for the server's Retry-After and polls again,
// within the call's cap on server-requested waits (WithMaxServerWait);
// a longer Retry-After ends the wait at once with the *RateLimitError.
// A state the SDK does not know counts as running. o is the Wait's
// operation (nil for a test double's handle), cfg its settings.
func waitFor[S jobStatus](ctx context.Context, o *operation, cfg *callConfig, kind, id string, progress func(*S), fetch func(context.Context) (*S, error), state func(*S) (JobState, string)) (_ *S, err error) {
	op := o.watch()
	var last *S
	defer func() {
		if err == nil && last != nil {
			op.chargedBy(kind+" "+id, last)
		}
	}()
	var eta poll.ETA
	err = poll.Until(ctx, cfg.poll, func(ctx context.Context) (bool, poll.Hint, error) {
		st, err := fetch(ctx)
		if err != nil {
			var rl *RateLimitError
			if errors.As(err, &rl) && ctx.Err() == nil {
				if refused := cfg.refuseWait(rl.APIError, rl.RetryAfter); refused != nil {
					return false, poll.Hint{}, refused
				}
				op.event(Event{Kind: EventServerWait, Reason: "poll throttled", Wait: max(rl.RetryAfter, cfg.poll.Max)})
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
		op.polled(id, s)
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
			// Say the job keeps running only when a status said it runs:
			// a wait cancelled before its first status knows nothing.
			running := ""
			if last != nil {
				if s, _ := state(last); !s.Terminal() {
					running = " (the job keeps running on the server; Cancel stops it)"
				}
			}
			return last, fmt.Errorf("lendgraph: waiting for %s job %s: %w%s", kind, id, cerr, running)
		}
		return last, err
	}
	s, msg := state(last)
	if s == JobFailed || s == JobCancelled {
		return last, &JobError{Kind: kind, JobID: id, Status: string(s), Message: msg}
	}
	return last, nil
}

// chargedBy records what a job's last status says was charged: a
// delivery's creditsCharged (absent until billing landed), an enrichment's
// chargedCount once completed. A job is charged once, however many waits
// see it completed (a Wait, then the Wait inside Download, then the one
// inside Rows), so each client reports a job's charge to its observer
// once: key names the job.
func (o *opState) chargedBy(key string, st any) {
	if o == nil {
		return
	}
	var credits float64
	switch st := st.(type) {
	case *DeliveryStatus:
		if st.CreditsCharged == nil {
			return
		}
		credits = *st.CreditsCharged
	case *EnrichJobStatus:
		if st.Status != JobCompleted {
			return
		}
		credits = float64(st.ChargedCount)
	default:
		return
	}
	if o.client.charges.first(key) {
		o.charged(credits)
	}
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
	return s.Handled(), s.Total
}

// jobProgress reports the rows written and the rows expected.
func (s *DeliveryStatus) jobProgress() (done, total int64) { return s.Processed, s.EstimatedTotal }
