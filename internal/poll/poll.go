// Package poll is the one polling loop behind every job's Wait: the first
// poll at once, then an interval that grows from Initial to Max, a longer
// wait when the server asks for one, an earlier poll when the work is
// expected to finish sooner, and an immediate stop when the context ends.
package poll

import (
	"context"
	"time"
)

// Config is the interval schedule.
type Config struct {
	// Initial is the wait after the first poll.
	Initial time.Duration
	// Max bounds the wait between polls; at steady state the loop polls
	// once per Max, so a finished job is noticed within Max.
	Max time.Duration
	// Factor multiplies the wait after each poll (at least 1).
	Factor float64
}

// Default polls promptly and settles at one request a second:
// 200ms, 320ms, 512ms, 819ms, then 1s.
var Default = Config{Initial: 200 * time.Millisecond, Max: time.Second, Factor: 1.6}

// next is the interval after cur.
func (c Config) next(cur time.Duration) time.Duration {
	return min(time.Duration(float64(cur)*max(c.Factor, 1)), c.Max)
}

// Hint adjusts the wait before the next poll.
type Hint struct {
	// AtLeast lengthens the wait (a server's Retry-After); it wins over
	// everything else.
	AtLeast time.Duration
	// AtMost shortens the wait when positive (the work is expected to
	// finish by then); it never makes the loop poll more often than
	// MinEarly allows.
	AtMost time.Duration
}

// MinEarly is the shortest wait an AtMost hint can ask for.
const MinEarly = 50 * time.Millisecond

// Until calls fetch until it reports done, returns an error, or ctx ends.
// The first call is immediate; then the wait is the schedule's interval,
// adjusted by the hint fetch returns. No goroutine outlives the call.
func Until(ctx context.Context, cfg Config, fetch func(ctx context.Context) (done bool, h Hint, err error)) error {
	interval := cfg.Initial
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, h, err := fetch(ctx)
		if err != nil || done {
			return err
		}
		wait := interval
		if h.AtMost > 0 {
			wait = min(wait, max(h.AtMost, MinEarly))
		}
		wait = max(wait, h.AtLeast)
		interval = cfg.next(interval)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// ETA estimates when work that reports done of total units will finish,
// from the progress between two polls. The zero value is ready to use.
type ETA struct {
	at   time.Time
	done int64
}

// Observe records a poll's progress and returns the expected time to
// completion, or zero when there is no estimate yet (first sample, no
// progress, unknown total, or nothing left).
func (e *ETA) Observe(now time.Time, done, total int64) time.Duration {
	prevAt, prevDone := e.at, e.done
	e.at, e.done = now, done
	if prevAt.IsZero() || done <= prevDone || total <= done || !now.After(prevAt) {
		return 0
	}
	perUnit := float64(now.Sub(prevAt)) / float64(done-prevDone)
	return time.Duration(perUnit * float64(total-done))
}
