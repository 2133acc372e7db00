package lendgraph

import (
	"strconv"
	"testing"
)

// A client reports each job's charge once, and what it remembers to do so
// stays bounded however many jobs a long-lived client waits for.
func TestChargeLog_Bounded(t *testing.T) {
	l := newChargeLog()
	if !l.first("delivery dlv_1") || l.first("delivery dlv_1") {
		t.Fatal("a job's charge is not reported exactly once")
	}
	for i := range 3 * maxChargeLog {
		l.first("delivery dlv_x" + strconv.Itoa(i))
	}
	if len(l.seen) > maxChargeLog || len(l.ring) > maxChargeLog {
		t.Fatalf("the log holds %d jobs (ring %d), more than %d", len(l.seen), len(l.ring), maxChargeLog)
	}
	// The latest jobs are still known.
	if l.first("delivery dlv_x" + strconv.Itoa(3*maxChargeLog-1)) {
		t.Fatal("the latest job was forgotten")
	}
}
