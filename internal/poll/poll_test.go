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
		func(context.Context) (bool, time.Duration, error) {
			at = append(at, time.Since(start))
			if len(at) == 1 {
				return false, 30 * time.Millisecond, nil // e.g. Retry-After
			}
			return len(at) == 3, 0, nil
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
	err := Until(ctx, Config{Initial: time.Hour, Max: time.Hour}, func(context.Context) (bool, time.Duration, error) {
		n++
		cancel()
		return false, 0, nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Fatalf("err %v after %d calls", err, n)
	}
	boom := errors.New("boom")
	if err := Until(context.Background(), Default, func(context.Context) (bool, time.Duration, error) { return false, 0, boom }); err != boom {
		t.Fatalf("err %v", err)
	}
}
