package lendgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lendgraph/lendgraph-go/internal/leakcheck"

	lendgraph "github.com/lendgraph/lendgraph-go"
	"github.com/lendgraph/lendgraph-go/lendgraphtest"
)

func newMeter(host string) *meter {
	return &meter{next: http.DefaultTransport.(*http.Transport).Clone(), host: host}
}

// parallelClient is a client of srv whose downloads use conns connections
// and parts of partSize, with its storage traffic metered.
func parallelClient(srv *lendgraphtest.Server, conns int) (*lendgraph.Client, *meter) {
	m := newMeter(strings.TrimPrefix(srv.StorageURL(), "http://"))
	c := srv.Client(lendgraph.WithDownloadConnections(conns), lendgraph.WithHTTPClient(&http.Client{Transport: m}))
	lendgraph.SetDownloadPartSize(c, partSize)
	return c, m
}

func largeDelivery(t *testing.T, srv *lendgraphtest.Server, c *lendgraph.Client, f lendgraph.Format) (*lendgraph.DeliveryJob[lendgraph.Agent], *lendgraph.DeliveryStatus) {
	t.Helper()
	srv.SetEntitlement(lendgraphtest.DefaultOrg, "agents", lendgraphtest.Entitlement{MaxRows: 100_000})
	job, st := deliver(t, c, &lendgraph.DeliveryRequest{Format: f})
	if st.Bytes < 4*partSize {
		t.Fatalf("delivery of %d bytes: too small for the test", st.Bytes)
	}
	return job, st
}

func TestParallelDownloadIsByteExact(t *testing.T) {
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
		// Download reads in order: parts of half the file part size.
		if err := askedParts(ranges, st.Bytes, partSize/2); err != nil || maxFly < 2 || maxFly > 4 {
			t.Fatalf("%s: %v; at most %d requests at once (want 2-4)", f, err, maxFly)
		}
		// Rows decodes the same rows from the parallel stream (parquet: from
		// the file the parts were written into).
		if a, b := collect(t, jobRows(ctx, one.Agents.DeliveryJob(job.ID), f)), collect(t, jobRows(ctx, job, f)); len(a) != 3000 || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: rows differ (%d over one connection, %d in parallel)", f, len(a), len(b))
		}
	}
}

func TestParallelDownloadRefreshesAnExpiredLinkOnce(t *testing.T) {
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

func TestParallelDownloadStopsCleanly(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	c, _ := parallelClient(srv, 4)
	opts := append([]leakcheck.Option{leakcheck.IgnoreCurrent()}, httpIdle...)
	for _, f := range allFormats {
		job, _ := largeDelivery(t, srv, c, f)
		n := 0
		for _, err := range jobRows(context.Background(), job, f) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 10 {
				break
			}
		}
		if err := leakcheck.Find(opts...); err != nil {
			t.Fatalf("%s: break left goroutines: %v", f, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n = 0
		var last error
		for _, err := range jobRows(ctx, job, f) {
			if n++; n == 5 {
				cancel()
			}
			last = err
		}
		cancel()
		if !errors.Is(last, context.Canceled) || n != 6 {
			t.Fatalf("%s: after cancel: %v (%d rows)", f, last, n)
		}
		if err := leakcheck.Find(opts...); err != nil {
			t.Fatalf("%s: cancel left goroutines: %v", f, err)
		}
		// A writer that fails stops the download with its error.
		_, err := job.Download(context.Background(), failingWriter{})
		var de *lendgraph.DownloadError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("%s: failing writer: %v", f, err)
		}
		if err := leakcheck.Find(opts...); err != nil {
			t.Fatalf("%s: failed writer left goroutines: %v", f, err)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) {
	return 0, errors.New("disk full")
}

func TestDownloadFile(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	for _, conns := range []int{1, 4} {
		c, m := parallelClient(srv, conns)
		job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
		var want bytes.Buffer
		if _, err := job.Download(ctx, &want); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "agents.csv")

		// Interrupted a third of the way in: the part file and its record stay.
		m.bytes.Store(0)
		cctx, cancel := context.WithCancel(ctx)
		var calls, last atomic.Int64
		_, err := job.DownloadFile(cctx, path, lendgraph.WithDownloadProgress(func(done, total int64) {
			calls.Add(1)
			last.Store(done)
			if total != st.Bytes {
				t.Errorf("progress total %d, want %d", total, st.Bytes)
			}
			if done > st.Bytes/3 {
				cancel()
			}
		}))
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("conns=%d: interrupted DownloadFile: %v", conns, err)
		}
		var de *lendgraph.DownloadError
		if !errors.As(err, &de) || de.Written < st.Bytes/3 || de.Size != st.Bytes {
			t.Fatalf("conns=%d: %#v", conns, de)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("%s exists before the download completed", path)
		}
		meta := readMeta(t, path+".part.meta")
		if meta.Job != job.ID || meta.Size != st.Bytes || meta.ETag == "" || len(meta.Done) == 0 {
			t.Fatalf("record: %+v", meta)
		}
		first := m.bytes.Load()

		// Continued: only the missing bytes come down.
		m.bytes.Store(0)
		var resumedFrom atomic.Int64
		resumedFrom.Store(-1)
		n, err := job.DownloadFile(ctx, path, lendgraph.WithDownloadProgress(func(done, total int64) {
			resumedFrom.CompareAndSwap(-1, done)
		}))
		if err != nil || n != st.Bytes {
			t.Fatalf("conns=%d: continued DownloadFile: %d, %v", conns, n, err)
		}
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("conns=%d: the file differs from the delivery", conns)
		}
		second := m.bytes.Load()
		if second > st.Bytes-st.Bytes/3+partSize || resumedFrom.Load() < st.Bytes/3 {
			t.Fatalf("conns=%d: continued with %d bytes from storage (first run %d, file %d), progress from %d",
				conns, second, first, st.Bytes, resumedFrom.Load())
		}
		for _, left := range []string{path + ".part", path + ".part.meta", path + ".part.meta.tmp"} {
			if _, err := os.Stat(left); !os.IsNotExist(err) {
				t.Fatalf("%s left behind", left)
			}
		}
	}
}

