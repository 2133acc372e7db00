package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestFind_ReportsALeakAndIgnoresWhatItIsTold(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	go leakyWorker(stop)
	err := Find(MaxWait(50 * time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "leakcheck.leakyWorker") {
		t.Fatalf("Find: %v", err)
	}
	if err := Find(MaxWait(50*time.Millisecond), IgnoreAnyFunction("github.com/lendgraph/lendgraph-go/internal/leakcheck.leakyWorker")); err != nil {
		t.Fatalf("ignored by function: %v", err)
	}
	if err := Find(MaxWait(50*time.Millisecond), IgnoreTopFunction("github.com/lendgraph/lendgraph-go/internal/leakcheck.leakyWorker")); err != nil {
		t.Fatalf("ignored by top function: %v", err)
	}
	if err := Find(MaxWait(50*time.Millisecond), IgnoreTopFunction("time.Sleep")); err == nil {
		t.Fatal("ignoring another top function hid the leak")
	}
}

func TestFind_WaitsForGoroutinesThatEnd(t *testing.T) {
	opt := IgnoreCurrent()
	done := make(chan struct{})
	go func() {
		time.Sleep(30 * time.Millisecond)
		close(done)
	}()
	if err := Find(opt, MaxWait(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	<-done
}

func leakyWorker(stop chan struct{}) {
	select {
	case <-stop:
	case <-time.After(time.Hour):
	}
}

func TestMain(m *testing.M) { VerifyTestMain(m) }
