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
	// once per Max.
	Max time.Duration
	// Factor multiplies the wait after each poll (at least 1).
	Factor float64
}

// Default polls promptly and settles at one request a second.
var Default = Config{Initial: 200 * time.Millisecond, Max: time.Second, Factor: 1.6}

// Until calls fetch until it reports done, returns an error, or ctx ends.
// fetch may ask for a longer wait before the next poll (a server's
// Retry-After); zero means the schedule's own interval.
func Until(ctx context.Context, cfg Config, fetch func(ctx context.Context) (done bool, wait time.Duration, err error)) error {
	if cfg.Factor < 1 {
		cfg.Factor = 1
	}
	interval := cfg.Initial
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		done, wait, err := fetch(ctx)
		if err != nil || done {
			return err
		}
		wait = max(wait, interval)
		interval = min(time.Duration(float64(interval)*cfg.Factor), cfg.Max)
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}
