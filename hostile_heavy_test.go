//go:build !race

package lendgraph_test

// The byte-heavy hostile-server cases: gigabyte bodies and gzip bombs. The
// race detector makes reading and inflating them about 100 times slower,
// so they run only without -race (go test ./..., not go test -race ./...).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	lendgraph "github.com/lendgraph/lendgraph-go"
)

// measure runs fn and returns the peak of the live heap while it ran and
// how long it took.
func measure(fn func()) (peak uint64, took time.Duration) {
	start := time.Now()
	peak = heapPeak(fn)
	return peak, time.Since(start)
}

const mib = 1 << 20

// A 2 GiB body on an API call is cut at the 64 MiB cap with a *DecodeError;
// the server is not read to the end.
func TestHostile_TwoGiBBodyCutAtCap(t *testing.T) {
	var served atomic.Int64
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		const size = 2 << 30
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Header().Set("Content-Type", "application/json")
		head := []byte(`{"id":"`)
		w.Write(head)
		chunk := bytes.Repeat([]byte("a"), mib)
		for n := int64(len(head)); n < size; n += int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(int64(len(chunk)), size-n)]); err != nil {
				return
			}
			served.Add(int64(len(chunk)))
		}
	})
	var err error
	peak, took := measure(func() { _, err = hostileClient(t, api).Agents.Get(context.Background(), "agt_1") })
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "larger than 67108864 bytes") {
		t.Fatalf("err = %v, want *DecodeError at the 64 MiB cap", err)
	}
	if s := served.Load(); s > 256*mib {
		t.Fatalf("the server wrote %d MiB: the body was read past the cap", s/mib)
	}
	if api.total() != 1 {
		t.Fatalf("%d attempts, want 1 (an oversized body is not a cut one)", api.total())
	}
	t.Logf("2 GiB body: *DecodeError after %v, %d MiB served, peak heap %d MiB", took.Round(time.Millisecond), served.Load()/mib, peak/mib)
}

// gzipped compresses b at the best ratio.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipBomb is head, then body repeated times, then tail, each compressed
// as its own gzip member (readers go on through concatenated members): a
// file that inflates about 1000 times without compressing it all.
func gzipBomb(t *testing.T, head, body, tail []byte, times int) (file []byte, inflated int) {
	t.Helper()
	unit := gzipped(t, body)
	file = append(gzipped(t, head), bytes.Repeat(unit, times)...)
	return append(file, gzipped(t, tail)...), len(head) + times*len(body) + len(tail)
}

// A 1000x gzip bomb answering an API call (Content-Encoding: gzip, which
// Go's transport inflates) is cut at the 64 MiB cap, counted after
// inflating.
func TestHostile_GzipBombOnAPICallCutAtCap(t *testing.T) {
	body, inflated := gzipBomb(t, []byte(`{"id":"`), bytes.Repeat([]byte("a"), mib), []byte(`"}`), 128)
	api := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	var err error
	peak, took := measure(func() { _, err = hostileClient(t, api).Agents.Get(context.Background(), "agt_1") })
	var de *lendgraph.DecodeError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "larger than 67108864 bytes") {
		t.Fatalf("err = %v, want *DecodeError at the 64 MiB cap", err)
	}
	t.Logf("gzip bomb %d KiB -> %d MiB (%dx) on an API call: *DecodeError after %v, peak heap %d MiB",
		len(body)>>10, inflated/mib, inflated/len(body), took.Round(time.Millisecond), peak/mib)
}

// A delivery file that is a gzip bomb (ndjson.gz) streams every row with a
// small heap: rows are decoded while the file downloads, never held. Two
// shapes: 1000x (rows with a long run of one letter, as close to deflate's
// limit as a row gets), and 12.6 million tiny rows (11 bytes each, 515x).
func TestHostile_GzipBombDeliveryStreams(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		rows int
	}{
		{"1000x", `{"id":"a","pad":"` + strings.Repeat("a", 32_000) + `"}` + "\n", 4_000},
		{"12.6M tiny rows", `{"id":"a"}` + "\n", 12_600_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const members = 40
			file, inflated := gzipBomb(t, nil, bytes.Repeat([]byte(tc.line), tc.rows/members), nil, members)
			var api *recorder
			api = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/file" {
					w.Header().Set("Content-Length", strconv.Itoa(len(file)))
					w.Write(file)
					return
				}
				fmt.Fprintf(w, `{"jobId":"dlv_1","status":"completed","format":"ndjson","bytes":%d,"resultsUrl":%q}`, len(file), api.URL+"/file")
			})
			n := 0
			var err error
			peak, took := measure(func() {
				for a, rerr := range hostileClient(t, api).Agents.DeliveryJob("dlv_1").Rows(context.Background()) {
					if rerr != nil {
						err = rerr
						return
					}
					if a.ID != "a" {
						err = fmt.Errorf("row %d: %+v", n, a)
						return
					}
					n++
				}
			})
			if err != nil || n != tc.rows {
				t.Fatalf("%d rows, err %v; want %d", n, err, tc.rows)
			}
			// Holding the rows or the inflated file would take far more
			// than this; the bound leaves room for what other tests of the
			// package keep alive (the sample is process-wide).
			if peak > 96*mib {
				t.Fatalf("peak heap %d MiB while streaming %d MiB of rows", peak/mib, inflated/mib)
			}
			t.Logf("delivery %d KiB -> %d MiB (%dx): %d rows in %v, peak heap %d MiB",
				len(file)>>10, inflated/mib, inflated/len(file), n, took.Round(time.Millisecond), peak/mib)
		})
	}
}
