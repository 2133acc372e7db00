package export

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// agentID is the i-th id of a synthetic stream ("agt_0000042").
func agentID(buf []byte, i int) string {
	buf = append(buf[:0], "agt_"...)
	s := strconv.Itoa(i)
	for range 7 - len(s) {
		buf = append(buf, '0')
	}
	return string(append(buf, s...))
}

func TestIDSetFindsDuplicatesAcrossTheSpill(t *testing.T) {
	for _, n := range []int{1000, 3 * bucketIDs} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			s := newIDSet(int64(n), t.TempDir())
			defer s.Close()
			var buf []byte
			for i := range n {
				if err := s.Add(agentID(buf, i), int32(i%7)); err != nil {
					t.Fatal(err)
				}
			}
			// Twice: one seen before any spill, one at the end; three times: one.
			for _, i := range []int{3, n - 1, 5, 5} {
				if err := s.Add(agentID(buf, i), 99); err != nil {
					t.Fatal(err)
				}
			}
			count, found, err := s.Check()
			if err != nil {
				t.Fatal(err)
			}
			if count != 3 || len(found) != 3 {
				t.Fatalf("found %d duplicates %+v; want 3", count, found)
			}
			for _, d := range found {
				i, _ := strconv.Atoi(d.id[4:])
				if d.shards != [2]int32{int32(i % 7), 99} {
					t.Errorf("%s in shards %v, want %d and 99", d.id, d.shards, i%7)
				}
			}
			if spilled := s.files != nil; spilled != (n > bucketIDs) {
				t.Errorf("spilled = %v with %d ids", spilled, n)
			}
		})
	}
}

// BenchmarkDuplicateCheck measures the duplicate check over n ids: the
// bounded set (spilled to bucket files past bucketIDs ids) against the
// floor, one map holding every id. peak-MB is the live heap where each
// peaks (after a GC), so the two compare memory as well as time.
//
//	go test -run '^$' -bench DuplicateCheck -benchmem -benchtime 1x ./export
func BenchmarkDuplicateCheck(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("bounded/ids=%d", n), func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				s := newIDSet(int64(n), b.TempDir())
				s.peak = func() { peak = max(peak, liveHeap()) }
				var buf []byte
				for i := range n {
					if err := s.Add(agentID(buf, i), int32(i%64)); err != nil {
						b.Fatal(err)
					}
					if i%(1<<21) == 0 {
						s.peak()
					}
				}
				_ = s.Add(agentID(buf, n/2), 1)
				count, _, err := s.Check()
				if err != nil || count != 1 {
					b.Fatalf("%d duplicates, %v", count, err)
				}
				_ = s.Close()
			}
			b.ReportMetric(float64(peak)/1e6, "peak-MB")
		})
		b.Run(fmt.Sprintf("one-map/ids=%d", n), func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				m := map[string]int32{}
				var buf []byte
				dups := 0
				for i := range n {
					id := agentID(buf, i)
					if _, ok := m[id]; ok {
						dups++
					}
					m[id] = int32(i % 64)
				}
				if _, ok := m[agentID(buf, n/2)]; ok {
					dups++
				}
				peak = max(peak, liveHeap())
				if dups != 1 {
					b.Fatal(dups)
				}
				runtime.KeepAlive(m)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-MB")
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
