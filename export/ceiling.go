package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// probeLimit is the Limit of the first ceiling probe: 2^53-1, the largest
// integer JSON carries exactly, far above any row ceiling. The reference
// says limit "must be at or below the row ceiling", so the service refuses
// the submit before any job starts.
const probeLimit = 1<<53 - 1

// cancelWait bounds the cancel of an accepted probe, which runs even when
// the caller's context has ended.
const cancelWait = 30 * time.Second

// ceiling is what a probe learned.
type ceiling struct {
	rows int64
	from string
	note string // something the caller should know (an accepted probe)
}

// learnCeiling asks the service for the row ceiling of one delivery
// without starting a job: first a submit with an impossible Limit (a 400
// whose body carries maxRows), then, when that body does not say, a submit
// of the whole query (400 delivery_exceeds_max_rows or 403
// entitlement_missing, both with maxRows). A probe the service accepts is
// cancelled at once; its handle's maxRows is the ceiling.
func learnCeiling[T any](ctx context.Context, src Source[T], base *lendgraph.DeliveryRequest) (ceiling, error) {
	probe := *base
	probe.Limit = probeLimit
	c, err := probeOnce(ctx, src, &probe)
	if err != nil || c.rows > 0 {
		return c, err
	}
	probe.Limit = 0
	if c, err = probeOnce(ctx, src, &probe); err != nil || c.rows > 0 {
		return c, err
	}
	return c, errors.New("export: the service did not say its row ceiling for one delivery; give it with PlanOptions.MaxRows")
}

// Waits of a probe refused with 429 or 502 (see deliverPatiently).
const (
	probeBackoff    = time.Second
	probeBackoffMax = time.Minute
	// probeLaunchRounds bounds the rounds of 502s a probe waits out: a
	// service that never launches a job is an error, not a wait forever.
	probeLaunchRounds = 6
)

// deliverPatiently submits a probe and, while the service refuses it with
// 429 or 502 (after the client's own retries ran out), waits and submits
// it again: a 429 started nothing, nor did a 502 (the reference calls it a
// job that failed to launch, safe to retry), and planning has no reason to
// give up on a busy service. It waits as long as the answer's Retry-After
// asks (probeWait); 429s until ctx ends, 502s for probeLaunchRounds rounds.
func deliverPatiently[T any](ctx context.Context, src Source[T], probe *lendgraph.DeliveryRequest) (*lendgraph.DeliveryJob[T], error) {
	launch := 0
	for attempt := 0; ; attempt++ {
		job, err := src.Deliver(ctx, probe)
		var api *lendgraph.APIError
		if err == nil || !errors.As(err, &api) {
			return job, err
		}
		switch {
		case api.StatusCode == http.StatusTooManyRequests:
		case api.StatusCode == http.StatusBadGateway && launch < probeLaunchRounds:
			launch++
		default:
			return job, err
		}
		t := time.NewTimer(probeWait(err, attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (while waiting out a %d: %v)", context.Cause(ctx), api.StatusCode, err)
		}
	}
}

// probeWait is the wait before the next probe after a 429 or a 502: the
// answer's Retry-After when it gave one, else probeBackoff doubled each
// time up to probeBackoffMax.
func probeWait(err error, attempt int) time.Duration {
	var rl *lendgraph.RateLimitError
	if errors.As(err, &rl) && rl.RetryAfter > 0 {
		return rl.RetryAfter
	}
	return min(probeBackoff<<min(attempt, 10), probeBackoffMax)
}

// probeOnce submits one probe. A refusal that names no ceiling gives a
// zero ceiling and no error.
func probeOnce[T any](ctx context.Context, src Source[T], probe *lendgraph.DeliveryRequest) (ceiling, error) {
	job, err := deliverPatiently(ctx, src, probe)
	if err == nil {
		return cancelProbe(ctx, job)
	}
	var (
		mr  *lendgraph.MaxRowsError
		ent *lendgraph.EntitlementError
		ice *lendgraph.InsufficientCreditsError
		api *lendgraph.APIError
	)
	switch {
	case errors.As(err, &mr) && mr.MaxRows > 0:
		return ceiling{rows: mr.MaxRows, from: "delivery_exceeds_max_rows"}, nil
	case errors.As(err, &ent) && ent.MaxRows > 0:
		return ceiling{rows: ent.MaxRows, from: "entitlement_missing"}, nil
	case errors.As(err, &ice):
		return ceiling{}, fmt.Errorf("export: learning the row ceiling: %w (the balance does not cover the whole export; give the ceiling with PlanOptions.MaxRows to plan anyway)", err)
	case errors.As(err, &api) && api.StatusCode == http.StatusBadRequest:
		var body struct {
			MaxRows int64 `json:"maxRows"`
		}
		if json.Unmarshal(api.Body, &body) == nil && body.MaxRows > 0 {
			return ceiling{rows: body.MaxRows, from: "limit validation"}, nil
		}
		return ceiling{}, nil
	}
	return ceiling{}, fmt.Errorf("export: learning the row ceiling: %w (give the ceiling with PlanOptions.MaxRows to skip the probe)", err)
}

// cancelProbe cancels a probe the service accepted, before it can complete
// and be charged, and reads the ceiling from its handle.
func cancelProbe[T any](ctx context.Context, job *lendgraph.DeliveryJob[T]) (ceiling, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	c := ceiling{rows: job.MaxRows, from: "job handle",
		note: fmt.Sprintf("the service accepted the ceiling probe (job %s: the whole query fits in one delivery); it was cancelled at once, and cancelled jobs are not charged", job.ID)}
	if _, err := job.Cancel(cctx); err != nil {
		if errors.Is(err, lendgraph.ErrJobFinished) {
			c.note = fmt.Sprintf("the service accepted the ceiling probe (job %s) and it completed before it could be cancelled: it is charged like any delivery", job.ID)
		} else {
			return ceiling{}, fmt.Errorf("export: the service accepted the ceiling probe (job %s) and cancelling it failed: %w; cancel it yourself, or it is charged when it completes", job.ID, err)
		}
	}
	return c, nil
}
