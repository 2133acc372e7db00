package lendgraph_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func TestParallel_ByteExact(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	one, _ := parallelClient(srv, 1)
	c, m := parallelClient(srv, 4)
	ctx := context.Background()
	for _, f := range allFormats {
		job, st := largeDelivery(t, srv, c, f)
		var want bytes.Buffer
		if _, err := lendgraph.DeliveryJobAs[lendgraph.Agent](one.Agents.DeliveryJob(job.ID)).Download(ctx, &want); err != nil {
			t.Fatal(err)
		}
		m.ranges = nil
		var got bytes.Buffer
		n, err := job.Download(ctx, &got)
		if err != nil || n != st.Bytes || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: parallel download: %d bytes of %d, %v", f, n, st.Bytes, err)
		}
		maxFly, ranges := m.stats()
		// Download reads in order: parts of half the file part size. Four
		// connections stream at once, and as many more requests may be on
		// their way (the relay).
		if err := askedParts(ranges, st.Bytes, partSize/2); err != nil || maxFly < 2 || maxFly > 8 {
			t.Fatalf("%s: %v; at most %d requests at once (want 2-8)", f, err, maxFly)
		}
		// Rows decodes the same rows from the parallel stream (parquet: from
		// the file the parts were written into).
		a := collect(t, jobRows(ctx, one.Agents.DeliveryJob(job.ID), f))
		m.ranges = nil
		if b := collect(t, jobRows(ctx, job, f)); len(a) != 3000 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: rows differ (%d over one connection, %d in parallel)", f, len(a), len(b))
		}
		// A decoder reads in order: parts of about a quarter of a
		// connection's share (between 1/32 and 1/8 of the part size), so that
		// little is left to decode when the last byte is in. parquet.Rows
		// too: it decodes each row group once its bytes have landed.
		_, ranges = m.stats()
		if err := askedParts(ranges, st.Bytes, min(max((st.Bytes+15)/16, partSize/32), partSize/8)); err != nil {
			t.Fatalf("%s: Rows: %v", f, err)
		}
	}
}

func TestParallel_RefreshesExpiredLinkOnce(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000), lendgraphtest.WithLinkTTL(time.Minute))
	c, _ := parallelClient(srv, 4)
	ctx := context.Background()
	job, _ := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	srv.ResetRequests()
	// The link expires once the first bytes are in: every part asked for
	// afterwards meets a refused link, the four connections at once.
	expiring := &advanceOnWrite{srv: srv}
	if _, err := job.Download(ctx, expiring); err != nil || !bytes.Equal(expiring.buf.Bytes(), want.Bytes()) {
		t.Fatalf("after expiry: %v", err)
	}
	// One status fetch when the download starts, one for the fresh link:
	// not one per part or per connection.
	if n := srv.CountRequests("GET", "/v1/agents/bulk-delivery/*"); n != 2 {
		t.Fatalf("%d status fetches, want 2 (one refresh for every range)", n)
	}
}

func TestParallel_StopsCleanly(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	c, _ := parallelClient(srv, 4)
	opts := append([]goleak.Option{goleak.IgnoreCurrent()}, httpIdle...)
	for _, f := range allFormats {
		job, _ := largeDelivery(t, srv, c, f)
		stopsCleanly(t, job, f, opts)
		// A writer that fails stops the download with its error.
		_, err := job.Download(context.Background(), failingWriter{})
		var de *lendgraph.DownloadError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("%s: failing writer: %v", f, err)
		}
		if err := goleak.Find(opts...); err != nil {
			t.Fatalf("%s: failed writer left goroutines: %v", f, err)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) {
	return 0, errors.New("disk full")
}

// The schedule keeps every connection busy to the end: a connection that
// runs out of parts takes over half of what another has left, so none
// gives up while a span still has two steals' worth of bytes to come.
// One response (the first part's) stalls before its first byte until a
// connection gives up; the others must by then have taken over all but a
// sliver of its part, which the transport sees as the bytes that stalled
// response delivers. Without stealing it delivers its whole part (and the
// stall lasts until the test's safety timeout). Deterministic: the stall
// ends on the scheduler's own report, not on a timer.
func TestParallel_NoConnectionIdleWhileWorkRemains(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	probe, _ := parallelClient(srv, 1)
	job, st := largeDelivery(t, srv, probe, lendgraph.FormatCSV)
	var want bytes.Buffer
	if _, err := lendgraph.DeliveryJobAs[lendgraph.Agent](probe.Agents.DeliveryJob(job.ID)).Download(context.Background(), &want); err != nil {
		t.Fatal(err)
	}
	// Eight connections and parts of size/2: every download starts with
	// eight spans of about size/8, one a connection, all handed out at
	// once (so the stalled one holds no window buffer another part waits
	// for), and steals take at least part/32 = size/64 bytes.
	const conns = 8
	part := st.Bytes / 2
	stealMin := part / 32
	for _, tc := range []struct {
		name string
		run  func(job *lendgraph.DeliveryJob[lendgraph.Agent]) ([]byte, error)
	}{
		{"Download", func(job *lendgraph.DeliveryJob[lendgraph.Agent]) ([]byte, error) {
			var b bytes.Buffer
			_, err := job.Download(context.Background(), &b)
			return b.Bytes(), err
		}},
		{"DownloadFile", func(job *lendgraph.DeliveryJob[lendgraph.Agent]) ([]byte, error) {
			path := filepath.Join(t.TempDir(), "agents.csv")
			if _, err := job.DownloadFile(context.Background(), path); err != nil {
				return nil, err
			}
			return os.ReadFile(path)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMeter(strings.TrimPrefix(srv.StorageURL(), "http://"))
			stall := &stallFirst{next: m, host: m.host, release: make(chan struct{})}
			c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: stall}))
			lendgraph.SetDownloadPartSize(c, part)
			var mu sync.Mutex
			var idle []int64
			lendgraph.SetDownloadIdleHook(c, func(left int64) {
				mu.Lock()
				idle = append(idle, left)
				mu.Unlock()
				stall.once.Do(func() { close(stall.release) })
			})
			go func() { // the safety net of a schedule that never gives up
				select {
				case <-stall.release:
				case <-time.After(20 * time.Second):
					stall.timedOut.Store(true)
					stall.once.Do(func() { close(stall.release) })
				}
			}()
			got, err := tc.run(c.Agents.DeliveryJob(job.ID))
			if err != nil || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%d bytes of %d: %v", len(got), want.Len(), err)
			}
			stalled := stall.bytes.Load()
			if stall.timedOut.Load() || stall.stalled.Load() != 1 {
				t.Fatalf("no connection gave up within 20s (%d stalled responses)", stall.stalled.Load())
			}
			// The stalled response delivers at most what its reader had
			// claimed (one steal minimum), what was left too small to
			// split (under two), and one read past the cut.
			if limit := 3*stealMin + stallRead; stalled > limit {
				t.Fatalf("the stalled response delivered %d of its part's ~%d bytes (want <= %d): the other connections did not take it over",
					stalled, st.Bytes/conns, limit)
			}
			mu.Lock()
			defer mu.Unlock()
			_, ranges := m.stats()
			t.Logf("stalled response delivered %d bytes; %d ranged requests; connections gave up with %v bytes left elsewhere", stalled, len(ranges), idle)
		})
	}
}

