package poll

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestScheduleGrowsToBound(t *testing.T) {
	var got []time.Duration
	cur := Default.Initial
	for range 6 {
		got = append(got, cur)
		cur = Default.next(cur)
	}
	want := []time.Duration{200e6, 320e6, 512e6, 819200000, time.Second, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("interval %d = %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}

func TestFirstCallImmediateAndServerWaitHonoured(t *testing.T) {
	start := time.Now()
	var at []time.Duration
	err := Until(context.Background(), Config{Initial: time.Millisecond, Max: 2 * time.Millisecond, Factor: 2},
		func(context.Context) (bool, Hint, error) {
			at = append(at, time.Since(start))
			if len(at) == 1 {
				return false, Hint{AtLeast: 30 * time.Millisecond}, nil // e.g. Retry-After
			}
			return len(at) == 3, Hint{}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if at[1]-at[0] < 30*time.Millisecond {
		t.Fatalf("second call after %v, want >= 30ms (the asked wait)", at[1]-at[0])
	}
	if at[0] > 20*time.Millisecond {
		t.Fatalf("first call after %v, want at once", at[0])
	}
}

func TestStopsOnContextAndError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := Until(ctx, Config{Initial: time.Hour, Max: time.Hour}, func(context.Context) (bool, Hint, error) {
		n++
		cancel()
		return false, Hint{}, nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("err %v after %d calls", err, n)
	}
	boom := errors.New("boom")
	if err := Until(context.Background(), Default, func(context.Context) (bool, Hint, error) { return false, Hint{}, boom }); err != boom {
		t.Fatalf("err %v", err)
	}
}

func TestEarlyHintShortensButNotBelowFloor(t *testing.T) {
	start := time.Now()
	var at []time.Duration
	err := Until(context.Background(), Config{Initial: time.Hour, Max: time.Hour}, func(context.Context) (bool, Hint, error) {
		at = append(at, time.Since(start))
		return len(at) == 2, Hint{AtMost: time.Nanosecond}, nil
	})
	if err != nil || at[1]-at[0] < MinEarly {
		t.Fatalf("err %v, early poll after %v, want >= %v", err, at[1]-at[0], MinEarly)
	}
}

func TestETA(t *testing.T) {
	var e ETA
	t0 := time.Unix(0, 0)
	if d := e.Observe(t0, 100, 1000); d != 0 {
		t.Fatalf("first sample gave %v", d)
	}
	if d := e.Observe(t0.Add(time.Second), 200, 1000); d != 8*time.Second {
		t.Fatalf("eta %v, want 8s", d)
	}
	if d := e.Observe(t0.Add(2*time.Second), 200, 1000); d != 0 {
		t.Fatalf("no progress gave %v", d)
	}
	if d := e.Observe(t0.Add(3*time.Second), 1000, 1000); d != 0 {
		t.Fatalf("nothing left gave %v", d)
	}
}
