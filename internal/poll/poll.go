// Package poll is the one polling loop behind every job's Wait: the first
// poll at once, then an interval that grows from Initial to Max, a longer
// wait when the server asks for one, and an immediate stop when the
// context ends.
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

// Until calls fetch until it reports done, returns an error, or ctx ends.
// The first call is immediate. fetch may ask for a longer wait before the
// next call (a server's Retry-After); zero means the schedule's own
// interval. No goroutine outlives the call.
func Until(ctx context.Context, cfg Config, fetch func(ctx context.Context) (done bool, wait time.Duration, err error)) error {
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
		done, wait, err := fetch(ctx)
		if err != nil || done {
			return err
		}
		wait = max(wait, interval)
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