// stallRead is the most a stalled response's body returns a read.
const stallRead = 512

// stallFirst holds the body of the first response to a request for the
// file's first byte until release is closed, then hands it over at most
// stallRead bytes a read, counting them.
type stallFirst struct {
	next     http.RoundTripper
	host     string
	release  chan struct{}
	once     sync.Once
	stalled  atomic.Int32
	timedOut atomic.Bool
	bytes    atomic.Int64
}

func (s *stallFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err != nil || r.URL.Host != s.host || !strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") || !s.stalled.CompareAndSwap(0, 1) {
		return resp, err
	}
	resp.Body = &stalledBody{ReadCloser: resp.Body, s: s}
	return resp, nil
}

type stalledBody struct {
	io.ReadCloser
	s *stallFirst
}

func (b *stalledBody) Read(p []byte) (int, error) {
	<-b.s.release
	n, err := b.ReadCloser.Read(p[:min(len(p), stallRead)])
	b.s.bytes.Add(int64(n))
	return n, err
}

// A connection does not sit idle while the store answers its next request:
// once a range's last bytes are due within the store's latency, the next
// range's request is sent (the relay), so more requests than connections
// are under way at moments, and never more than twice as many. Without the
// relay, the two connections here never have a third request under way.
// Rows (ranges for a decoder) and DownloadFile (ranges written in place)
// schedule their own ranges. Download's ranges wait for a free buffer of
// its window (two here, one a connection), which the reader frees only
// once it has read a whole range: its relay sends a request early only
// when a buffer is free, so only the bound is checked.
func TestParallel_RelaySendsTheNextRequestEarly(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(1200))
	c, store := parallelClient(srv, 2)
	store.latency, store.rate = 5*time.Millisecond, 128<<10
	job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	one, _ := parallelClient(srv, 1)
	var want bytes.Buffer
	if _, err := lendgraph.DeliveryJobAs[lendgraph.Agent](one.Agents.DeliveryJob(job.ID)).Download(context.Background(), &want); err != nil {
		t.Fatal(err)
	}
	rows := collect(t, jobRows(context.Background(), one.Agents.DeliveryJob(job.ID), lendgraph.FormatCSV))
	path := filepath.Join(t.TempDir(), "agents.csv")
	for _, call := range []struct {
		name  string
		early bool // a request must have been sent early
		run   func() error
	}{
		{"Download", false, func() error {
			var got bytes.Buffer
			if _, err := job.Download(context.Background(), &got); err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
				return fmt.Errorf("%v, or %d bytes unlike the %d of one connection", err, got.Len(), want.Len())
			}
			return nil
		}},
		{"Rows", true, func() error {
			if got := collect(t, jobRows(context.Background(), job, lendgraph.FormatCSV)); !reflect.DeepEqual(got, rows) {
				return fmt.Errorf("%d rows unlike the %d of one connection", len(got), len(rows))
			}
			return nil
		}},
		{"DownloadFile", true, func() error {
			if _, err := job.DownloadFile(context.Background(), path); err != nil {
				return err
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want.Bytes()) {
				return fmt.Errorf("%v, or the file differs", err)
			}
			return os.Remove(path)
		}},
	} {
		store.mu.Lock()
		store.maxFly = 0
		store.mu.Unlock()
		if err := call.run(); err != nil {
			t.Fatalf("%s of %d bytes: %v", call.name, st.Bytes, err)
		}
		if maxFly, _ := store.stats(); maxFly > 4 || call.early && maxFly < 3 {
			t.Fatalf("%s: at most %d requests under way on 2 connections, want 3 or 4", call.name, maxFly)
		}
	}
}
