package export

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// MaxConcurrency is the most shards a run works on at once
// (RunOptions.Concurrency, lendgraph export --concurrency). Each shard in
// flight holds one delivery job on the service, one status poll every few
// seconds and, once its job completes, one download of up to
// lendgraph.DefaultDownloadConnections connections streaming at once: 64
// shards are already hundreds of connections and 64 jobs queued at once on
// the service's workers, which deliver no faster for more of them. Above
// it, more concurrency only makes every submit slower.
const MaxConcurrency = 64

// MaxSubmitsInFlight is the most submits a run has in flight at once,
// whatever RunOptions.Concurrency is: a submit in flight is the one moment
// a shard can be left uncertain (its job may exist, and nobody can find
// it), so a process killed at any moment leaves at most this many shards
// uncertain. The slot is held from the record of the intent to submit
// until the job id is recorded. Concurrency bounds the shards worked on at
// once (their jobs, polls and downloads), which is where the time goes: a
// submit is answered as soon as the job is queued.
const MaxSubmitsInFlight = 2

// slowSubmit is the answer time above which a submit says the service is
// overloaded: a submit is answered as soon as the job is queued, normally
// within a second; one that took longer waited behind others (or behind
// the SDK's retries of a 429).
const slowSubmit = 5 * time.Second

// submitLimit is an AIMD limit on the submits in flight, as TCP adapts its
// window: every answer that comes quickly and without complaint raises the
// limit by 1/limit (one more submit a window of good answers, up to the
// run's concurrency); a 429, a 5xx, a lost answer or a slow one halves it
// (down to one). A decrease is counted once a window: the submits already
// in flight when it happened were sent at the old rate and do not halve
// it again.
type submitLimit struct {
	mu       sync.Mutex
	limit    float64
	max      float64
	inFlight int
	epoch    int           // bumped by every decrease
	wake     chan struct{} // closed (and replaced) when a slot may have opened
}

func newSubmitLimit(most int) *submitLimit {
	return &submitLimit{limit: float64(most), max: float64(most), wake: make(chan struct{})}
}

// acquire waits for a slot and returns the epoch to hand back to release.
func (l *submitLimit) acquire(ctx context.Context) (int, error) {
	for {
		l.mu.Lock()
		if l.inFlight < int(l.limit) {
			l.inFlight++
			e := l.epoch
			l.mu.Unlock()
			return e, nil
		}
		w := l.wake
		l.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
}

// release gives a slot back and adapts the limit to how the submit went.
func (l *submitLimit) release(epoch int, overloaded bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	switch {
	case overloaded && epoch == l.epoch:
		l.limit = max(1, l.limit/2)
		l.epoch++
	case !overloaded:
		l.limit = min(l.max, l.limit+1/l.limit)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// current is the limit now (for tests and events).
func (l *submitLimit) current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.limit)
}

// overloaded reports whether a submit's answer says the service is
// struggling: a 429 (after the SDK's own retries), a 5xx, no answer at
// all, or an answer slower than slowSubmit.
func overloaded(err error, took time.Duration) bool {
	if took >= slowSubmit || errors.Is(err, lendgraph.ErrRateLimited) {
		return true
	}
	var api *lendgraph.APIError
	if errors.As(err, &api) {
		return api.StatusCode >= 500 || api.StatusCode == http.StatusTooManyRequests
	}
	var ne net.Error
	var te *lendgraph.TransportError
	return errors.As(err, &te) || errors.As(err, &ne) || errors.Is(err, lendgraph.ErrOutcomeUnknown)
}