func TestDownloadFileRefusesAnotherFilesPart(t *testing.T) {
	srv := lendgraphtest.NewServer(t, lendgraphtest.WithDefaultRows(3000))
	ctx := context.Background()
	c, m := parallelClient(srv, 4)
	job, st := largeDelivery(t, srv, c, lendgraph.FormatCSV)
	other, _ := largeDelivery(t, srv, c, lendgraph.FormatNDJSON)
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.csv")
	junk := bytes.Repeat([]byte("x"), int(st.Bytes))
	write := func(meta map[string]any) {
		t.Helper()
		b, _ := json.Marshal(meta)
		if err := os.WriteFile(path+".part.meta", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+".part", junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string) {
		t.Helper()
		m.bytes.Store(0)
		_, err := job.DownloadFile(ctx, path)
		if !errors.Is(err, lendgraph.ErrPartialMismatch) {
			t.Fatalf("%s: %v, want ErrPartialMismatch", what, err)
		}
		if b, _ := os.ReadFile(path + ".part"); !bytes.Equal(b, junk) {
			t.Fatalf("%s: the part file was written to", what)
		}
		if m.bytes.Load() > 0 {
			t.Fatalf("%s: %d bytes downloaded", what, m.bytes.Load())
		}
	}
	done := [][2]int64{{0, st.Bytes / 2}}
	write(map[string]any{"version": 1, "job": other.ID, "size": st.Bytes, "etag": `"x"`, "done": done})
	refused("another job")
	write(map[string]any{"version": 1, "job": job.ID, "size": st.Bytes + 1, "etag": `"x"`, "done": done})
	refused("another size")
	write(map[string]any{"version": 1, "job": job.ID, "size": st.Bytes, "etag": `"x"`, "done": done})
	refused("another ETag")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("a refused download created the file")
	}

	// A part file without a record (or with a record it cannot read) is
	// not this download's: it starts over.
	var want bytes.Buffer
	if _, err := job.Download(ctx, &want); err != nil {
		t.Fatal(err)
	}
	for _, meta := range []string{"", "{not json", `{"version":99}`} {
		_ = os.Remove(path + ".part.meta")
		if meta != "" {
			_ = os.WriteFile(path+".part.meta", []byte(meta), 0o644)
		}
		_ = os.WriteFile(path+".part", junk, 0o644)
		if n, err := job.DownloadFile(ctx, path); err != nil || n != st.Bytes {
			t.Fatalf("record %q: %d, %v", meta, n, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("record %q: the file differs", meta)
		}
	}
	if _, err := job.DownloadFile(ctx, ""); err == nil {
		t.Fatal("an empty path was accepted")
	}
}
